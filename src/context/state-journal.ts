import type { HashBackend } from './hash.js';
import type { JournalCodec } from './journal.js';
import { seal, unseal } from './sealed.js';
import type { FrameEntry, StoreState } from './state.js';

/**
 * One entry of `.merkle/state.journal` (see `journal.ts`): the per-path values one transaction changed (null for a
 * removed one) and the sequence number after it.
 */
export interface StateJournalEntry {
  readonly seq: number;
  readonly frames: Readonly<Record<string, FrameEntry[] | null>>;
  readonly heads: Readonly<Record<string, Record<string, string> | null>>;
  readonly stale: Readonly<Record<string, string[] | null>>;
  readonly basis: Readonly<Record<string, string[] | null>>;
}

const MAPS = ['frames', 'heads', 'stale', 'basis'] as const;

/** `state.json` (sealed JSON) and its journal. */
export function stateCodec(backend: HashBackend): JournalCodec<StoreState, StateJournalEntry> {
  return {
    magic: 'MRKLSTJL',
    decode: (data, file) => unseal<StoreState>(data.toString('utf8'), file, backend),
    encode: (state) => Buffer.from(seal(state, backend), 'utf8'),
    checksum: (data) => backend.digest(data),
    parseEntry,
    apply(base, entries) {
      const state = copyForUpdate(base);
      for (const entry of entries) {
        state.seq = entry.seq;
        for (const map of MAPS) {
          const target = state[map] as Record<string, unknown>;
          for (const [key, value] of Object.entries(entry[map])) {
            if (value === null) delete target[key];
            else target[key] = value;
          }
        }
      }
      return state;
    },
  };
}

/**
 * A copy of `state` whose per-path maps are new objects (without a prototype, so a path such as `__proto__` is an
 * ordinary key) sharing the per-path values, which the functions of `state.ts` replace rather than mutate.
 */
export function copyForUpdate(state: Readonly<StoreState>): StoreState {
  const copy = (map: object) => Object.assign(Object.create(null) as Record<string, never>, map);
  return { v: 1, seq: state.seq, frames: copy(state.frames), heads: copy(state.heads), stale: copy(state.stale), basis: copy(state.basis) };
}

/** What `after` (made by {@link copyForUpdate} from `before`) changed, or undefined when nothing did. */
export function stateChange(before: Readonly<StoreState>, after: Readonly<StoreState>): StateJournalEntry | undefined {
  let changed = before.seq !== after.seq;
  const entry = { seq: after.seq, frames: {}, heads: {}, stale: {}, basis: {} } as Record<(typeof MAPS)[number], Record<string, unknown>> & { seq: number };
  for (const map of MAPS) {
    const a = before[map] as Record<string, unknown>;
    const b = after[map] as Record<string, unknown>;
    const out = Object.create(null) as Record<string, unknown>;
    for (const key of Object.keys(b)) {
      if (b[key] !== a[key] && JSON.stringify(b[key]) !== JSON.stringify(a[key])) out[key] = b[key];
    }
    for (const key of Object.keys(a)) if (!Object.hasOwn(b, key)) out[key] = null;
    if (Object.keys(out).length > 0) changed = true;
    entry[map] = out;
  }
  return changed ? (entry as unknown as StateJournalEntry) : undefined;
}

function parseEntry(input: unknown): StateJournalEntry | undefined {
  const value = input as Partial<Record<string, unknown>> | null;
  if (value === null || typeof value !== 'object' || typeof value.seq !== 'number') return undefined;
  for (const map of MAPS) {
    const part = value[map];
    if (part === null || typeof part !== 'object' || Array.isArray(part)) return undefined;
    for (const v of Object.values(part)) if (v !== null && typeof v !== 'object') return undefined;
  }
  return value as unknown as StateJournalEntry;
}
