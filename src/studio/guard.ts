/**
 * Who may talk to the studio. The server reads runs (and, in a later version, steers them), so a request is
 * refused unless:
 *
 * - its Host header names this server (a hostname it answers on, and its port): a page on another site whose DNS
 *   name was rebound to 127.0.0.1 sends its own name, and is refused (DNS rebinding);
 * - it is not cross-origin: an `Origin` header must be this server's own origin, and `Sec-Fetch-Site` (sent by
 *   browsers even where they send no Origin, e.g. for `<script src>`) must be `same-origin` or `none`;
 * - when the server is bound to anything but loopback, it carries the server's random token: `?token=` (the URL
 *   printed at start; answered with an HttpOnly, SameSite=Strict cookie so the page's own requests carry it), an
 *   `Authorization: Bearer` header, or that cookie.
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { hostname, networkInterfaces } from 'node:os';
import { HttpError, type RequestTarget } from './http.js';

/** Whether `host` (a bind address or hostname) is the loopback interface. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^127(\.\d{1,3}){3}$/.test(h) || h === '::ffff:127.0.0.1';
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]';
}

/** What the guard needs to know about the server. */
export interface GuardOptions {
  /** The address the server is bound to. */
  host: string;
  /** The port it listens on (the real one, after binding port 0). */
  port: number;
  /** The token every request must carry; undefined when none is required (loopback). */
  token: string | undefined;
  /** More hostnames the Host header may name (e.g. a DNS name of this machine). */
  allowedHosts?: readonly string[];
}

/** The outcome of an accepted request: a cookie to set when the token came in the query. */
export interface Admission {
  setCookie?: string;
}

/** Checks every request against the rules above; throws an {@link HttpError} (401, 403 or 421) otherwise. */
export class RequestGuard {
  private readonly hostnames: Set<string>;
  readonly cookieName: string;

  constructor(private readonly options: GuardOptions) {
    const names = ['localhost', '127.0.0.1', '::1', ...(options.allowedHosts ?? [])];
    if (!isWildcard(options.host)) names.push(options.host);
    else {
      // Bound to every interface: the Host header may name any address of this machine, or its hostname.
      names.push(hostname());
      for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) names.push(a.address);
    }
    this.hostnames = new Set(names.map((n) => n.toLowerCase().replace(/^\[|\]$/g, '')));
    // Cookies are not separated by port: two studios on one machine must not overwrite each other's.
    this.cookieName = `bpf_studio_${options.port}`;
  }

  /** Accepts the request or throws. */
  admit(req: IncomingMessage, url: RequestTarget): Admission {
    const host = req.headers.host;
    if (host === undefined || !this.isOwnHost(host)) {
      throw new HttpError(421, `refused: the Host header ${JSON.stringify(host ?? '')} does not name this server (port ${this.options.port})`, 'host');
    }
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${host}`) {
      throw new HttpError(403, `refused: cross-origin request from ${JSON.stringify(origin)}`, 'origin');
    }
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none') {
      throw new HttpError(403, `refused: cross-site request (Sec-Fetch-Site: ${String(site)})`, 'origin');
    }
    return this.checkToken(req, url);
  }

  private isOwnHost(header: string): boolean {
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(header.trim());
    if (!match) return false;
    const name = match[1]!.toLowerCase().replace(/^\[|\]$/g, '');
    const port = match[2] === undefined ? 80 : Number(match[2]);
    return port === this.options.port && this.hostnames.has(name);
  }

  private checkToken(req: IncomingMessage, url: RequestTarget): Admission {
    const expected = this.options.token;
    if (expected === undefined) return {};
    const fromQuery = url.searchParams.get('token') ?? undefined;
    const auth = req.headers.authorization;
    const fromHeader = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length).trim() : undefined;
    const fromCookie = this.cookieOf(req.headers.cookie);
    const given = fromQuery ?? fromHeader ?? fromCookie;
    if (given === undefined) {
      throw new HttpError(401, 'this studio is bound to a non-loopback address and needs its token: open the URL it printed (with ?token=...) or send Authorization: Bearer <token>', 'token');
    }
    if (!sameSecret(given, expected)) throw new HttpError(403, 'wrong studio token', 'token');
    if (fromQuery === undefined) return {};
    return { setCookie: `${this.cookieName}=${expected}; HttpOnly; SameSite=Strict; Path=/` };
  }

  private cookieOf(header: string | undefined): string | undefined {
    for (const part of (header ?? '').split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0 && part.slice(0, eq).trim() === this.cookieName) return part.slice(eq + 1).trim();
    }
    return undefined;
  }
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
