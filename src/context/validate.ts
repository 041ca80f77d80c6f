import { existsSync, lstatSync } from 'node:fs';
import { systemProbe } from '../fs/index.js';
import type { HashBackend } from './hash.js';
import type { IgnoreRules } from './ignore-rules.js';
import { displayPath } from './paths.js';
import type { DirStat } from './listing.js';
import { scanWorkspace } from './scan.js';
import { own, referencedFrames, type StoreState } from './state.js';
import type { MerkleStore } from './store.js';
import { Tree, leafNodeId, storedRacyInstant } from './tree.js';

/** Result of `validate`: `ok` is false when any error was found. Warnings do not fail validation. */
export interface ValidationReport {
  readonly ok: boolean;
  readonly errors: string[];
  readonly warnings: string[];
}

/** What {@link validateStore} checks. */
export interface ValidateInput {
  readonly store: MerkleStore;
  readonly backend: HashBackend;
  readonly workspaceRoot: string;
  readonly rules: IgnoreRules;
}

/**
 * Verifies the whole store without writing: tree checksum and every NodeID re-derived; every frame in every frame
 * set read and verified against its id and its entry; heads, stale marks and the basis index referencing existing
 * frames; agents readable; no committed frame file left unreferenced (see `checkOrphans`); both journals present and
 * intact up to their committed length, and they, their bases and their witnesses agreeing (a damaged, missing or
 * older file lost acknowledged changes: an error, see `journal.ts`). Warns about a
 * workspace changed since the last scan, leftovers of interrupted writes, bytes after the last committed state
 * journal entry (an append a crash cut short before it was acknowledged) and stale heads.
 */
export async function validateStore(input: ValidateInput): Promise<ValidationReport> {
  const errors: string[] = [];
  const warnings: string[] = [];
  const attempt = <T>(what: () => T): T | undefined => {
    try {
      return what();
    } catch (error) {
      errors.push((error as Error).message);
      return undefined;
    }
  };

  const stored = attempt(() => input.store.readTree());
  const tree = stored?.tree;
  if (stored === undefined && errors.length === 0) warnings.push("workspace not scanned yet; run 'backpackflow context scan'");
  if (stored?.damage !== undefined) errors.push(`${stored.damage}; run 'backpackflow context scan' to rebuild the tree from the workspace`);
  if (tree !== undefined) {
    checkTreeIds(tree, input.backend, errors);
    let rescan: Awaited<ReturnType<typeof scanWorkspace>> | undefined;
    try {
      rescan = await scanWorkspace({ workspaceRoot: input.workspaceRoot, rules: input.rules, backend: input.backend, previous: tree, racyFromMs: storedRacyInstant(tree.basis, stored?.writtenMs) });
    } catch (error) {
      errors.push((error as Error).message);
    }
    if (rescan !== undefined) warnings.push(...rescan.warnings);
    if (rescan?.changed && rescan.tree.rootId !== tree.rootId) {
      warnings.push(`workspace changed since the last scan (root would be ${rescan.tree.rootId}); run 'backpackflow context scan'`);
    } else if (rescan?.changed) {
      // Same contents, other stats (a copied or touched workspace): only the stat cache is stale, and scans re-read.
      warnings.push("the files' stats changed since the last scan, their contents did not (a copied or touched workspace): 'backpackflow context scan' refreshes the stat cache");
    }
  }

  const read = attempt(() => input.store.readStateChecked());
  const state = read?.state;
  if (read?.damage !== undefined) {
    errors.push(`${read.damage}; 'backpackflow context repair' continues from the state that survives (writes are refused until then)`);
  }
  const agents = attempt(() => input.store.readAgents()) ?? {};
  if (state !== undefined) checkState(state, tree, agents, input.store, errors, warnings);
  if (state !== undefined) checkOrphans(state, input.store, errors, warnings);
  return { ok: errors.length === 0, errors, warnings };
}

function checkTreeIds(tree: Tree, backend: HashBackend, errors: string[]): void {
  const leaves = [];
  const dirs = new Map<string, DirStat>();
  for (const node of tree.records()) {
    if (node.kind === 'dir') dirs.set(node.path, node);
    else leaves.push(node);
  }
  // Leaf ids are re-derived from path and content hash; directory ids from the rebuilt children.
  const rebuilt = Tree.build(
    leaves.map((leaf) => ({ ...leaf, nodeId: leafNodeId(leaf.kind, leaf.path, leaf.contentHash, backend) })),
    dirs,
    backend,
  );
  for (const node of tree.records()) {
    const expected = rebuilt.get(node.path)?.nodeId;
    if (expected !== node.nodeId) errors.push(`tree: node '${displayPath(node.path)}' has id ${node.nodeId}, expected ${expected ?? 'none'}`);
  }
}

function checkState(
  state: Readonly<StoreState>,
  tree: Tree | undefined,
  agents: Record<string, unknown>,
  store: MerkleStore,
  errors: string[],
  warnings: string[],
): void {
  const known = new Map<string, string>();
  const seqs = new Set<number>();
  for (const [path, entries] of Object.entries(state.frames)) {
    for (const entry of entries) {
      known.set(entry.frameId, path);
      if (seqs.has(entry.seq) || entry.seq > state.seq) errors.push(`state: frame ${entry.frameId} has a duplicate or future seq ${entry.seq}`);
      seqs.add(entry.seq);
      try {
        const frame = store.readFrame(entry.frameId);
        if (frame.path !== path || frame.type !== entry.type || frame.agentId !== entry.agentId || frame.nodeId !== entry.nodeId) {
          errors.push(`state: entry of frame ${entry.frameId} under '${displayPath(path)}' does not match the stored frame`);
        }
      } catch (error) {
        errors.push((error as Error).message);
      }
      if (!(entry.agentId in agents)) warnings.push(`frame ${entry.frameId} was written by agent '${entry.agentId}', which is no longer registered`);
    }
  }
  for (const [path, heads] of Object.entries(state.heads)) {
    if (tree !== undefined && tree.get(path) === undefined) warnings.push(`heads on '${displayPath(path)}', which is no longer in the tree`);
    for (const [type, id] of Object.entries(heads)) {
      const entry = own(state.frames, path)?.find((e) => e.frameId === id);
      if (entry === undefined || entry.type !== type) errors.push(`state: head '${type}' of '${displayPath(path)}' points to ${id}, not in that node's frames`);
    }
  }
  for (const [path, types] of Object.entries(state.stale)) {
    for (const type of types) {
      if (own(own(state.heads, path), type) === undefined) errors.push(`state: stale mark '${type}' on '${displayPath(path)}' has no head`);
      else warnings.push(`head '${type}' of '${displayPath(path)}' is stale; run 'backpackflow context regenerate ${displayPath(path)}'`);
    }
  }
  for (const [basis, ids] of Object.entries(state.basis)) {
    for (const id of ids) {
      if (!known.has(id)) {
        errors.push(`basis index: ${basis} lists frame ${id}, which is in no frame set`);
        continue;
      }
      try {
        if (store.readFrame(id).basis.hash !== basis) errors.push(`basis index: frame ${id} is listed under ${basis} but has another basis`);
      } catch {
        // Already reported above.
      }
    }
  }
}

/**
 * Files under `frames/` that no frame set references. A final frame file is renamed into place only after the state
 * journal entry referencing it is durable (see `MerkleStore.stageFrames`), so an unreferenced one is the trace of a
 * committed transaction whose journal entry was lost since (a damaged or cut journal): an error, and the file must
 * be kept. A temp file (`<FrameID>.json.<pid>.<random>.tmp`) of a process that is still running is a write in
 * progress, and is not judged; of a dead one, it is an unfinished write: of a committed frame (referenced, final
 * missing) that frame's only copy, to keep; otherwise a write that never committed, safe to delete.
 *
 * Validate takes no lock, and writers run meanwhile: `state` was read before the files are listed, so a writer may
 * have committed and renamed frames it does not hold. Files are judged against the state read again after the
 * listing (`store.readStateChecked`), which holds every frame whose final file was listed (its entry was durable
 * before its rename, which came before the listing).
 */
function checkOrphans(state: Readonly<StoreState>, store: MerkleStore, errors: string[], warnings: string[]): void {
  const files = store.frameFiles((message) => errors.push(message));
  const referenced = referencedFrames(state);
  let after: { referenced: Set<string>; damage: string | undefined } | undefined;
  const current = (): NonNullable<typeof after> => {
    if (after === undefined) {
      try {
        const read = store.readStateChecked();
        after = { referenced: referencedFrames(read.state), damage: read.damage };
      } catch {
        after = { referenced, damage: undefined }; // unreadable now: judged by the first read (its error is reported)
      }
    }
    return after;
  };
  for (const { file, name } of files) {
    const id = name.slice(0, 64);
    if (name.endsWith('.json') && name.length === 69) {
      if (referenced.has(id) || current().referenced.has(id)) continue;
      const { damage } = current();
      const cut = damage === undefined ? '' : ` (${damage})`;
      errors.push(`frame file ${file} is referenced by no frame set: the state journal entry that committed it was lost${cut}; keep the file ('backpackflow context repair' moves it out of frames/, into a folder of its own)`);
      continue;
    }
    const writer = tempFileWriter(name, id);
    if (writer !== undefined && systemProbe.alive(writer)) continue; // a write in progress
    // Its writer is gone, so the file is as it left it: one that is no longer there was renamed (committed) or
    // removed between the listing and now (a writer that finished and exited meanwhile), not left over.
    if (lstatSync(file, { throwIfNoEntry: false }) === undefined) continue;
    if (name.startsWith(`${id}.json.`) && current().referenced.has(id) && !existsSync(store.framePath(id))) {
      warnings.push(`frame ${id} is stored only in ${file}, a write stopped before its rename; keep the file (frames are read from it)`);
    } else {
      warnings.push(`leftover file ${file} (an interrupted write that never committed); safe to delete`);
    }
  }
  const uncommitted = store.stateJournalUncommitted();
  if (uncommitted !== undefined) warnings.push(`state journal: ${uncommitted}`);
}


/** The pid in the name of a frame's temp file (`<FrameID>.json.<pid>.<random>.tmp`, see `stageFrames`), if it has one. */
function tempFileWriter(name: string, id: string): number | undefined {
  const match = /^\.json\.(\d+)\.[0-9a-f]+\.tmp$/.exec(name.slice(id.length));
  const pid = match === null ? undefined : Number(match[1]);
  return pid !== undefined && Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}
