import { spawn } from 'node:child_process';
import { request, type IncomingHttpHeaders } from 'node:http';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { BackpackNode, Flow, runFlow, type BackpackHandle, type RunResult } from '../../src/index.js';
import type { RunStore } from '../../src/store/index.js';
import { chromiumPage } from '../support/chromium.js';
import { BIN } from '../cli/helpers.js';
import { plainEnv } from '../support/env.js';

/** What one HTTP request got back. */
export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
}

/**
 * A GET (or `method`) to 127.0.0.1:`port` with the path sent exactly as given (no normalization, so `..` reaches
 * the server) and any headers, Host included.
 */
export function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET', body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        let json: any;
        try {
          json = JSON.parse(body);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A POST of `body` as JSON (unless `headers` say otherwise) to 127.0.0.1:`port`. */
export function post(port: number, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return get(port, path, { 'content-type': 'application/json', ...headers }, 'POST', text);
}

/** One server-sent message. */
export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/** An open server-sent events stream: messages as they arrive, and a way to wait for one. */
export interface SseStream {
  status: number;
  messages: SseMessage[];
  /** Resolves with the first message (already received or later) for which `predicate` holds. */
  waitFor(predicate: (m: SseMessage) => boolean, timeoutMs?: number): Promise<SseMessage>;
  close(): void;
}

/** Opens `path` as an event stream on 127.0.0.1:`port`. */
export function openStream(port: number, path: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host: `127.0.0.1:${port}`, accept: 'text/event-stream', ...headers } }, (res) => {
      const messages: SseMessage[] = [];
      const waiters: Array<{ predicate: (m: SseMessage) => boolean; resolve: (m: SseMessage) => void }> = [];
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const message: SseMessage = { event: 'message', data: '' };
          let hasData = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
            if (field === 'event') message.event = value;
            else if (field === 'id') message.id = value;
            else if (field === 'data') {
              message.data += (hasData ? '\n' : '') + value;
              hasData = true;
            }
          }
          if (!hasData) continue;
          messages.push(message);
          for (const w of waiters.splice(0)) {
            if (w.predicate(message)) w.resolve(message);
            else waiters.push(w);
          }
        }
      });
      resolve({
        status: res.statusCode ?? 0,
        messages,
        waitFor: (predicate, timeoutMs = 20_000) =>
          new Promise((done, fail) => {
            const found = messages.find(predicate);
            if (found) return done(found);
            const timer = setTimeout(() => fail(new Error(`no matching server-sent message within ${timeoutMs} ms; got ${messages.map((m) => m.event).join(', ')}`)), timeoutMs);
            waiters.push({ predicate, resolve: (m) => (clearTimeout(timer), done(m)) });
          }),
        close: () => req.destroy(),
      });
    });
    req.on('error', (error) => {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    req.end();
  });
}

/** Starts `backpackflow studio` and resolves with its URL once it printed it. */
export function startCli(args: string[]): Promise<{ url: URL; stdout: () => string; stop: () => Promise<{ code: number | null; stderr: string }> }> {
  const child = spawn(process.execPath, [BIN, 'studio', ...args], { env: plainEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const closed = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stderr })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`studio printed no URL in 20 s; stdout: ${stdout}; stderr: ${stderr}`)), 20_000);
    child.stderr.on('data', (d: Buffer) => (stderr += d));
    child.stdout.on('data', (d: Buffer) => {
      stdout += d;
      const match = /(http:\/\/\S+)/.exec(stdout);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        url: new URL(match[1]!),
        stdout: () => stdout,
        stop: () => {
          child.kill('SIGTERM');
          return closed;
        },
      });
    });
    void closed.then(({ code }) => reject(new Error(`studio exited ${code} before printing a URL: ${stderr}`)));
  });
}


/**
 * A durable run held open by the test: `first` packs `first` and `private`; then `wait` (which may read only
 * `first`) is denied `private`, waits for {@link GatedRun.release} and packs `done`.
 */
export interface GatedRun {
  /** Resolves when `wait` is waiting (its first step is in the log). */
  waiting: Promise<void>;
  release(): void;
  /** The run; it ends after {@link release}. */
  running: Promise<RunResult>;
}

/** Starts a gated run `runId` (flow namespace `live`) in `dataDir`, or in `store` when given. */
export function startGatedRun(dataDir: string, runId: string, store?: RunStore): GatedRun {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const waiting = new Promise<void>((resolve) => (entered = resolve));
  class Wait extends BackpackNode {
    // May read only `first`: its look at `private` is denied and recorded.
    override readonly permissions = { read: ['first'] };
    override prep(backpack: BackpackHandle): void {
      backpack.unpack('private');
    }
    override async exec(): Promise<void> {
      entered();
      await gate;
    }
    override post(backpack: BackpackHandle): undefined {
      backpack.pack('done', true);
      return undefined;
    }
  }
  class First extends BackpackNode {
    override post(backpack: BackpackHandle): undefined {
      backpack.pack('first', 1);
      backpack.pack('private', 'not for wait');
      return undefined;
    }
  }
  const flow = new Flow({ namespace: 'live' });
  flow.addNode(First, { id: 'first' }).next(flow.addNode(Wait, { id: 'wait' }));
  return { waiting, release, running: runFlow(flow, { dataDir, runId, store }) };
}

/**
 * The studio the CLI started, this worker's headless Chromium with a fresh context holding one page, and how to
 * read text off that page.
 */
export interface BrowserStudio {
  studio: Awaited<ReturnType<typeof startCli>>;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** The text of the first element `selector` finds, its whitespace collapsed. */
  text(selector: string): Promise<string>;
  /** Closes the context (the browser stays, for the worker's next file) and stops the studio. */
  close(): Promise<void>;
}

/** How to read text off `page`: the text of the first element `selector` finds, its whitespace collapsed. */
export function pageText(page: Page): (selector: string) => Promise<string> {
  return async (selector) => ((await page.locator(selector).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
}

/** Starts `backpackflow studio` with `args` and a page of Chromium side by side. */
export async function studioInBrowser(args: string[]): Promise<BrowserStudio> {
  const [studio, { browser, context, page }] = await Promise.all([startCli(args), chromiumPage()]);
  return {
    studio,
    browser,
    context,
    page,
    text: pageText(page),
    close: async () => {
      await context.close();
      await studio.stop();
    },
  };
}
