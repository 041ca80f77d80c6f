/**
 * Where a secret sits in a text must not decide whether it is redacted: right after a word character and `_`
 * (`OPENAI_sk-proj-…`, an object key `k_sk-…`), inside a URL, in JSON quoted inside a string (`{\"password\":\"…\"}`),
 * on a command line (`--password …`), and a URL password holding `/` or `@`. And the fix must not redact ordinary
 * text: identifiers, paths, URLs without credentials, command lines without secrets, prose.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BackpackNode, Flow, runFlow, type BackpackHandle } from '../../src/index.js';
import { attachOpenTelemetry, type OtelAttributes, type OtelSpan, type OtelTracer } from '../../src/events/index.js';
import { standsApart } from '../../src/redact/boundary.js';
import { DEFAULT_SECRET_PATTERNS, REDACTED, redact, redactorFor } from '../../src/redact/index.js';
import { trials } from '../support/soak.js';
import { tempDir } from '../store/helpers.js';
import { CATALOGUE_CASES, secretsIn, tokensOf } from './catalogue-boundaries-support.js';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const redactor = redactorFor();
/** The patterns with a vendor prefix (a gate). */
const GATED = DEFAULT_SECRET_PATTERNS.filter((p) => p.gate !== undefined);

/** Characters that end a word and start a secret: `_`, punctuation, blanks, quotes (also JSON-escaped), URL parts. */
const JOINERS = ['_', '-', '.', ' ', '\n', '\t', '"', "'", '`', '\\"', ':', '=', '(', '[', '{', '<', ',', ';', '/', '@', '|', '&', '?', '#'];
const word = fc.stringMatching(/^[A-Za-z0-9_]{0,8}$/);
const joiner = fc.constantFrom(...JOINERS);
/** What precedes a secret: a word and a joiner (`OPENAI_`, `k_`, `x.`), a URL or JSON quoted inside a string, or nothing. */
const before = fc.oneof(
  fc.tuple(word, joiner).map(([w, j]) => ({ text: w + j, joiner: j })),
  fc.constantFrom('https://example.com/a?next=', 'https://example.com/', '"{\\"note\\":\\"', 'Authorization: ', 'ran: cli ', '').map((text) => ({ text, joiner: text.slice(-1) })),
);
/** What follows it: a joiner and a word, the end of quoted JSON, a URL's path, query or fragment, or nothing. */
const after = fc.oneof(
  fc.tuple(joiner, word).map(([j, w]) => ({ text: j + w, joiner: j })),
  fc.constantFrom('\\"}"', '/path', '?x=1', '#top', ')', '.', ',', '&y=2', '').map((text) => ({ text, joiner: text[0] ?? '' })),
);

/**
 * Joiners that belong to a format's own alphabet, so the secret and its neighbour are one token of another shape: the
 * AWS secret key is exactly 40 characters of `[A-Za-z0-9/+]` (`=` is base64 padding); `/abc` after it makes 44. So is a
 * private key in base64.
 */
const PART_OF: Record<string, string> = { 'pattern aws-secret-access-key': '/+=', 'pattern private-key-base64': '/+=' };

/** The secret part of a standalone token of `format`: its `secret` group or the whole match; undefined when it is not one. */
function secretOf(token: string, format: (typeof CATALOGUE_CASES)[number]): string | undefined {
  const { regex, accept } = format.pattern;
  const whole = new RegExp(regex.source, regex.flags.replace('g', ''));
  const m = whole.exec(token);
  if (m === null || m.index !== 0 || m[0].length !== token.length || (accept !== undefined && !accept(m[0], ''))) return undefined;
  return m.groups?.['secret'] ?? m[0];
}

/** Every run of `size` characters of `secret` found in `out` but not in the text that is not secret (`kept`). */
function survivingParts(secret: string, out: string, kept: string, size: number): string[] {
  const parts: string[] = [];
  for (let i = 0; i + size <= secret.length; i++) {
    const part = secret.slice(i, i + size);
    if (out.includes(part) && !kept.includes(part)) parts.push(part);
  }
  return parts;
}

describe('a secret is redacted whatever precedes and follows it (property)', () => {
  it.each(CATALOGUE_CASES)('$name', (format) => {
    const own = PART_OF[format.name] ?? '';
    const anyCase = format.pattern.regex.flags.includes('i');
    fc.assert(
      fc.property(before, tokensOf(format), after, fc.boolean(), (pre, generated, post, upper) => {
        const token = anyCase && upper ? generated.toUpperCase() : generated;
        const secret = secretOf(token, format);
        // A secret of backslashes and quotes only (`token=\\\"`) is no secret; one ending with a backslash, before an
        // escaped quote (`pwd:ab\` and `\"`), cannot be told from a value whose end is escaped.
        fc.pre(secret !== undefined && secret.length >= 3 && /[A-Za-z0-9]/.test(secret) && !secret.endsWith('\\'));
        // A token generated with another vendor's token inside it (`tk-us-…sk-…`) is left to the overlap of the two.
        fc.pre(GATED.every((p) => p === format.pattern || secretsIn(token, p).every((m) => m === token)));
        fc.pre(!own.includes(pre.joiner) && !own.includes(post.joiner));
        // By design, a lower-case token right after `_` or `-` is part of a longer word (boundary.ts).
        fc.pre(format.pattern.accept !== standsApart || standsApart(token, pre.joiner));
        const text = `${pre.text}${token}${post.text}`;
        const out = redactor.redactText(text);
        const at = token.lastIndexOf(secret!);
        // What the text keeps around the secret, the marker with it (a part of the secret that only the marker and its
        // neighbours spell, `\\"[` before `[REDACTED]`, is not a part that survived).
        const kept = [pre.text, token.slice(0, at), token.slice(at + secret!.length), post.text, `${pre.text}${token.slice(0, at)}${REDACTED}${token.slice(at + secret!.length)}${post.text}`].join('\u0000');
        expect(survivingParts(secret!, out, kept, Math.min(6, secret!.length)), `${JSON.stringify(text)} -> ${JSON.stringify(out)}`).toEqual([]);
      }),
      { numRuns: trials(60, 600) },
    );
  });
});

describe('the placements the audit found', () => {
  const OPENAI = 'sk-proj-Ab3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3kM5oQ7sU9wY1aC3';
  const GHP = 'ghp_Zq8Wm3Kt7Rx2Pv9Ly4Nc6Bh1Jd5Fs0Ga8Te3U';

  it.each([
    [`OPENAI_${OPENAI}`, `OPENAI_${REDACTED}`],
    [`x_${GHP}`, `x_${REDACTED}`],
    ['postgres://alice:Pgs3cret/W0rd@db/prod', `postgres://alice:${REDACTED}@db/prod`],
    ['postgres://alice:Pg@s3cretW0rd@db/prod', `postgres://alice:${REDACTED}@db/prod`],
    ['DSN_postgres://alice:Pg@s3/cret@db.example.com:5432/prod?ssl=1', `DSN_postgres://alice:${REDACTED}@db.example.com:5432/prod?ssl=1`],
    ['"{\\"dsn\\":\\"postgres://a:Pg/s3cret@db\\"}"', `"{\\"dsn\\":\\"postgres://a:${REDACTED}@db\\"}"`],
    ['ran: mysql -u root --password hunter2-Correct-Horse prod', `ran: mysql -u root --password ${REDACTED} prod`],
    ['x --password=hunter2-Correct-Horse --token "tok en" --api-key \'k3y\' -session-cookie c00kie', `x --password=${REDACTED} --token "${REDACTED}" --api-key '${REDACTED}' -session-cookie ${REDACTED}`],
    ['tool said "{\\"password\\":\\"hunter2-Correct-Horse\\"}"', `tool said "{\\"password\\":\\"${REDACTED}\\"}"`],
    ['{\\"password\\":\\"correct \\\\\\"horse\\\\\\" battery\\",\\"user\\":\\"bob\\"}', `{\\"password\\":\\"${REDACTED}\\",\\"user\\":\\"bob\\"}`],
    ['{"password": "correct horse battery"}', `{"password": "${REDACTED}"}`],
    [`cut at postgres://alice:Pg@s3cr…`, `cut at ${REDACTED}…`],
  ])('%j', (text, expected) => {
    expect(redactor.redactText(text)).toBe(expected);
  });

  it('an object key with a word and `_` before the secret', () => {
    expect(redactorFor().storedKey(`k_${OPENAI}`)).toMatch(/^k_\[REDACTED\] #[0-9a-f]{12}$/);
    const { value } = redact({ [`k_${OPENAI}`]: 1, note: `x_${GHP}` });
    expect(value).toEqual({ [redactorFor().storedKey(`k_${OPENAI}`)]: 1, note: `x_${REDACTED}` });
  });

  it('one-letter options are left alone (`-p` is a port to ssh and docker), and so are options not secret-named', () => {
    const text = 'mkdir -p /tmp/x && ssh -p 22 host && tool --max-tokens 100 --sort-key name --no-password --verbose';
    expect(redactor.redactText(text)).toBe(text);
  });

  it('reach neither the event log nor a span (a packed value and a retried error)', async () => {
    const secrets = {
      under: `OPENAI_${OPENAI}`,
      slash: 'postgres://alice:Pgs3cret/W0rd@db/prod',
      at: 'postgres://alice:Pg@s3cretW0rd@db/prod',
      cli: 'ran: mysql --password hunter2-Correct-Horse prod',
      escaped: 'tool said "{\\"password\\":\\"hunter2-Correct-Horse\\"}"',
    };
    const needles = ['Ab3dE5gH7jK9', 'Pgs3cret', 's3cretW0rd', 'hunter2'];
    let attempts = 0;
    class Packs extends BackpackNode {
      override post(backpack: BackpackHandle): string {
        for (const [key, value] of Object.entries(secrets)) backpack.pack(key, value);
        backpack.pack('table', { [`k_${OPENAI}`]: 1 });
        return 'next';
      }
    }
    class Retries extends BackpackNode {
      override exec(): number {
        if (attempts++ === 0) throw new Error(`${secrets.escaped} ${secrets.cli} ${secrets.at} ${secrets.slash}`);
        return attempts;
      }
    }
    const flow = new Flow({ namespace: 'boundaries' });
    flow.addNode(Packs, { id: 'packs' }).on('next', flow.addNode(Retries, { id: 'retries', maxRetries: 2 }));
    const recorded: unknown[] = [];
    const tracer: OtelTracer = {
      startSpan(name: string, options?: { attributes?: OtelAttributes }): OtelSpan {
        recorded.push(name, options?.attributes);
        return {
          setAttribute: (key, value) => recorded.push(key, value),
          addEvent: (eventName, attributes) => recorded.push(eventName, attributes),
          setStatus: (status) => recorded.push(status),
          recordException: (exception: { message: string; stack?: string }) => recorded.push(exception.message, exception.stack),
          end: () => undefined,
        };
      },
    };
    const detach = await attachOpenTelemetry(flow.eventStreamer, { tracer });
    const { dir, cleanup } = tempDir();
    try {
      await runFlow(flow, { dataDir: dir, runId: 'r' });
      detach();
      const log = readFileSync(join(dir, 'sessions', 'default', 'runs', 'r', 'events.jsonl'), 'utf8');
      const spans = JSON.stringify(recorded);
      expect(log).toContain('node.retry');
      expect(spans).toContain(REDACTED);
      for (const needle of needles) {
        expect(log.includes(needle), `event log holds ${needle}: ${log.split('\n').filter((l) => l.includes(needle)).join('\n')}`).toBe(false);
        expect(spans.includes(needle), `spans hold ${needle}`).toBe(false);
      }
    } finally {
      cleanup();
    }
  });
});

describe('ordinary text is left as it is (property)', () => {
  const lower = fc.constantFrom('read', 'github', 'pat', 'from', 'env', 'sk', 'ghs', 'hf', 'npm', 'token', 'key', 'sig', 'api', 'config', 'value', 'user', 'db', 'port');
  // Words that start a vendor's token (`sk-…`, `ghs_…`) come after the first word: right after `_` or `-` a lower-case
  // run is part of the identifier; at its start it is taken for a token (catalogue.test.ts).
  const words = (max: number) => fc.tuple(fc.constantFrom('read', 'config', 'user', 'my'), fc.array(lower, { maxLength: max - 1 })).map(([first, rest]) => [first, ...rest]);
  const identifier = fc.oneof(
    words(8).map((ws) => ws.join('_')),
    words(8).map((ws) => ws.join('-')),
    words(3).map((ws) => ws.map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1))).join('')),
  );
  const path = fc.array(lower, { minLength: 1, maxLength: 6 }).map((ws) => `/${ws.join('/')}.ts`);
  const url = fc
    .record({
      scheme: fc.constantFrom('https', 'http', 'postgres', 'redis', 'git+ssh'),
      host: fc.constantFrom('example.com', 'localhost', 'db.internal', '[::1]'),
      port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
      path: fc.array(fc.oneof(lower, fc.constantFrom('@babel', '@scope', 'v1')), { maxLength: 4 }),
      query: fc.option(fc.constantFrom('?email=bob@example.com', '?next=/a/b', '?q=a:b', '#top'), { nil: undefined }),
    })
    .map(({ scheme, host, port, path: segments, query }) => `${scheme}://${host}${port === undefined ? '' : `:${port}`}/${segments.join('/')}${query ?? ''}`);
  const command = fc.constantFrom('mkdir -p /tmp/x', 'ssh -p 22 host', 'docker run -p 8080:80 app', 'tool --max-tokens 100 --sort-key name', 'git add -p', 'npm i --save-dev vitest');
  const name = fc.constantFrom('user', 'sessionKey', 'cacheKey', 'maxTokens', 'keys', 'url', 'model', 'tokenUsage', 'path');
  const json = fc.tuple(name, identifier).map(([k, v]) => [JSON.stringify({ [k]: v, n: 1 }), JSON.stringify(JSON.stringify({ [k]: v }))]);
  const prose = fc.array(fc.constantFrom('the', 'token', 'password', 'was', 'rotated', 'and', 'the', 'key', 'expired', 'see', 'docs,', 'ok.', 'user-facing', 'sk-learn'), { minLength: 1, maxLength: 14 }).map((ws) => ws.join(' '));
  const piece = fc.oneof(identifier, path, url, command, json.map(([a]) => a!), json.map(([, b]) => b!), prose);

  it("a file path whose run of characters has the AWS secret key's shape (40 of base64's, mixed case and digits)", () => {
    // A temp folder's random name and the folders under it: exactly 40 characters between '-' and '.'.
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9]{6}$/), (id) => {
        const text = `cannot read /tmp/bpf-cli-${id}/sessions/default/runs/torn/events.jsonl: the log was cut`;
        expect(redactor.redactText(text)).toBe(text);
      }),
      { numRuns: trials(200, 2000) },
    );
  });

  it('identifiers, paths, URLs without credentials, commands without secrets, JSON (also quoted) and prose', () => {
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 4 }), fc.constantFrom(' ', '\n', ', ', ' | '), (pieces, sep) => {
        const text = pieces.join(sep);
        expect(redactor.redactText(text)).toBe(text);
      }),
      { numRuns: trials(400, 4000) },
    );
  });
});
