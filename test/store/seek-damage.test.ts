/**
 * Found by an adversarial review of the chain that proves line numbers (audit-chain2): edits the index-seeking reader
 * or the batch marker once let through in silence. Each now gives an error or a warning naming the file.
 */
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EventStore } from '../../src/store/index.js';
import { makeEvent, rewriteAsChainV1, tempDirAndWarnings } from './helpers.js';

const state = tempDirAndWarnings();

/** A closed log of 30 events in batches of 3 (an index entry every 7 lines), in chain format `format`. */
async function log(format: 'v1' | 'v2' = 'v2'): Promise<EventStore> {
  const open = () => new EventStore({ dataDir: state.tmp.dir, sessionKey: 's', runId: 'r', indexInterval: 7 });
  const store = open();
  for (let b = 0; b < 10; b++) await store.appendBatch([1, 2, 3].map((i) => makeEvent('r', b * 3 + i)));
  await store.close();
  if (format === 'v1') await rewriteAsChainV1(store.paths.events, 's', 'r');
  return open();
}

/** The log's lines (each without its newline) given to `edit`, written back. */
function editLines(store: EventStore, edit: (lines: string[]) => string[]): void {
  const lines = readFileSync(store.paths.events, 'utf8').split('\n').slice(0, -1);
  writeFileSync(store.paths.events, edit(lines).map((line) => `${line}\n`).join(''));
}

describe('a read that starts past every batch it can check', () => {
  it('a newline turned into a space before the last line: a page at the last line is an error, not an empty page (no index)', async () => {
    const store = await log();
    rmSync(store.paths.index);
    const text = readFileSync(store.paths.events, 'utf8');
    const at = text.indexOf('\n', text.indexOf('"seq":5,'));
    writeFileSync(store.paths.events, `${text.slice(0, at)} ${text.slice(at + 1)}`);
    await expect(store.readPage(5, 29)).rejects.toThrow(/events\.jsonl: lines \d+-\d+ do not match the chain hash on line \d+: the log was changed there/);
  });

  it('a line removed between the batch that proves an index entry and the page: an error, not an empty page', async () => {
    const store = await log();
    // Entries at lines 7, 14 and 21 only (the one at 28 dropped, as an index cut short would): a read at 29 starts
    // at 21, proves it with batch 18-20, and passes over batches 21-23 and 24-26, one of which lost a line.
    const index = readFileSync(store.paths.index, 'utf8').split('\n').filter((line) => line !== '' && !line.startsWith('{"line":28,'));
    writeFileSync(store.paths.index, index.map((line) => `${line}\n`).join(''));
    editLines(store, (lines) => [...lines.slice(0, 25), ...lines.slice(26)]);
    await expect(store.readPage(5, 29)).rejects.toThrow(/do not match the chain hash/);
  });
});

describe('a read from an index entry into a log that ends without a chain hash', () => {
  it('warns about the lines after the last chain hash, and calls no intact batch changed', async () => {
    // Found on review: the read proved its entry with the batch before it, then found no sealed line after it, and
    // checked the log's last batch with where the proving batch began, not ended: a false "do not match" error.
    const store = await log();
    const text = readFileSync(store.paths.events, 'utf8');
    const at = text.lastIndexOf(',"chain":"');
    writeFileSync(store.paths.events, `${text.slice(0, at)},"chaim":"${text.slice(at + 10)}`); // same size: no seal
    const warnings: string[] = [];
    expect(await store.readPage(5, 29, { onWarning: (m) => warnings.push(m) })).toEqual([]);
    expect(warnings).toEqual([expect.stringContaining('lines 28-30 come after its last chain hash (line 27)')]);
  });
});

describe('a writer continuing a log whose first line was changed', () => {
  it('refuses it (the first line tells the chain format) and changes nothing', async () => {
    const store = await log();
    const text = readFileSync(store.paths.events, 'utf8');
    writeFileSync(store.paths.events, text.replace('"payload":{"n":1}', '"payload":{"n":7}'));
    const before = readFileSync(store.paths.events);
    const writer = new EventStore({ dataDir: state.tmp.dir, sessionKey: 's', runId: 'r', durability: 'never' });
    await expect(writer.appendBatch([makeEvent('r', 31)])).rejects.toThrow(/events\.jsonl: its first line does not match its chain hash: the log was changed there\. .*it cannot be continued/);
    await writer.close();
    expect(readFileSync(store.paths.events).equals(before)).toBe(true);
  });
});

describe('a log in chain format v1', () => {
  it('a batch removed before the page is an error, even when the index was rebuilt to match', async () => {
    const store = await log('v1');
    editLines(store, (lines) => [...lines.slice(0, 6), ...lines.slice(9)]);
    // The close record and the index made to match the edited log, as one who edits it by hand would.
    writeFileSync(store.paths.pendingBatch, JSON.stringify({ gen: 99, start: 0, end: 0, closed: statSync(store.paths.events).size }).padEnd(96));
    await store.buildIndex(7);
    expect(readFileSync(store.paths.index, 'utf8')).not.toBe('');
    await expect(store.readPage(5, 20)).rejects.toThrow(/do not match the chain hash/);
  });
});

describe('a batch marker naming a batch in flight where the log holds sealed lines', () => {
  it('hides nothing, is warned about, fails verify, and the next writer refuses the log without cutting it', async () => {
    const store = await log();
    const size = statSync(store.paths.events).size;
    const lines = readFileSync(store.paths.events, 'utf8').split('\n');
    const start = lines.slice(0, 15).join('\n').length + 1; // a batch boundary in the middle of the log
    writeFileSync(store.paths.pendingBatch, JSON.stringify({ gen: 1000, start, end: size + 1 }).padEnd(96));
    const warnings: string[] = [];
    expect(await store.countEvents({ onWarning: (m) => warnings.push(m) })).toBe(30);
    expect(warnings).toEqual([expect.stringContaining(`events.pending names a batch in flight from byte ${start}`)]);
    expect((await store.readPage(5, 25)).map((e) => e.seq)).toEqual([26, 27, 28, 29, 30]);
    const verified = await store.verify();
    expect(verified.ok).toBe(false);
    expect(verified.problem).toMatch(/events\.pending names a batch in flight .*the marker was changed or damaged/);
    const writer = new EventStore({ dataDir: state.tmp.dir, sessionKey: 's', runId: 'r', durability: 'never' });
    await expect(writer.appendBatch([makeEvent('r', 31)])).rejects.toThrow(/events\.pending names a batch in flight .*cannot be continued/);
    await writer.close();
    expect(statSync(store.paths.events).size).toBe(size);
  });
});
