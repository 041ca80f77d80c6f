/**
 * Values the redaction pass used to let through: objects that are not plain data (class instances, URL objects,
 * errors with headers, objects with a `toJSON`), a Map whose keys are not all strings (its encoded pairs), byte
 * arrays holding text, and the names and ids of an event's envelope. The guarantee checked is the one the log
 * needs: the text `JSON.stringify` writes for the redacted value holds no secret.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeValue, encodeValue } from '../../src/backpack/index.js';
import { REDACTED, Redactor, redact } from '../../src/redact/index.js';
import { EventStore, EventStoreError } from '../../src/store/index.js';
import { makeEvent, tempDir } from '../store/helpers.js';
import { trials } from '../support/soak.js';

const TOKEN = 'ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi';
const PEM = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----';
/** A secret no pattern knows: only the secret-key rule can find it. */
const PLAIN = 'hunter2-plain-words';

class Creds {
  user = 'bob';
  password = PLAIN;
  nested = { note: `uses ${TOKEN}` };
}

/** An error as HTTP clients throw them: the request's headers on an own property. */
function clientError(): Error {
  return Object.assign(new Error('request failed'), { config: { headers: { Authorization: `Bearer ${TOKEN}` } } });
}

const json = (value: unknown): string => JSON.stringify(value);

describe('objects that are not plain data are redacted in the form JSON.stringify writes', () => {
  it('class instances, URL objects, errors with headers and toJSON results', () => {
    const input = {
      url: new URL(`https://bob:${PLAIN}@db.example.com/x?token=${TOKEN}`),
      creds: new Creds(),
      err: clientError(),
      custom: { toJSON: () => ({ apiKey: PLAIN }) },
      list: [new Creds()],
    };
    const { value, redacted } = redact(input);
    expect(redacted).toBe(true);
    const text = json(value);
    expect(text).not.toContain(PLAIN);
    expect(text).not.toContain(TOKEN.slice(4));
    expect(JSON.parse(text)).toEqual({
      url: `https://bob:${REDACTED}@db.example.com/x?token=${REDACTED}`,
      creds: { user: 'bob', password: REDACTED, nested: { note: `uses ${REDACTED}` } },
      err: { config: { headers: { Authorization: REDACTED } } },
      custom: { apiKey: REDACTED },
      list: [{ user: 'bob', password: REDACTED, nested: { note: `uses ${REDACTED}` } }],
    });
    // The input is not modified.
    expect(input.creds.password).toBe(PLAIN);
  });

  it('a value under a secret-named key is blanked in its JSON form too', () => {
    const { value } = redact({ credentials: new Creds(), password: new URL('https://example.com/a') });
    expect(JSON.parse(json(value))).toEqual({ credentials: { user: REDACTED, password: REDACTED, nested: { note: REDACTED } }, password: REDACTED });
  });

  it('toJSON is called with the key JSON.stringify passes, and a value whose JSON form holds no secret is kept as it is', () => {
    const byKey = { toJSON: (key: string) => (key === 'leaky' ? TOKEN : 'fine') };
    expect(json(redact({ leaky: byKey }).value)).toBe(`{"leaky":"${REDACTED}"}`);
    const input = { at: new Date(0), url: new URL('https://example.com/docs'), who: new Creds().user, list: [1, 'a'], n: new Number(3) };
    const result = redact(input);
    expect(result.redacted).toBe(false);
    expect(result.value).toBe(input);
  });

  it('a circular object is refused, not written unchecked', () => {
    class Node {
      self: Node = this;
    }
    expect(() => redact({ node: new Node() })).toThrow(/circular/);
    expect(() => new Redactor().containsSecrets([new Node()])).toThrow(/circular/);
  });
});

describe('a Map whose keys are not all strings', () => {
  it('has each pair of its encoded form checked on its own', () => {
    const map = new Map<unknown, unknown>([
      ['password', PLAIN],
      [1, 'one'],
      [TOKEN, 'value'],
      [undefined, { apiKey: PLAIN }],
    ]);
    const { value, redacted } = redact(encodeValue({ cfg: map }));
    expect(redacted).toBe(true);
    expect(json(value)).not.toContain(PLAIN);
    expect(json(value)).not.toContain(TOKEN.slice(4));
    // Still a valid encoding: it decodes to the Map with its values redacted.
    expect([...(decodeValue(value) as { cfg: Map<unknown, unknown> }).cfg]).toEqual([
      ['password', REDACTED],
      [1, 'one'],
      [REDACTED, 'value'],
      [undefined, { apiKey: REDACTED }],
    ]);
  });

  it('a [key, value] pair with a secret-named key is blanked whatever the other elements of its list are', () => {
    expect(redact({ pairs: [['token', PLAIN], 3, 'x', [2, 'y']] }).value).toEqual({ pairs: [['token', REDACTED], 3, 'x', [2, 'y']] });
  });
});

describe('byte arrays holding text', () => {
  const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

  it('are scanned as text, live and in their encoded form, and stay valid byte arrays', () => {
    const input = { key: bytes(`key:\n${PEM}\n`), buf: Buffer.from(`token ${TOKEN}`), clamped: new Uint8ClampedArray(bytes(TOKEN)) };
    const { value } = redact(input);
    expect(Buffer.from(value.key).toString()).toBe(`key:\n${REDACTED}\n`);
    expect(Buffer.isBuffer(value.buf) && value.buf.toString()).toBe(`token ${REDACTED}`);
    expect(value.clamped).toBeInstanceOf(Uint8ClampedArray);

    const encoded = encodeValue({ key: bytes(PEM), int8: new Int8Array(bytes(TOKEN)) });
    const stored = redact(encoded);
    expect(stored.redacted).toBe(true);
    const decoded = decodeValue(stored.value) as { key: Uint8Array; int8: Int8Array };
    expect(Buffer.from(decoded.key).toString()).toBe(REDACTED);
    expect(decoded.int8).toBeInstanceOf(Int8Array);
    expect(Buffer.from(decoded.int8.buffer).toString()).toBe(REDACTED);
    expect(json(stored.value)).not.toContain(Buffer.from(PEM).toString('base64').slice(8, 40));
  });

  it('are blanked under a secret-named key; binary data (a NUL byte in its first 8 KB) and other typed arrays are kept', () => {
    expect(Buffer.from(redact({ privateKey: bytes('plain words') }).value.privateKey).toString()).toBe(REDACTED);
    const binary = new Uint8Array([0, ...bytes(TOKEN)]);
    const floats = new Float64Array([1, 2]);
    const input = { binary, floats, encoded: encodeValue(binary) };
    expect(redact(input).value).toBe(input);
  });
});

describe('the property: nothing JSON.stringify writes of a redacted value holds a secret', () => {
  const secret = fc.constantFrom(TOKEN, 'sk-proj-Q7vLx2Rk9TmWp4ZsN8bYc3HjD6fGa1Ke', 'postgres://admin:Pg5ecretW0rdQx7@db/app', PEM);
  const text = fc.oneof(fc.string({ maxLength: 12 }), secret, secret.map((s) => `see ${s} here`));
  const key = fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('password', 'apiKey', 'note'));
  class Box {
    constructor(readonly inner: unknown) {}
  }
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small' },
      text,
      fc.integer(),
      fc.dictionary(key, tie('value'), { maxKeys: 3 }),
      fc.array(tie('value'), { maxLength: 3 }),
      tie('value').map((inner) => new Box(inner)),
      tie('value').map((inner) => ({ toJSON: () => inner })),
      text.map((s) => Buffer.from(s)),
      fc.array(fc.tuple(fc.oneof(key, fc.integer(), fc.constant(undefined)), tie('value')), { maxLength: 3 }).map((entries) => new Map<unknown, unknown>(entries)),
    ),
  }));
  const parts = [TOKEN.slice(4), 'Q7vLx2Rk9TmWp4ZsN8', 'Pg5ecretW0rdQx7', 'MIIEvQIBADANBgkq'];
  /** Whether JSON text holds a secret, as text or as the bytes of a Buffer (`"data":[77,73,...]`). */
  const holdsSecretText = (written: string, bytes = true): boolean => parts.some((part) => written.includes(part) || (bytes && written.includes(numbers(part))));
  /** How JSON writes the bytes of `text` in a Buffer: `"data":[77,73,...]`. */
  const numbers = (text: string): string => [...Buffer.from(text)].join(',');

  it('holds for plain data, class instances, toJSON objects, byte arrays and Maps of any keys, live and encoded', () => {
    const redactor = new Redactor();
    fc.assert(
      fc.property(value, (input) => {
        const live = redactor.redact(input);
        expect(holdsSecretText(json(live.value))).toBe(false);
        expect(redactor.containsSecrets(input)).toBe(live.redacted);
        // What the backpack and keyframes store: the codec's encoding of data (here the JSON of the input, where a
        // Buffer is a list of numbers, stored as they are), in a Map of mixed keys, with a byte array.
        const data = JSON.parse(json({ v: input })) as unknown;
        const encoded = redactor.redact(encodeValue(new Map<unknown, unknown>([[1, data], ['password', PLAIN], [2, new Uint8Array(Buffer.from(PEM))]]))).value;
        expect(json(encoded)).not.toContain(PLAIN);
        expect(holdsSecretText(json(encoded), false)).toBe(false);
        expect(holdsSecretText(Buffer.from(((encoded as { v: [unknown, { v: string }][] }).v[2]![1]).v, 'base64').toString())).toBe(false);
      }),
      { numRuns: trials(300, 3000) },
    );
  });
});

describe('names and ids of the event envelope', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  function filesUnder(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]));
  }

  it.each(['id', 'namespace', 'nodeId', 'nodeName', 'spanId', 'parentSpanId'] as const)(
    'an event whose %s holds a secret is refused, with an error that names the field and not the secret',
    async (field) => {
      const { dir, cleanup } = tempDir();
      cleanups.push(cleanup);
      const store = new EventStore({ dataDir: dir, sessionKey: 's', runId: 'r' });
      await store.append(makeEvent('r', 1, { namespace: 'app.a', nodeId: 'a', nodeName: 'A', spanId: 'sp-1', parentSpanId: 'sp-0' }));
      for (const [seq, payload] of [
        [2, { n: 2 }],
        [3, { password: 'x' }],
      ] as const) {
        // The quick path (a plain payload) and the general one (a payload the redaction pass changes).
        const error = await store.append(makeEvent('r', seq, { [field]: `x ${TOKEN}`, payload })).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(EventStoreError);
        expect((error as Error).message).toContain(`secret-looking ${field}`);
        expect((error as Error).message).not.toContain(TOKEN.slice(4));
      }
      await store.append(makeEvent('r', 2, { [field]: field === 'id' ? 'ev-2' : 'fine' }));
      await store.close();
      for (const file of filesUnder(dir)) expect(readFileSync(file, 'utf8')).not.toContain(TOKEN.slice(4));
      expect((await new EventStore({ dataDir: dir, sessionKey: 's', runId: 'r' }).readAll()).map((e) => e.seq)).toEqual([1, 2]);
    },
  );

  it("a user's patterns apply to names too", async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const store = new EventStore({ dataDir: dir, sessionKey: 's', runId: 'r', redaction: { patterns: [/\bACME-[0-9]{6}\b/] } });
    await expect(store.append(makeEvent('r', 1, { nodeId: 'ACME-123456' }))).rejects.toThrow(/secret-looking nodeId/);
    await store.append(makeEvent('r', 1, { nodeId: 'ACME-1' }));
    await store.close();
  });
});

describe('secret-named fields written as text (a value summary, a log line, a config file)', () => {
  /** Names the key rule calls secret, in the spellings text gives them. */
  const SECRET_NAMES = ['secretKey', 'session_cookie', 'passphrase', 'x-api-key', 'private-key', 'OPENAI_API_KEY', 'dbPassword', 'authorization', 'refresh_token'];
  /** Names it does not: their values are kept. */
  const PLAIN_NAMES = ['sessionKey', 'cacheKey', 'maxTokens', 'keys', 'url', 'time'];
  const valueArb = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 ._/+-]{2,20}[A-Za-z0-9]$/);
  const forms: ((name: string, value: string) => string)[] = [
    (n, v) => `{url: "https://api.example.com", ${n}: "${v}", n: 1}`,
    (n, v) => `{"${n}": "${v}"}`,
    (n, v) => `${n}=${v.replace(/ /g, '_')}`,
    (n, v) => `${n}: ${v.replace(/ /g, '_')}`,
    (n, v) => `Map(1) {"${n}" => "${v}"}`,
  ];

  it('the value of a secret-named field is replaced, and of any other field kept (property)', () => {
    const redactor = new Redactor();
    fc.assert(
      fc.property(fc.constantFrom(...SECRET_NAMES), fc.constantFrom(...PLAIN_NAMES), valueArb, fc.constantFrom(...forms), (secretName, plainName, value, form) => {
        const secretText = form(secretName, value);
        const out = redactor.redactText(secretText);
        expect(out).toContain(REDACTED);
        expect(out).not.toContain(form === forms[2] || form === forms[3] ? value.replace(/ /g, '_') : value);
        const plainText = form(plainName, 'kept-value-1');
        expect(redactor.redactText(plainText)).toBe(plainText);
      }),
      { numRuns: trials(300, 3000) },
    );
  });

  it("a user's secret key names count too", () => {
    expect(new Redactor({ secretKeys: ['pin'] }).redactText('{user: "bob", userPin: "4321", pin: 9876}')).toBe(`{user: "bob", userPin: "${REDACTED}", pin: ${REDACTED}}`);
    expect(new Redactor().redactText('{user: "bob", userPin: "4321"}')).toBe('{user: "bob", userPin: "4321"}');
  });

  it("a packed value's summary in the event log holds none of its secret-named fields", async () => {
    const { Flow, BackpackNode, runFlow } = await import('../../src/index.js');
    class Configure extends BackpackNode {
      override post(backpack: { pack(key: string, value: unknown): void }): undefined {
        backpack.pack('service', { url: 'https://api.example.com', secretKey: 's3cr3tValue42', session_cookie: 'c00kieValue42', passphrase: 'correct horse battery' });
        return undefined;
      }
    }
    const flow = new Flow({ namespace: 'app' });
    flow.addNode(Configure, { id: 'configure' });
    const { dir, cleanup } = tempDir();
    try {
      await runFlow(flow, { dataDir: dir, runId: 'summary' });
      const log = readFileSync(join(dir, 'sessions', 'default', 'runs', 'summary', 'events.jsonl'), 'utf8');
      expect(log).toContain('valueSummary');
      for (const secret of ['s3cr3tValue42', 'c00kieValue42', 'correct horse battery']) expect(log).not.toContain(secret);
    } finally {
      cleanup();
    }
  });
});

describe('encoded byte arrays are bytes, never text', () => {
  it('a typed record whose base64 looks like a key (any 30 bytes: 40 characters) is kept as it is, whatever its bytes (property)', () => {
    const types = ['Uint8Array', 'Int8Array', 'Uint8ClampedArray', 'Float64Array', 'Uint16Array'] as const;
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 64 }), fc.constantFrom(...types), (bytes, t) => {
        // Binary data (a NUL among the first bytes), as the redactor judges it.
        const data = Buffer.from([0, ...bytes]);
        const size = t === 'Float64Array' ? 8 : t === 'Uint16Array' ? 2 : 1;
        const v = data.subarray(0, data.length - (data.length % size)).toString('base64');
        const record = { $bp: 'typed', t, v };
        expect(redact({ value: record }).value).toEqual({ value: record });
      }),
      { numRuns: trials(300, 3000) },
    );
    // The case that corrupted values: 30 bytes, whose base64 has the shape of an AWS secret key.
    const thirty = Buffer.from(Array.from({ length: 30 }, (_, i) => (i * 37 + 11) % 256));
    thirty[0] = 0;
    const record = { $bp: 'typed', t: 'Uint8Array', v: thirty.toString('base64') };
    expect(record.v).toHaveLength(40);
    expect(redact({ value: record }).value).toEqual({ value: record });
  });

  it('under a secret-named key a typed record stays one of its type: the bytes of the mark, or none', () => {
    const { value } = redact({ password: { $bp: 'typed', t: 'Uint8Array', v: Buffer.from('hunter2').toString('base64') }, apiKey: { $bp: 'typed', t: 'Float64Array', v: Buffer.alloc(16).toString('base64') } });
    const decoded = decodeValue(value) as { password: Uint8Array; apiKey: Float64Array };
    expect(Buffer.from(decoded.password).toString('latin1')).toBe(REDACTED);
    expect(decoded.apiKey).toBeInstanceOf(Float64Array);
    expect(decoded.apiKey.length).toBe(0);
    expect(json(value)).not.toContain(Buffer.from('hunter2').toString('base64'));
  });
});

describe('a vendor token whose body spells an assignment', () => {
  // A frame.io token's body may hold `pWD=` (its alphabet has letters, digits, `_`, `-` and `=`): the assignment pattern
  // took `fio-u-0pWD` for a name and blanked only what followed, leaving the token's start (found by the soak run of
  // the placement property). Vendor tokens are now taken whole before the assignment patterns run.
  const token = 'fio-u-0pWD=-__=-a_-0=0-A-_aA-a_A0A=00_=A=___0==0aaa-Aa0a_a=0-A=--=Aa=0';

  it('is redacted whole, alone, after `_` and before an escaped quote', () => {
    const redactor = new Redactor();
    for (const text of [token, `_${token}\\"}"`, `key: ${token}`]) {
      const out = redactor.redactText(text);
      expect(out, text).not.toContain('fio-u-');
      expect(out).toContain(REDACTED);
    }
  });

  it('an assignment of one is redacted as before', () => {
    expect(redact(`password=${token}`).value).toBe(`password=${REDACTED}`);
    expect(redact('x pwd=abc').value).toBe(`x pwd=${REDACTED}`);
  });
});
