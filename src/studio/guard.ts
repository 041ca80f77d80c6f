/**
 * Who may talk to the studio. The server reads runs and, through two write routes, steers them (resume, fork), so a
 * request is refused unless:
 *
 * - its Host header names this server (a hostname it answers on, and its port): a page on another site whose DNS
 *   name was rebound to 127.0.0.1 sends its own name, and is refused (DNS rebinding);
 * - it is not cross-origin: an `Origin` header must be this server's own origin, and `Sec-Fetch-Site` (sent by
 *   browsers even where they send no Origin, e.g. for `<script src>`) must be `same-origin` or `none`;
 * - when the server is bound to anything but loopback, it carries the server's random token: `?token=` (the URL
 *   printed at start; answered with an HttpOnly, SameSite=Strict cookie so the page's own requests carry it), an
 *   `Authorization: Bearer` header, or that cookie.
 *
 * A write (any method but GET and HEAD) needs more, on loopback too: the token, from the header or the cookie (a
 * page of another origin on this machine, e.g. another port of 127.0.0.1, is same-site and would get a SameSite
 * cookie sent, so the Origin check above matters as much); `Sec-Fetch-Site`, when sent, exactly `same-origin`; and
 * (checked where the body is read) a JSON content type, which no HTML form can send and which a cross-origin
 * script can send only after a CORS preflight this server never grants.
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
  /** The studio's token: writes always need it. */
  token: string;
  /** Whether reads need it too (bound to anything but loopback). */
  tokenForReads: boolean;
  /** More hostnames the Host header may name (e.g. a DNS name of this machine). */
  allowedHosts?: readonly string[];
}

/** The outcome of an accepted request. */
export interface Admission {
  /** A cookie to set, when the token came in the query. */
  setCookie?: string;
  /** Whether the request carried the right token (it may write). */
  authenticated: boolean;
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

  /** Accepts the request or throws; `write` for a request that changes runs. */
  admit(req: IncomingMessage, url: RequestTarget, write = false): Admission {
    const host = req.headers.host;
    if (host === undefined || !this.isOwnHost(host)) {
      throw new HttpError(421, `refused: the Host header ${JSON.stringify(host ?? '')} does not name this server (port ${this.options.port})`, 'host');
    }
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${host}`) {
      throw new HttpError(403, `refused: cross-origin request from ${JSON.stringify(origin)}`, 'origin');
    }
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && (write || site !== 'none')) {
      throw new HttpError(403, `refused: cross-site request (Sec-Fetch-Site: ${String(site)})`, 'origin');
    }
    return write ? this.checkWriteToken(req) : this.checkToken(req, url);
  }

  private isOwnHost(header: string): boolean {
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(header.trim());
    if (!match) return false;
    const name = match[1]!.toLowerCase().replace(/^\[|\]$/g, '');
    const port = match[2] === undefined ? 80 : Number(match[2]);
    return port === this.options.port && this.hostnames.has(name);
  }

  /** The token a request carries: `?token=` (reads only), the Authorization header, or the cookie. */
  private givenToken(req: IncomingMessage, url: RequestTarget | undefined): { token: string | undefined; fromQuery: boolean } {
    const fromQuery = url?.searchParams.get('token') ?? undefined;
    const auth = req.headers.authorization;
    const fromHeader = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length).trim() : undefined;
    return { token: fromQuery ?? fromHeader ?? this.cookieOf(req.headers.cookie), fromQuery: fromQuery !== undefined };
  }

  private checkToken(req: IncomingMessage, url: RequestTarget): Admission {
    const expected = this.options.token;
    const { token: given, fromQuery } = this.givenToken(req, url);
    const authenticated = given !== undefined && sameSecret(given, expected);
    if (!this.options.tokenForReads) return authenticated && fromQuery ? { authenticated, setCookie: this.cookie() } : { authenticated };
    if (given === undefined) {
      throw new HttpError(401, 'this studio is bound to a non-loopback address and needs its token: open the URL it printed (with ?token=...) or send Authorization: Bearer <token>', 'token');
    }
    if (!authenticated) throw new HttpError(403, 'wrong studio token', 'token');
    return fromQuery ? { authenticated, setCookie: this.cookie() } : { authenticated };
  }

  private checkWriteToken(req: IncomingMessage): Admission {
    const expected = this.options.token;
    const { token: given } = this.givenToken(req, undefined);
    if (given === undefined) {
      throw new HttpError(401, "resuming and forking need the studio's token: open the URL it printed (with ?token=...) or send Authorization: Bearer <token>", 'token');
    }
    if (!sameSecret(given, expected)) throw new HttpError(403, 'wrong studio token', 'token');
    return { authenticated: true };
  }

  private cookie(): string {
    return `${this.cookieName}=${this.options.token}; HttpOnly; SameSite=Strict; Path=/`;
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
