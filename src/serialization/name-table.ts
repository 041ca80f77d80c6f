/**
 * The ids and namespace segments taken in one flow of a config being validated, and by what (a node's index, or a
 * subflow's JSON path): the first taker of each. A node whose segment is its id (nearly every node) and that takes
 * a free name is held in a table of node indexes (4 bytes a slot, sized once for the flow's nodes, keyed by the id
 * of the node at each index); every other name, in a map. So a flow of a million nodes costs no map entry per node
 * and no string per node, and its table is made at once, with nothing left behind by growing. A loader that keeps
 * the table after the check finds a node's position by its id with it.
 *
 * The hash is fixed, so ids can be chosen to share a slot. A name is held in the table only within
 * {@link MAX_PROBES} slots of its hash's (beyond, it goes to the map), so a lookup reads at most that many slots and
 * no choice of ids makes a flow's check quadratic.
 */
type Where = number | string;

/** Most slots a lookup in the table reads: a name whose slot and the next ones are all taken goes to the map. */
export const MAX_PROBES = 32;
type Held = number | { id?: Where; segment?: number };

export class NameTable {
  /** Node index + 1 of names taken as both id and segment by one node (0: empty), by a hash of the name. */
  readonly #slots: Int32Array;
  readonly #mask: number;
  /** Slots in use (at most half of them: beyond, names go to the map). */
  #used = 0;
  /** The id of the node at an index (undefined when there is none there any more). */
  readonly #idAt: (index: number) => string | undefined;
  /** Every other name taken. */
  readonly #names = new Map<string, Exclude<Held, number>>();

  /** A table for a flow of `count` nodes, the node at index i having id `idAt(i)`. */
  constructor(idAt: (index: number) => string | undefined, count: number) {
    let size = 8;
    while (size < count * 2) size *= 2;
    this.#slots = new Int32Array(size);
    this.#mask = size - 1;
    this.#idAt = idAt;
  }

  /** What took `name` as an id (a node's index or a subflow's path), if anything. */
  idHolder(name: string): Where | undefined {
    const held = this.#held(name);
    return typeof held === 'number' ? held : held?.id;
  }

  /** The index of the node that took `segment` as its namespace segment, if any. */
  segmentHolder(segment: string): number | undefined {
    const held = this.#held(segment);
    return typeof held === 'number' ? held : held?.segment;
  }

  /** Records node `index` (whose id is `id`) as the taker of `id` and of `segment`, where each is not taken yet. */
  claimNode(id: string, segment: string, index: number): void {
    if (segment === id && this.#used * 2 < this.#slots.length && this.#held(id) === undefined && this.#idAt(index) === id && this.#insert(id, index)) return;
    this.#claim(id, 'id', index);
    this.#claim(segment, 'segment', index);
  }

  /** Records a subflow (its JSON path) as the taker of id `name`, unless it is taken. */
  claimId(name: string, where: string): void {
    this.#claim(name, 'id', where);
  }

  #held(name: string): Held | undefined {
    const index = this.#find(name);
    return index >= 0 ? index : this.#names.get(name);
  }

  #claim(name: string, as: 'id' | 'segment', where: Where): void {
    const held = this.#held(name);
    if (typeof held === 'number') return;
    if (held === undefined) this.#names.set(name, as === 'id' ? { id: where } : { segment: where as number });
    else if (as === 'id') held.id ??= where;
    else held.segment ??= where as number;
  }

  /** The index held for `name` in the table, or -1 (then it may be in the map). */
  #find(name: string): number {
    const slots = this.#slots;
    let slot = hash(name) & this.#mask;
    for (let probe = 0; probe < MAX_PROBES; probe++, slot = (slot + 1) & this.#mask) {
      const held = slots[slot]!;
      if (held === 0) return -1;
      if (this.#idAt(held - 1) === name) return held - 1;
    }
    return -1;
  }

  /** Holds node `index` for `name` (not held yet) in the table; false when its slots are taken (it goes to the map). */
  #insert(name: string, index: number): boolean {
    const slots = this.#slots;
    let slot = hash(name) & this.#mask;
    for (let probe = 0; probe < MAX_PROBES; probe++, slot = (slot + 1) & this.#mask) {
      if (slots[slot] !== 0) continue;
      slots[slot] = index + 1;
      this.#used++;
      return true;
    }
    return false;
  }
}

/** FNV-1a of the UTF-16 code units of `text`. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}
