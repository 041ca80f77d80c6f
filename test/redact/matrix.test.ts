/**
 * No secret reaches the disk: every format of the catalogue, in every place a run, the memory, a recorded flow or
 * the context engine persists data. Each case runs the real code into a temp dir, then reads every file written
 * there and looks for any 8-character window of the secret's body.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { recordRunFlow } from '../../src/cli/backpackflow/flows.js';
import { ContextEngine } from '../../src/context/index.js';
import { BackpackNode, Flow, StreamEventType, openNewRun, runFlow, type BackpackHandle } from '../../src/index.js';
import { EventStore, MemoryStore } from '../../src/store/index.js';
import { filesUnder } from '../support/files.js';

/** A secret and the prefix that is not secret (its vendor's marker), so that only the body is looked for. */
interface Format {
  secret: string;
  prefix: string;
  /** The secret part when the secret is embedded in a larger token (a URL's password). */
  body?: string;
}

export const FORMATS: Record<string, Format> = {
  'OpenAI key': { secret: 'sk-proj-Q7vLx2Rk9TmWp4ZsN8bYc3HjD6fGa1Ke', prefix: 'sk-proj-' },
  'Anthropic key': { secret: 'sk-ant-api03-Wm4Kd9Lq2Xz7Rb5Tn8Vc1Hy6Pj3Fs0Gu-AbCdEf', prefix: 'sk-ant-api03-' },
  'bearer token': { secret: 'Bearer Zt5Yq8Rw2Lk7Mn4Bx9Vc', prefix: 'Bearer ' },
  'PEM private key': { secret: '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Lx9Zr2Tk\n-----END RSA PRIVATE KEY-----', prefix: '', body: 'MIIEowIBAAKCAQEAq7Lx9Zr2Tk' },
  JWT: { secret: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTQyIn0.Xk3Lq9Zr7Wm2Tn5Bv8Yc1Hd4Jf6Gs0Pa', prefix: 'eyJhbGciOiJIUzI1NiJ9.' },
  'GitHub classic token': { secret: 'ghp_R8kL2mQ9xZ4vT7wN1bY5cH3jD6fG0aKsPeUi', prefix: 'ghp_' },
  'GitHub fine-grained token': { secret: `github_pat_11ABCDEFG0${'Zq7Lw3Rx9Tk2'.repeat(6)}Yb4Nc8Vd`, prefix: 'github_pat_' },
  'Slack token': { secret: 'xoxb-2048123456-4096789012-Qm7Rk2Lx9Zt4Wv8Nb3Yc', prefix: 'xoxb-' },
  'Stripe secret key': { secret: 'sk_live_51HqLx9Zr2Tk7Wm4Vn8Bc3Yd', prefix: 'sk_live_' },
  'Stripe restricted key': { secret: 'rk_live_51JpMz8Yq3Rl6Xn2Wb7Cd4Ve', prefix: 'rk_live_' },
  'Google API key': { secret: 'AIzaSyD4k9Lq2Xz7Rb5Tn8Vc1Hy6Pj3Fs0GuWe', prefix: 'AIza' },
  'AWS access key id': { secret: 'AKIAQ3X7R2L9Z4T8W5N1', prefix: 'AKIA' },
  'AWS secret access key': { secret: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ4k9Lq2Xz', prefix: '' },
  'password in a postgres URL': { secret: 'postgres://admin:Pg5ecretW0rdQx7@db.internal:5432/app', prefix: '', body: 'Pg5ecretW0rdQx7' },
  'password in an https URL': { secret: 'https://deploy:Ht7psPassZq4Lw@git.example.com/repo.git', prefix: '', body: 'Ht7psPassZq4Lw' },
  'password holding / and @ in a postgres URL': { secret: 'postgres://admin:Pg5e/cr@tW0rdQx7@db.internal:5432/app', prefix: '', body: 'Pg5e/cr@tW0rdQx7' },
  'password on a command line': { secret: 'mysql -u root --password Hk7pQ2xLm9Zr4Tn prod', prefix: '', body: 'Hk7pQ2xLm9Zr4Tn' },
  'password in JSON quoted inside a string': { secret: '{\\"user\\":\\"bob\\",\\"password\\":\\"Jq4Wz8Lm2Rt6Yk\\"}', prefix: '', body: 'Jq4Wz8Lm2Rt6Yk' },
};

/** Every 8-character window of the secret's body. */
function windows(format: Format): string[] {
  const body = format.body ?? format.secret.slice(format.prefix.length);
  const out: string[] = [];
  for (let i = 0; i + 8 <= body.length; i++) out.push(body.slice(i, i + 8));
  return out;
}

/**
 * The text of the byte arrays a JSON file holds: base64 strings (a typed array in the codec's form) and lists of byte
 * values (a Buffer as JSON writes it, `"data":[104,105]`, and a typed array's `{"0":104,"1":105}`).
 */
function bytesIn(text: string): string[] {
  const out: string[] = [];
  for (const [, base64] of text.matchAll(/"([A-Za-z0-9+/]{12,}={0,2})"/g)) out.push(Buffer.from(base64!, 'base64').toString('latin1'));
  for (const [list] of text.matchAll(/\[\d{1,3}(?:,\d{1,3}){7,}\]|\{"0":\d{1,3}(?:,"\d+":\d{1,3}){7,}\}/g)) {
    out.push(Buffer.from((list!.match(/(?<=[[,:])\d{1,3}(?=[,\]}])/g) ?? []).map(Number)).toString('latin1'));
  }
  return out;
}

/** The files under `dir` holding part of the secret (also in the bytes of a byte array), with the part found. */
function leaks(dir: string, format: Format, skip: (path: string) => boolean = () => false): string[] {
  const parts = windows(format);
  const found: string[] = [];
  for (const file of filesUnder(dir)) {
    if (skip(file)) continue;
    const text = readFileSync(file, 'utf8');
    // JSON escapes '/' nowhere and '\n' as '\\n'; the bodies hold neither, so plain search suffices.
    const part = [text, ...bytesIn(text)].flatMap((t) => parts.filter((p) => t.includes(p)))[0];
    if (part !== undefined) found.push(`${file}: ${part}`);
  }
  return found;
}

// The cases run concurrently (below): a directory is removed at the end of the file, not of its test, which may
// still be writing while another test ends.
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function temp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bpf-redact-'));
  dirs.push(dir);
  return dir;
}

/** Packs what `make` returns, then (second step) packs it again changed, so deltas and a keyframe both hold it. */
class Packer extends BackpackNode {
  override post(backpack: BackpackHandle): string | undefined {
    const make = this.config['make'] as (round: number) => [string, unknown][];
    const round = ((backpack.unpack('round') as number | undefined) ?? 0) + 1;
    backpack.pack('round', round);
    for (const [key, value] of make(round)) backpack.pack(key, value);
    return round < 2 ? 'again' : undefined;
  }
}

class Emits extends BackpackNode {
  override post(): undefined {
    this.emitEvent(StreamEventType.CUSTOM, this.config['payload'] as Record<string, unknown>);
    return undefined;
  }
}

class Fails extends BackpackNode {
  override exec(): never {
    throw new Error(String(this.config['message']));
  }
}

/**
 * A node that puts `secret` in every place of a step that user data reaches: a key it reads and one it packs, the
 * values and tags it packs (and so the summary of the packed value), an error message of a failed attempt (retried),
 * the action it returns (no route takes it), and a question it asks a person.
 */
class Everywhere extends BackpackNode {
  override prep(backpack: BackpackHandle): unknown {
    return backpack.unpack(`lookup ${String(this.config['secret'])}`);
  }
  private attempts = 0;
  override async exec(): Promise<number> {
    if (++this.attempts === 1) throw new Error(`upstream refused ${String(this.config['secret'])}`);
    return this.attempts;
  }
  override async post(backpack: BackpackHandle): Promise<string> {
    const secret = String(this.config['secret']);
    backpack.pack(`key ${secret}`, { note: `say ${secret}`, [secret]: [secret, 1], password: secret }, { tags: [`tag ${secret}`] });
    backpack.pack('summary', `${'x'.repeat(70)} ${secret}`);
    if (this.config['ask'] === true) await this.interrupt({ question: `is ${secret} right?` });
    return `go ${secret}`;
  }
}

/** Runs {@link Everywhere} with `durability` (and the secret in the run's input), keyframe at every step. */
async function runEverywhere(secret: string, durability: 'never' | 'batch', ask = false): Promise<string> {
  const dataDir = temp();
  const flow = new Flow({ namespace: 'matrix' });
  const node = flow.addNode(Everywhere, { id: 'everywhere', secret, ask, maxRetries: 2 });
  // A route for another action: the secret action the node returns is a missing route (reported with the action).
  node.on('other', node);
  const result = await runFlow(flow, { dataDir, runId: 'r', durability, keyframeInterval: 1, input: { [`in ${secret}`]: secret } });
  expect(result.status).toBe(ask ? 'waiting' : 'completed');
  const types = new Set((await new EventStore({ dataDir, sessionKey: 'default', runId: 'r' }).readAll()).map((e) => e.type));
  const expected = ['backpack.unpacked', 'backpack.packed', 'node.retry', 'checkpoint.saved', ...(ask ? ['node.interrupted', 'run.waiting'] : ['node.completed', 'route.missing'])];
  for (const type of expected) expect(types).toContain(type);
  return dataDir;
}

async function runPacking(make: (round: number) => [string, unknown][]): Promise<string> {
  const dataDir = temp();
  const flow = new Flow({ namespace: 'matrix' });
  const node = flow.addNode(Packer, { id: 'packer', make });
  node.on('again', node);
  await runFlow(flow, { dataDir, runId: 'r', keyframeInterval: 1 });
  expect(statSync(join(dataDir, 'sessions/default/runs/r/checkpoint/2.json')).isFile()).toBe(true);
  return dataDir;
}

/** Puts `secret` somewhere and returns the directory written; `body` is the part no pattern's prefix marks. */
type Placement = (secret: string, body: string) => Promise<string>;

/** A class instance, as HTTP clients and SDKs hand them out, holding the secret in a field. */
class Credentials {
  readonly user = 'deploy';
  constructor(
    readonly note: string,
    readonly password: string,
  ) {}
}

/** Runs a flow whose one node emits `payload` in a custom event (objects that are not plain data reach events only). */
async function runEmitting(payload: Record<string, unknown>): Promise<string> {
  const dataDir = temp();
  const flow = new Flow({ namespace: 'matrix' });
  flow.addNode(Emits, { id: 'emits', payload });
  await runFlow(flow, { dataDir, runId: 'r' });
  const events = await new EventStore({ dataDir, sessionKey: 'default', runId: 'r' }).readAll();
  expect(events.find((e) => e.type === 'custom')?.redaction).toEqual({ containsSecrets: true });
  return dataDir;
}

/**
 * Runs a flow built by `build` (which puts the secret in a name or id): the run is refused (the flow, or the log at
 * the first event holding it), and nothing written holds the secret.
 */
async function runNamed(build: (flow: () => Flow) => Flow): Promise<string> {
  const dataDir = temp();
  let flow: Flow;
  try {
    flow = build(() => new Flow({ namespace: 'matrix' }));
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return dataDir;
  }
  await expect(runFlow(flow, { dataDir, runId: 'r', keyframeInterval: 1 })).rejects.toThrow(/secret-looking (nodeId|namespace|nodeName)/);
  return dataDir;
}

const backpack =
  (make: (secret: string, round: number) => [string, unknown][]): Placement =>
  (secret) =>
    runPacking((round) => make(secret, round));

const PLACEMENTS: Record<string, Placement> = {
  'backpack value (events, summaries, keyframes)': backpack((s, r) => [['note', r === 1 ? s : `${s} `]]),
  'embedded in longer text': backpack((s, r) => [['note', `the config says ${s} and more ${r}`]]),
  'cut short by the 80-character summary': backpack((s, r) => [['note', `${'x'.repeat(68 + r)} ${s}`]]),
  'object key': backpack((s, r) => [['table', { [s]: r, plain: 'ok' }]]),
  'right after a word and `_` (OPENAI_…), in a value and an object key': backpack((s, r) => [['note', `OPENAI_${s} ${r}`], ['table', { [`k_${s}`]: r }]]),
  'in JSON quoted inside a string (a value and an error message)': async (secret) => {
    const quoted = JSON.stringify(JSON.stringify({ note: secret, n: 1 }));
    const dataDir = await runPacking((round) => [['note', `tool said ${quoted} ${round}`]]);
    const flow = new Flow({ namespace: 'matrix' });
    flow.addNode(Fails, { id: 'fails', message: `tool said ${quoted}` });
    await expect(runFlow(flow, { dataDir, runId: 'failed' })).rejects.toThrow();
    return dataDir;
  },
  'Map key': backpack((s, r) => [['lookup', new Map<string, number>([[s, r]])]]),
  'Map value under a secret-named Map key': backpack((s, r) => [['settings', new Map<string, string>([['password', `${s}${r}`]])]]),
  'Set member': backpack((s, r) => [['members', new Set([s, `m${r}`])]]),
  'nested deep in arrays and objects': backpack((s, r) => [['deep', { a: [{ b: { c: [r, { d: s }] } }] }]]),
  'value under a secret-named backpack key (event summary)': backpack((s, r) => [['openaiApiKey', `${s}${r}`], ['password', `${s}${r}`]]),
  "every place of a step with durability 'never' (the event log's quick path)": (secret) => runEverywhere(secret, 'never'),
  "every place of a step with durability 'batch', and a question to a person": (secret) => runEverywhere(secret, 'batch', true),
  'custom event payload': async (secret) => {
    const dataDir = temp();
    const flow = new Flow({ namespace: 'matrix' });
    flow.addNode(Emits, { id: 'emits', payload: { message: `calling with ${secret}`, [secret]: true } });
    await runFlow(flow, { dataDir, runId: 'r' });
    const events = await new EventStore({ dataDir, sessionKey: 'default', runId: 'r' }).readAll();
    const custom = events.find((e) => e.type === 'custom');
    expect(custom?.redaction).toEqual({ containsSecrets: true });
    return dataDir;
  },
  'class instance, error with headers and toJSON object in an event payload': (secret, body) =>
    runEmitting({
      creds: new Credentials(`uses ${secret}`, body),
      error: Object.assign(new Error('request failed'), { config: { headers: { Authorization: body, 'x-note': secret } } }),
      later: { toJSON: () => ({ apiKey: body, text: secret }) },
    }),
  'URL object in an event payload': (secret, body) => {
    const url = new URL('https://deploy@api.example.com/v1');
    url.password = secret;
    url.searchParams.set('access_token', body);
    return runEmitting({ endpoint: url, endpoints: [url] });
  },
  'Map with keys of mixed types (its encoded pairs), the bare secret under a secret-named key': (secret, body) =>
    runPacking((round) => [['settings', new Map<unknown, unknown>([['password', `${body}${round}`], [round, 'x'], [secret, true]])]]),
  'byte array holding the secret as text (events, keyframes)': backpack((s, r) => [['file', new TextEncoder().encode(`config ${r}:\n${s}\n`)]]),
  'Buffer and Uint8Array in an event payload': (secret) => runEmitting({ file: Buffer.from(`config:\n${secret}\n`), copy: new TextEncoder().encode(secret) }),
  'node id': (secret) => runNamed((flow) => {
    const f = flow();
    f.addNode(Emits, { id: secret, namespaceSegment: 'n', payload: {} });
    return f;
  }),
  'flow namespace': (secret) => runNamed(() => {
    const f = new Flow({ namespace: secret });
    f.addNode(Emits, { id: 'emits', payload: {} });
    return f;
  }),
  'node class name': (secret) => runNamed((flow) => {
    const Named = { [secret]: class extends Emits {} }[secret]!;
    const f = flow();
    f.addNode(Named, { id: 'named', payload: {} });
    return f;
  }),
  'projection (a failed run quoting the secret)': async (secret) => {
    const dataDir = temp();
    const flow = new Flow({ namespace: 'matrix' });
    flow.addNode(Fails, { id: 'fails', message: `upstream refused ${secret}` });
    await expect(runFlow(flow, { dataDir, runId: 'r' })).rejects.toThrow();
    expect(readFileSync(join(dataDir, 'sessions/default/runs/r/projections/run.meta.json'), 'utf8')).toContain('[REDACTED]');
    return dataDir;
  },
  'memory items and index': async (secret) => {
    const dataDir = temp();
    const memory = new MemoryStore({ dataDir });
    await memory.write({ id: 'm1', content: `remember ${secret} for later`, keywords: [secret, 'deploy'], metadata: { [secret]: 1, note: secret }, createdAt: 1 });
    await memory.close();
    return dataDir;
  },
  'recorded flow config': async (secret) => {
    const dataDir = temp();
    const flowFile = join(temp(), 'flow.json');
    writeFileSync(flowFile, JSON.stringify({ version: 1, namespace: 'f', nodes: [{ id: 'a', type: 'X', params: { note: `use ${secret}`, headers: { [secret]: secret } } }], edges: [] }));
    const newRun = await openNewRun({ dataDir, runId: 'r' });
    await recordRunFlow(newRun, { v: 1, flow: { kind: 'config' }, modules: [] }, JSON.parse(readFileSync(flowFile, 'utf8')));
    await newRun.release();
    return dataDir;
  },
  'context engine frames (quoting a .env file) and metadata': async (secret) => {
    const workspace = temp();
    writeFileSync(join(workspace, '.env'), `OPENAI_API_KEY=${secret}\n`);
    writeFileSync(join(workspace, 'app.ts'), 'export const app = 1;\n');
    const engine = await ContextEngine.open(workspace);
    await engine.scan();
    expect((await engine.listNodes()).map((n) => n.path)).not.toContain('.env');
    await engine.registerAgent({ agentId: 'writer', role: 'writer' });
    await engine.putFrame('app.ts', { type: 'notes', content: `the .env holds:\nOPENAI_API_KEY=${secret}\nand ${secret}`, metadata: { source: secret, [secret]: 1 } }, 'writer');
    await engine.close();
    return join(workspace, '.merkle');
  },
};

// Each case writes its own temp directories and reads only them; most of a case's time is waiting on fsync, so the
// cases of a format overlap (vitest's maxConcurrency, 5 at a time) instead of waiting in turn.
describe.each(Object.entries(FORMATS))('%s', (_name, format) => {
  it.concurrent.each(Object.keys(PLACEMENTS))('never reaches the disk: %s', async (placement) => {
    const dir = await PLACEMENTS[placement]!(format.secret, format.body ?? format.secret.slice(format.prefix.length));
    expect(leaks(dir, format, (path) => path.endsWith('flow.json') && !path.includes('sessions'))).toEqual([]);
  });
});
