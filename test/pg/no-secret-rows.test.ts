/**
 * Every row a run and a LangGraph thread leave in PostgreSQL, dumped as text, holds none of the secrets the user's
 * own redaction names (secretKeys, patterns) or the built-in catalogue knows (review s32: the input `{ pin: 90817263 }`
 * with secretKeys ['pin'] was in clear in the start checkpoint's delta in backpackflow.event_batches).
 */
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { BackpackflowSaver } from '../../src/langgraph/index.js';
import { BackpackNode, Flow } from '../../src/nodes/index.js';
import { runFlow } from '../../src/runtime/index.js';
import { databaseForFile } from '../support/pg.js';

const redaction = { secretKeys: ['pin'], patterns: [/\bACME-[0-9]{6}\b/] };
const DRF = '9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b';

const db = databaseForFile();

async function dump(): Promise<string> {
  const tables = await db.sql<{ table_name: string }[]>`select table_name from information_schema.tables where table_schema = 'backpackflow' and table_type = 'BASE TABLE'`;
  let out = '';
  for (const { table_name } of tables) {
    const rows = await db.sql.unsafe(`select t::text as row from backpackflow.${table_name} t`);
    for (const r of rows) out += `${table_name}: ${r.row as string}\n`;
  }
  return out;
}

class Packer extends BackpackNode {
  override post(backpack: { pack: (k: string, v: unknown) => void }): string {
    backpack.pack('record', { pin: 48213579, memo: 'order ACME-123456', trace: `Authorization: Token ${DRF}` });
    return 'default';
  }
}
class Failer extends BackpackNode {
  override exec(): never {
    throw new Error('upstream refused ACME-654321 for pin=7777');
  }
}

describe('rows in PostgreSQL', () => {
  it('a run with the user redaction: events, keyframes, projection', async () => {
    const flow = new Flow({ namespace: 'p' });
    const a = flow.addNode(Packer, { id: 'packer' });
    const b = flow.addNode(Failer, { id: 'failer' });
    a.next(b);
    await runFlow(flow, { store: db.store, runId: 'probe', keyframeInterval: 1, redaction, input: { pin: 90817263, ticket: 'ACME-111111' } }).catch(() => undefined);
    const text = await dump();
    expect(text).toContain('probe');
    for (const secret of ['48213579', 'ACME-123456', DRF, 'ACME-654321', 'ACME-111111', '90817263']) expect(text, secret).not.toContain(secret);
  });

  it('a LangGraph thread with the user redaction: channel values, bytes, metadata, writes', async () => {
    const saver = new BackpackflowSaver({ store: db.store, redaction });
    const versions = { pin: 1, memo: 1, blob: 1 };
    const values = { pin: 58203917, memo: 'ACME-222222', blob: new TextEncoder().encode('raw ACME-333333 text') };
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: values, channel_versions: versions };
    const config = await saver.put({ configurable: { thread_id: 'lg-probe', checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {}, note: 'ACME-444444' } as never, versions);
    await saver.putWrites(config, [['memo', 'ACME-555555'], ['blob', new TextEncoder().encode('ACME-666666')]], 'task-1');
    await saver.close();
    const text = await dump();
    expect(text).toContain('lg-probe');
    for (const secret of ['58203917', 'ACME-222222', 'ACME-333333', 'ACME-444444', 'ACME-555555', 'ACME-666666']) expect(text, secret).not.toContain(secret);
  });
});
