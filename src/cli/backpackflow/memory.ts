/** The `memory` commands: search and add items of the long-term memory shared by runs. */
import { resolve } from 'node:path';
import { Command } from 'commander';
import { MemoryStore, newMemoryId, type Memory } from '../../store/index.js';
import { PostgresMemoryStore } from '../../store/postgres/memory-store.js';
import { cliPostgresStore } from './run-store.js';
import { nonNegativeInteger } from './arguments.js';
import { colors as c, print, type CommonOptions } from './output.js';
import { common } from './common-options.js';
import { storeErrors } from './store-errors.js';
import { terminalText as t } from '../../events/terminal-text.js';

/** The memory `options` select: the data directory's, or the database's with `--database-url`. */
function memoryOf(options: CommonOptions): Memory {
  if (!options.databaseUrl) return new MemoryStore({ dataDir: resolve(options.dataDir) });
  return new PostgresMemoryStore(cliPostgresStore(options, 'memory'));
}

/** The `memory` command group. */
export function memoryCommand(): Command {
  const memory = new Command('memory').description('search and add long-term memory');

  common(memory.command('search <query>').description('the items best matching a query (BM25), best first'))
    .option('-k, --top <k>', 'how many', nonNegativeInteger('--top'), 5)
    .action(async (query: string, options: CommonOptions & { top: number }) => {
      const store = memoryOf(options);
      const hits = await store.searchScored(query, options.top);
      const json = hits.map((h) => ({ id: h.item.id, score: h.score, content: h.item.content, keywords: h.item.keywords ?? [], metadata: h.item.metadata ?? {} }));
      print(options, json, () =>
        hits.length === 0
          ? `no memory matches '${t(query)}'`
          : hits.map((h, i) => `${i + 1}. ${c.dim(`[${h.score.toFixed(3)}] ${t(h.item.id)}`)}\n   ${t(h.item.content, { continuation: '   ' })}`).join('\n'),
      );
    });

  common(memory.command('add <text>').description('store a memory item'))
    .option('--keywords <words...>', 'extra keywords to index the item under')
    // A new id each time makes a retry of an add that was killed before it answered store a second copy; with an id
    // of the caller's, adding again replaces the item (an add is then safe to retry).
    .option('--id <id>', 'store the item under this id (adding again with the same id replaces it: safe to retry)')
    .action(async (text: string, options: CommonOptions & { keywords?: string[]; id?: string }) => {
      const store = memoryOf(options);
      const item = { id: options.id ?? newMemoryId(), content: text, ...(options.keywords ? { keywords: options.keywords } : {}), metadata: { source: 'cli', session: options.session }, createdAt: Date.now() };
      // An id that is not one (or looks like a secret) is bad usage: exit 2, as for a run id.
      await storeErrors(() => store.write(item));
      // As stored: redacted.
      const stored = (await store.get(item.id)) ?? item;
      await store.close();
      print(options, stored, () => `added memory ${c.bold(t(stored.id))}`);
    });

  return memory;
}
