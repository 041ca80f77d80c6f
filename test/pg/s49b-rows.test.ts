/**
 * Review s49b: the formats the walk misses (see test/redact/s49b-walk-formats.test.ts) reach every PostgreSQL sink alike: the
 * run's event batches and keyframes, a LangGraph thread's rows, and the memory store's items. Every row of the
 * backpackflow schema is dumped as text and searched.
 */
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { runFlow } from '../../src/runtime/index.js';
import { PostgresMemoryStore } from '../../src/store/postgres/memory-store.js';
import { databaseForFile } from '../support/pg.js';

const db = databaseForFile();

/** Every row of the backpackflow schema, as text, with its table. */
async function dump(): Promise<{ table: string; row: string }[]> {
  const tables = await db.sql<{ table_name: string }[]>`select table_name from information_schema.tables where table_schema = 'backpackflow' and table_type = 'BASE TABLE'`;
  const out: { table: string; row: string }[] = [];
  for (const { table_name } of tables) {
    const rows = await db.sql.unsafe(`select t::text as row from backpackflow.${table_name} t`);
    for (const r of rows) out.push({ table: table_name, row: r.row as string });
  }
  return out;
}

/** The tables with a row that holds `needle`. */
function tablesHolding(rows: { table: string; row: string }[], needle: string): string[] {
  return [...new Set(rows.filter((r) => r.row.includes(needle)).map((r) => r.table))].sort();
}

const HTTP_PASSWORD = 'Tr0ub4dor-and-3-horses';
const JWK_D = 'Hndv7ZZjs_ke8o9zXYo3iq-Yr8SewI5vrqd0pAvEPqg';
const HEADER_KEY = 'a8f5f167f44f4964e6c998dee827110c';
// Other secrets for the LangGraph thread and the memory item, so that each test finds only its own rows.
const LG_PASSWORD = 'Tr0ub4dor-and-4-ponies';
const LG_HEADER_KEY = 'b9e6d278055a5075f7da09eff938221d';
const MEM_PASSWORD = 'Tr0ub4dor-and-5-mules';
const MEM_JWK_D = 'Iowe8AAkt_lf9p0aYZp4jr-Zs9TfxJ6wsre1qBwFQrh';

class Packer extends BackpackNode {
  override post(backpack: { pack: (k: string, v: unknown) => void }): string {
    backpack.pack('request', { hostname: 'api.example.com', auth: `deploy:${HTTP_PASSWORD}`, rawHeaders: ['Host', 'api.example.com', 'X-Api-Key', HEADER_KEY] });
    backpack.pack('signer', { kty: 'EC', crv: 'P-256', x: 'zCQ5BPHPCLZYgdpo1n-x_90P2Ij52d53YVwTh3ZdiMo', y: 'pDfQTUx0-OiZc5ZuKMcA7v2Q7ZPKsQwzB58bft0JTko', d: JWK_D });
    return 'default';
  }
}

describe('review s49b: rows in PostgreSQL', () => {
  it('M-1/M-2/M-3 a run on the Postgres store: no row of events, batches or keyframes holds the secrets', async () => {
    const flow = new Flow({ namespace: 'p' });
    flow.addNode(Packer, { id: 'packer' });
    await runFlow(flow, { store: db.store, runId: 'probe-49b', keyframeInterval: 1 });
    const text = await dump();
    expect(text.some((r) => r.row.includes('probe-49b'))).toBe(true);
    expect({ http: tablesHolding(text, HTTP_PASSWORD), jwk: tablesHolding(text, JWK_D), header: tablesHolding(text, HEADER_KEY) }).toEqual({ http: [], jwk: [], header: [] });
  });

  it('M-1/M-3 a LangGraph thread (channel values, writes, metadata): no row holds the secrets', async () => {
    const saver = new BackpackflowSaver({ store: db.store });
    const versions = { request: 1 };
    const values = { request: { hostname: 'api.example.com', auth: `deploy:${LG_PASSWORD}` } };
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
    const config = await saver.put({ configurable: { thread_id: 'lg-probe-49b', checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} } as never, versions);
    await saver.putWrites(config, [['request', { rawHeaders: ['X-Api-Key', LG_HEADER_KEY] }]], 'task-1');
    await saver.close();
    const text = await dump();
    expect(text.some((r) => r.row.includes('lg-probe-49b'))).toBe(true);
    expect({ http: tablesHolding(text, LG_PASSWORD), header: tablesHolding(text, LG_HEADER_KEY) }).toEqual({ http: [], header: [] });
  });

  it('M-1/M-2 a Postgres memory item (metadata): no row holds the secrets', async () => {
    const memory = new PostgresMemoryStore(db.store);
    await memory.write({ id: 'm-49b', content: 'how we call the billing API', metadata: { request: { auth: `deploy:${MEM_PASSWORD}` }, signer: { kty: 'EC', d: MEM_JWK_D } } });
    const text = await dump();
    expect(text.some((r) => r.row.includes('m-49b'))).toBe(true);
    expect({ http: tablesHolding(text, MEM_PASSWORD), jwk: tablesHolding(text, MEM_JWK_D) }).toEqual({ http: [], jwk: [] });
  });
});
