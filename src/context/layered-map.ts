/** What a {@link LayeredMap} is layered over: a Map, or records read in place from a file. */
export interface MapBase<V> {
  readonly size: number;
  get(key: string): V | undefined;
  has(key: string): boolean;
  entries(): IterableIterator<[string, V]>;
  values(): IterableIterator<V>;
}

/**
 * A map that shares an immutable base with the map it was derived from and keeps its own changes in a small
 * overlay, so deriving an updated copy costs the size of the change, not of the map. The overlay is folded into a
 * new base once it grows past an eighth of the base.
 */
export class LayeredMap<V> {
  private constructor(
    private readonly base: MapBase<V>,
    /** Changes over `base`; `undefined` marks a deleted key. */
    private readonly overlay: Map<string, V | undefined>,
    /** Number of live keys. */
    private count: number,
  ) {}

  /** A layered map over the entries of `map` (which must not change afterwards). */
  static of<V>(map: MapBase<V>): LayeredMap<V> {
    return new LayeredMap(map, new Map(), map.size);
  }

  /** A copy to modify: shares the base, copies the overlay (or folds it into a new base when it is large). */
  derive(): LayeredMap<V> {
    if (this.overlay.size * 8 <= this.base.size) return new LayeredMap(this.base, new Map(this.overlay), this.count);
    return new LayeredMap(new Map(this.entries()), new Map(), this.count);
  }

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    if (this.overlay.size > 0 && this.overlay.has(key)) return this.overlay.get(key);
    return this.base.get(key);
  }

  has(key: string): boolean {
    // The base answers by itself: a base read in place from a file makes no record object to say yes.
    if (this.overlay.size > 0 && this.overlay.has(key)) return this.overlay.get(key) !== undefined;
    return this.base.has(key);
  }

  set(key: string, value: V): void {
    if (!this.has(key)) this.count++;
    this.overlay.set(key, value);
  }

  delete(key: string): void {
    if (!this.has(key)) return;
    this.count--;
    if (this.base.has(key)) this.overlay.set(key, undefined);
    else this.overlay.delete(key);
  }

  /** The base this map is layered over and its changes to it (`undefined`: deleted). Read-only views. */
  layers(): { readonly base: MapBase<V>; readonly overlay: ReadonlyMap<string, V | undefined> } {
    return { base: this.base, overlay: this.overlay };
  }

  entries(): IterableIterator<[string, V]> {
    return this.overlay.size === 0 ? this.base.entries() : this.mergedEntries();
  }

  values(): IterableIterator<V> {
    return this.overlay.size === 0 ? this.base.values() : this.mergedValues();
  }

  private *mergedEntries(): IterableIterator<[string, V]> {
    for (const [key, value] of this.base.entries()) if (!this.overlay.has(key)) yield [key, value];
    for (const [key, value] of this.overlay) if (value !== undefined) yield [key, value];
  }

  private *mergedValues(): IterableIterator<V> {
    for (const [, value] of this.mergedEntries()) yield value;
  }
}
