/**
 * The ids and namespace segments taken in one flow of a config being validated, and by what (a node's index, or a
 * subflow's JSON path): the first taker of each. One map for both: a node whose segment is its id (nearly every
 * node) holds one entry, a bare number; only a name that is one node's id and another's segment needs an object.
 * So a flow of a million nodes costs one map entry per node, and no string is made per node.
 */
type Where = number | string;
type Held = number | { id?: Where; segment?: number };

export class NameTable {
  readonly #names = new Map<string, Held>();

  /** What took `name` as an id (a node's index or a subflow's path), if anything. */
  idHolder(name: string): Where | undefined {
    const held = this.#names.get(name);
    return typeof held === 'number' ? held : held?.id;
  }

  /** The index of the node that took `segment` as its namespace segment, if any. */
  segmentHolder(segment: string): number | undefined {
    const held = this.#names.get(segment);
    return typeof held === 'number' ? held : held?.segment;
  }

  /** Records node `index` as the taker of `id` and of `segment`, where each is not taken yet. */
  claimNode(id: string, segment: string, index: number): void {
    const held = this.#names.get(id);
    if (segment === id && held === undefined) {
      this.#names.set(id, index);
      return;
    }
    this.#claim(id, 'id', index);
    this.#claim(segment, 'segment', index);
  }

  /** Records a subflow (its JSON path) as the taker of id `name`, unless it is taken. */
  claimId(name: string, where: string): void {
    this.#claim(name, 'id', where);
  }

  #claim(name: string, as: 'id' | 'segment', where: Where): void {
    const held = this.#names.get(name);
    if (typeof held === 'number') return;
    if (held === undefined) this.#names.set(name, as === 'id' ? { id: where } : { segment: where as number });
    else if (as === 'id') held.id ??= where;
    else held.segment ??= where as number;
  }
}
