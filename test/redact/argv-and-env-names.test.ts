/**
 * Secrets in an argument vector (`["--password", "…"]`, as an MCP server's `args` holds them) and under environment
 * variable names that run the secret word into another (`PGPASSWORD`) or qualify a short one (`DB_PASS`, `MYSQL_PWD`):
 * audit-interop F1, a literal password in an MCP server's `args` and `env` reached the recorded flow config.
 */
import { describe, expect, it } from 'vitest';
import { isSecretKey, redact, redactConfig, redactorFor } from '../../src/index.js';
import { maskSecrets } from '../../src/serialization/secrets.js';

const SECRET = 'hunter2-Correct-Horse';

describe('secret names of environment variables', () => {
  it.each(['PGPASSWORD', 'MYSQL_PWD', 'DB_PASS', 'smtpPass', 'mysqlRootPassword', 'REDIS_PASSWD', 'pw', 'PW', 'adminPw', 'DB_PW'])('%s is secret-named', (name) => {
    expect(isSecretKey(name)).toBe(true);
  });
  it.each(['pwd', 'PWD', 'OLDPWD', 'pass', 'bypass', 'passed', 'compass', 'passes', 'auth', 'basicAuth', 'pwr', 'pwm'])('%s is not', (name) => {
    expect(isSecretKey(name)).toBe(false);
  });
});

describe('secret words run into the word before them (lower-case JSON)', () => {
  it.each(['identitytoken', 'registrytoken', 'accesstoken', 'refreshtoken', 'authtoken', 'idtoken', 'clientsecret', 'webhooksecret', 'awscredentials', 'sshpassphrase', 'sessioncookie', 'privatekey', 'accesskey', 'secretkey', 'signingkeys', 'ACCESSTOKEN'])(
    '%s is secret-named',
    (name) => {
      expect(isSecretKey(name)).toBe(true);
    },
  );
  it.each(['maxtoken', 'eostoken', 'tokenizer', 'secretary', 'monkey', 'hotkey', 'turnkey', 'keyboard', 'cookiejar', 'credentialsfile', 'hotkeys', 'sessionkey'])('%s is not', (name) => {
    expect(isSecretKey(name)).toBe(false);
  });
  it("blanks a registry's identity token in a Docker config.json, keeping the registry and the other settings", () => {
    const config = { auths: { 'registry.example.com': { identitytoken: SECRET }, 'ghcr.io': { registrytoken: SECRET } }, credsStore: 'desktop' };
    expect(redact(config).value).toEqual({ auths: { 'registry.example.com': { identitytoken: '[REDACTED]' }, 'ghcr.io': { registrytoken: '[REDACTED]' } }, credsStore: 'desktop' });
    expect(JSON.stringify(redact(JSON.stringify(config)).value)).not.toContain(SECRET);
  });
});

describe('a key named pw', () => {
  it('blanks a password under pw in values, in text and in an argument vector; a value under auth is checked as text', () => {
    expect(redact({ user: 'alice', pw: SECRET, auth: 'none' }).value).toEqual({ user: 'alice', pw: '[REDACTED]', auth: 'none' });
    expect(redact(`login user=alice pw=${SECRET} ok`).value).toBe('login user=alice pw=[REDACTED] ok');
    expect(redact(['--pw', SECRET, '--verbose']).value).toEqual(['--pw', '[REDACTED]', '--verbose']);
    expect(redact({ auth: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U' }).value).toEqual({ auth: 'Bearer [REDACTED]' });
  });
});

describe('argument vectors', () => {
  it('blanks the element after a secret-named option, and nothing else', () => {
    const args = ['srv.mjs', '--password', SECRET, '--port', '8080', '-p', 'x', '--api-key', 'k-123', '-token', 't-456', '--verbose'];
    expect(redact(args).value).toEqual(['srv.mjs', '--password', '[REDACTED]', '--port', '8080', '-p', 'x', '--api-key', '[REDACTED]', '-token', '[REDACTED]', '--verbose']);
  });
  it('a command line in one string is redacted the same way', () => {
    expect(redact(`node srv.mjs --pass ${SECRET} --db-password ${SECRET} --port 8080`).value).toBe('node srv.mjs --pass [REDACTED] --db-password [REDACTED] --port 8080');
  });
  it('leaves an option that follows a secret-named option alone (it takes no value there)', () => {
    expect(redact(['--password', '--dry-run', 'file']).value).toEqual(['--password', '--dry-run', 'file']);
  });
  it('an MCP server declaration written with literal secrets is recorded without them', () => {
    const config = {
      version: '2.0.0',
      namespace: 'm',
      nodes: [
        {
          type: 'AgentNode',
          id: 'agent',
          params: {
            mcpServers: [{ name: 'a', transport: 'stdio', command: 'node', args: ['srv.mjs', '--password', SECRET], env: { PGPASSWORD: SECRET, DB_PASS: SECRET, MYSQL_PWD: SECRET, LOG_LEVEL: 'debug' } }],
          },
        },
      ],
    };
    const recorded = JSON.stringify(redactConfig(redactorFor(undefined), config));
    expect(recorded).not.toContain(SECRET);
    expect(recorded).toContain('"LOG_LEVEL":"debug"');
    expect(recorded).toContain('"args":["srv.mjs","--password","[REDACTED]"]');
  });

  it('exportFlow masks the same: an argv value after a secret-named option, env values under secret names', () => {
    const params = { mcpServers: [{ name: 'a', command: 'node', args: ['srv.mjs', '--pass', SECRET, '--db-password', SECRET, '--port', '1'], env: { DB_PASS: SECRET, PGPASSWORD: SECRET, HOME: '/home/a' } }] };
    const masked = JSON.stringify(maskSecrets(params));
    expect(masked).not.toContain(SECRET);
    expect(masked).toContain('"args":["srv.mjs","--pass","***","--db-password","***","--port","1"]');
    expect(masked).toContain('"HOME":"/home/a"');
  });
});
