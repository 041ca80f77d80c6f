import { request, type IncomingHttpHeaders } from 'node:http';

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
export function get(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Reply> {
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
    req.end();
  });
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
