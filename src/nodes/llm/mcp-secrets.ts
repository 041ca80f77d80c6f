/**
 * The credentials an MCP server declaration carries, and its URL as messages show it. A server's header values,
 * the env values of a stdio server and the parts of a URL that hold a token are secrets only the declaration knows
 * (a self-hosted gateway's key has no vendor shape the run's redaction could recognise), so the node that declares
 * the server removes them from what it emits and packs, as it does its own API key.
 *
 * @module
 */
import { isSecretKey, urlCredentials } from '../../redact/index.js';
import type { McpServer } from './mcp.js';

/**
 * Headers whose values are not credentials (compared lower-case). Every other header value counts as one: a
 * gateway's key can travel under any name (`X-Auth`, `X-Gateway`, ...).
 */
const PLAIN_HEADERS = new Set(['accept', 'accept-encoding', 'accept-language', 'cache-control', 'content-type', 'mcp-protocol-version', 'user-agent']);

/**
 * Fewest characters of a value that counts as a credential when its name does not say it is one. Shorter values
 * under plain names (`1`, `true`, `info`, `json`) are not looked for: replacing every `json` in a tool result would
 * garble it, and no credential worth the name is that short. Under a secret-looking name (`X-Api-Key`, `password`)
 * the floor is that of the node's own secrets (4, see `usableSecrets`).
 */
const MIN_UNNAMED_LENGTH = 8;

/**
 * The secrets of one MCP server declaration, each once: every header value but those of {@link PLAIN_HEADERS} (and
 * the credential of a `Scheme credential` value on its own), every `env` value, and in the URL the user name and
 * password, every query value and every path segment that looks like a token (16 or more characters, not lower-case
 * words), percent-decoded and as written. Values shorter than 8 characters count only under a secret-looking name.
 */
export function mcpServerSecrets(server: McpServer): string[] {
  const out = new Set<string>();
  const add = (name: string, value: string | undefined): void => {
    if (value === undefined || value === '') return;
    if (value.length >= MIN_UNNAMED_LENGTH || isSecretKey(name)) out.add(value);
  };
  if (server.transport === 'stdio') {
    for (const [name, value] of Object.entries(server.env ?? {})) add(name, value);
  } else {
    for (const [name, value] of Object.entries(server.headers ?? {})) {
      if (PLAIN_HEADERS.has(name.toLowerCase())) continue;
      add(name, value);
      // `Bearer <token>`, `Token <token>`: a server may quote the token alone.
      const credential = /^\S+\s+(\S+)$/.exec(value.trim())?.[1];
      add('credential', credential);
    }
    for (const value of urlSecrets(server.url)) out.add(value);
  }
  return [...out];
}

/**
 * The credentials a URL carries (an MCP server's, an LLM node's `baseURL`): user name, password, query values and
 * names that look like tokens, path segments and host labels that look like tokens, as written and percent-decoded.
 * Values shorter than 8 characters count only under a secret-looking name.
 */
export function urlSecrets(url: string): string[] {
  const out: string[] = [];
  for (const [name, value] of urlCredentials(url)) if (value !== '' && (value.length >= MIN_UNNAMED_LENGTH || isSecretKey(name))) out.push(value);
  return out;
}
