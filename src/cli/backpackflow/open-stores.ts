/**
 * The run stores this process opened (see run-store.ts), kept apart from the store modules so that closing them at
 * the end of a command loads nothing when the command opened none (its help, `--version`).
 */
import type { RunStore } from '../../store/run-store.js';

/** Opened stores by selection (`files:<dir>` or `pg:<url>`). */
export const openedStores = new Map<string, RunStore>();

/** Closes the stores this process opened (their connections, so that the process can exit). */
export async function closeCliStore(): Promise<void> {
  const stores = [...openedStores.values()];
  openedStores.clear();
  for (const store of stores) await store.close();
}
