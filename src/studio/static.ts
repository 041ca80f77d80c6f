/**
 * The built page (`dist/studio/page/`, made by `vite build`): `/` is its index.html, `/assets/...` its hashed
 * files. A request path is decoded once and must stay inside the page directory: `..`, backslashes, NUL and
 * encoded separators are refused before any file is opened.
 */
import { existsSync, promises as fsp } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASE_HEADERS, HttpError } from './http.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
};

/**
 * The page the server ships: `page/` beside this module in a build (`dist/studio/`); from the sources (tests, tsx),
 * the checkout's `dist/studio/page/`.
 */
export function defaultPageDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  if (basename(dirname(here)) === 'src') return join(here, '..', '..', 'dist', 'studio', 'page');
  return join(here, 'page');
}

/** The policy of the page: its own scripts and styles only, data from this server only. */
const PAGE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Serves the files of one directory. */
export class PageFiles {
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  /** The file a URL path names inside the page directory, or an HttpError (400 for a path that tries to leave it). */
  resolvePath(pathname: string): string {
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      throw new HttpError(400, `malformed path ${JSON.stringify(pathname)}`, 'path');
    }
    if (decoded === '/' || decoded === '/index.html') return join(this.root, 'index.html');
    const parts = decoded.split('/').slice(1);
    if (decoded.includes('\0') || decoded.includes('\\') || parts.some((p) => p === '..' || p === '.' || p === '')) {
      throw new HttpError(400, `refused path ${JSON.stringify(pathname)}: it must name a file of the page`, 'path');
    }
    const file = resolve(this.root, ...parts);
    if (!file.startsWith(this.root + sep)) throw new HttpError(400, `refused path ${JSON.stringify(pathname)}: outside the page`, 'path');
    return file;
  }

  /** Sends the file for `pathname` (HEAD: headers only); 404 when there is none, 503 when the page is not built. */
  async send(res: ServerResponse, pathname: string, head: boolean): Promise<void> {
    const file = this.resolvePath(pathname);
    if (!existsSync(join(this.root, 'index.html'))) {
      throw new HttpError(503, `the studio page is not built (no ${join(this.root, 'index.html')}): run npm run build; the API under /api/ works without it`);
    }
    let body: Buffer;
    try {
      const stat = await fsp.stat(file);
      if (!stat.isFile()) throw new HttpError(404, `no file ${pathname}`, 'path');
      body = await fsp.readFile(file);
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || (error as NodeJS.ErrnoException).code === 'ENOTDIR') throw new HttpError(404, `no file ${pathname}`, 'path');
      throw error;
    }
    const hashed = pathname.startsWith('/assets/');
    res.writeHead(200, {
      ...BASE_HEADERS,
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'content-length': body.length,
      'cache-control': hashed ? 'public, max-age=31536000, immutable' : 'no-cache',
      'content-security-policy': PAGE_CSP,
    });
    res.end(head ? undefined : body);
  }
}
