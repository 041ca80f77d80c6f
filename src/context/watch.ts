import { relative, sep } from 'node:path';
import type { FSWatcher } from 'chokidar';
import type { ContextEngine, ScanReport } from './engine.js';
import { DEFAULT_IGNORED_NAMES, STORE_DIR } from './ignore-rules.js';

/** What a watch reports after each rescan that changed something. */
export interface WatchEvent {
  /** The new root NodeID. */
  readonly root: string;
  /** Paths whose NodeID changed, appeared or disappeared (ancestors included). */
  readonly changedPaths: readonly string[];
  /** The filesystem paths (workspace-relative) that triggered the rescan. */
  readonly triggers: readonly string[];
}

/** Options for `ContextEngine.watch`. */
export interface WatchOptions {
  /** Quiet period before a rescan (default 50 ms). */
  readonly debounceMs?: number;
  /** Called when a rescan fails (default: ignored). */
  readonly onError?: (error: unknown) => void;
}

/** A running watch. */
export interface ContextWatcher {
  /** Stops watching and waits for a rescan in progress. */
  close(): Promise<void>;
}

/**
 * Watches the workspace with chokidar and, after each quiet period, rescans the directories holding the changed
 * paths (the stat cache keeps this cheap), then reports changed nodes. Scans never overlap.
 */
export async function startWatch(
  engine: ContextEngine,
  onChange: (event: WatchEvent) => void,
  options: WatchOptions = {},
): Promise<ContextWatcher> {
  const root = engine.workspaceRoot;
  const skipped = new Set([STORE_DIR, ...DEFAULT_IGNORED_NAMES]);
  // Loaded on demand: watching is opt-in, and commands that never watch should not pay for chokidar.
  const { watch: chokidarWatch } = await import('chokidar');
  const watcher: FSWatcher = chokidarWatch(root, {
    ignoreInitial: true,
    // A link is a leaf of the workspace (the scan records it as a link): never a way into the folder it points to.
    followSymlinks: false,
    // A cheap pre-filter; the scan applies the full ignore rules.
    ignored: (path: string) => relative(root, path).split(sep).some((part) => skipped.has(part)),
  });
  await new Promise<void>((resolve, reject) => {
    watcher.once('ready', resolve);
    watcher.once('error', reject);
  });
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const flush = () => {
    timer = undefined;
    const triggers = [...pending].sort();
    pending.clear();
    running = running.then(async () => {
      try {
        const report: ScanReport = await engine.scan({ paths: triggers });
        if (report.changed && report.changedPaths.length > 0) onChange({ root: report.root, changedPaths: report.changedPaths, triggers });
      } catch (error) {
        options.onError?.(error);
      }
    });
  };
  watcher.on('all', (_event, path) => {
    pending.add(relative(root, path).split(sep).join('/'));
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(flush, options.debounceMs ?? 50);
  });
  return {
    close: async () => {
      if (timer !== undefined) clearTimeout(timer);
      await watcher.close();
      await running;
    },
  };
}
