/**
 * Who may talk to the studio. The server reads runs and, through two write routes, steers them (resume, fork), so a
 * request is refused unless:
 *
 * - its Host header names this server (a hostname it answers on, and its port): a page on another site whose DNS
 *   name was rebound to 127.0.0.1 sends its own name, and is refused (DNS rebinding);
 * - it is not cross-origin: an `Origin` header must be this server's own origin, and `Sec-Fetch-Site` (sent by
 *   browsers even where they send no Origin, e.g. for `<script src>`) must be `same-origin` or `none`;
 * - when the server is bound to anything but loopback, an API read carries the server's random token: `?token=` (the
 *   URL printed at start) or an `Authorization: Bearer` header. The page's own files (its HTML, scripts and styles,
 *   the same for every studio) need none: the page reads the token from its address and sends it in the header.
 *
 * A write (any method but GET and HEAD) needs more, on loopback too: the token in an `Authorization: Bearer` header;
 * `Sec-Fetch-Site`, when sent, exactly `same-origin`; and (checked where the body is read) a JSON content type, which
 * no HTML form can send and which a cross-origin script can send only after a CORS preflight this server never grants.
 *
 * The token is never put in a cookie: browsers do not separate cookies by port, so any other server on this machine
 * the user visits (another port of 127.0.0.1) would be sent it.
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

/** What a request asks for: a file of the page, an API read, or a write (it changes runs). */
export type Access = 'page' | 'read' | 'write';

/** The outcome of an accepted request. */
export interface Admission {
  /** Whether the request carried the right token (it may write). */
  authenticated: boolean;
}

/** Checks every request against the rules above; throws an {@link HttpError} (401, 403 or 421) otherwise. */
export class RequestGuard {
  private readonly hostnames: Set<string>;

  constructor(private readonly options: GuardOptions) {
    const names = ['localhost', '127.0.0.1', '::1', ...(options.allowedHosts ?? [])];
    if (!isWildcard(options.host)) names.push(options.host);
    else {
      // Bound to every interface: the Host header may name any address of this machine, or its hostname.
      names.push(hostname());
      for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) names.push(a.address);
    }
    this.hostnames = new Set(names.map((n) => n.toLowerCase().replace(/^\[|\]$/g, '')));
  }

  /** Accepts the request for `access` or throws. */
  admit(req: IncomingMessage, url: RequestTarget, access: Access): Admission {
    const write = access === 'write';
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
    if (write) return this.checkWriteToken(req);
    return access === 'page' ? { authenticated: false } : this.checkToken(req, url);
  }

  private isOwnHost(header: string): boolean {
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(header.trim());
    if (!match) return false;
    const name = match[1]!.toLowerCase().replace(/^\[|\]$/g, '');
    const port = match[2] === undefined ? 80 : Number(match[2]);
    return port === this.options.port && this.hostnames.has(name);
  }

  /** The token a request carries: `?token=` (reads only) or the Authorization header. */
  private givenToken(req: IncomingMessage, url: RequestTarget | undefined): string | undefined {
    const auth = req.headers.authorization;
    const fromHeader = auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length).trim() : undefined;
    return url?.searchParams.get('token') ?? fromHeader;
  }

  private checkToken(req: IncomingMessage, url: RequestTarget): Admission {
    const given = this.givenToken(req, url);
    const authenticated = given !== undefined && sameSecret(given, this.options.token);
    if (!this.options.tokenForReads) return { authenticated };
    if (given === undefined) {
      throw new HttpError(401, 'this studio is bound to a non-loopback address and needs its token: open the URL it printed (with ?token=...) or send Authorization: Bearer <token>', 'token');
    }
    if (!authenticated) throw new HttpError(403, 'wrong studio token', 'token');
    return { authenticated };
  }

  private checkWriteToken(req: IncomingMessage): Admission {
    const given = this.givenToken(req, undefined);
    if (given === undefined) {
      throw new HttpError(401, "resuming and forking need the studio's token in an Authorization: Bearer header (the page opened from the URL the studio printed, with ?token=..., sends it)", 'token');
    }
    if (!sameSecret(given, this.options.token)) throw new HttpError(403, 'wrong studio token', 'token');
    return { authenticated: true };
  }
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
