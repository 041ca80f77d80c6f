import { startupSnapshot } from 'node:v8';

/**
 * Runs `reset` in each process started from a V8 startup snapshot (`node --snapshot-blob`, a single executable
 * application with `useSnapshot`) that was built with the calling module loaded. Such a process starts with the heap
 * the snapshot saved, so what a module drew or read about its process while the snapshot was built (random bytes,
 * the id prefix, the host name, the boot id and pid namespace that locks record) would be every restored process's.
 * Nothing happens in a process that is not building a snapshot. The callbacks run in the order they were registered:
 * one that an application registered before it loaded this package runs before these renewals.
 */
export function renewAfterSnapshot(reset: () => void): void {
  if (startupSnapshot.isBuildingSnapshot()) startupSnapshot.addDeserializeCallback(reset);
}
