/**
 * The Backpack's access decisions for one registered node at a time (DESIGN D9), and the record of denials. What a
 * node learns from a refused read never depends on whether the item exists: it gets exactly what a read of a missing
 * key gets, and the full reason goes only to the owner's records and the `access.denied` event.
 */
import { deniedBy, type Denial } from './access.js';
import { OWNER, type Actor, type OpContext } from './actor.js';
import { FOUND, type Commit } from './history.js';
import type { AccessDenial, BackpackEvent } from './types.js';
import { hardenClass } from '../harden.js';

/** Emits one Backpack event as `actor` (the Backpack's sink, if any). */
export type EmitAs = (type: BackpackEvent['type'], payload: Record<string, unknown>, actor: Actor, ctx: OpContext) => void;

/** How a refused read looks to the node. */
export type ReadRefusal = { asMissing: true } | { asMissing: false; rule: string };

/** Access decisions and the denial log of one Backpack. */
export class AccessGuard {
  #denials: AccessDenial[] = [];

  constructor(
    /** How many denials are kept (the newest). */
    private readonly limit: number,
    private readonly emit: EmitAs | undefined,
  ) {}

  /** Why `actor` may not read `key` (with its item, if any), or undefined. */
  readDenial(actor: Actor, key: string, item: Commit | undefined): Denial | undefined {
    return deniedBy('read', key, actor, item);
  }

  /** True when `actor` may read `item` (always for the owner). */
  mayRead(actor: Actor, item: Commit): boolean {
    return actor === OWNER || this.readDenial(actor, item.key, item) === undefined;
  }

  /** A key in a node's view of a state: its key rules, and the item's rules if the item exists. */
  keyVisible(actor: Actor, key: string, item: Commit | undefined): boolean {
    return item === undefined ? this.readDenial(actor, key, undefined) === undefined : this.mayRead(actor, item);
  }

  /** Whether a commit shows in a node's history: it touches only items the node may read (and a read found one). */
  commitVisible(actor: Actor, c: Commit): boolean {
    switch (c.action) {
      case 'pack':
        return this.mayRead(actor, c);
      case 'quarantine':
        return this.mayRead(actor, c.quarantined.item);
      case 'clear':
        return (c.detail as readonly Commit[]).every((item) => this.mayRead(actor, item));
      case 'unpack':
        return (c.flags & FOUND) !== 0 && c.actor === actor;
      case 'delete':
        return this.readDenial(actor, c.key, undefined) === undefined;
    }
  }

  /**
   * Decides a read by a node: undefined when allowed; otherwise records the denial and says how it looks to the
   * node: refused for the key itself (the rule a missing key gets), or refused only because of the item (missing).
   */
  checkRead(actor: Actor, ctx: OpContext, key: string, item: Commit | undefined): ReadRefusal | undefined {
    const denial = this.readDenial(actor, key, item);
    if (denial === undefined) return undefined;
    const forKey = item === undefined ? denial : this.readDenial(actor, key, undefined);
    this.#record(actor, ctx, key, 'read', denial, forKey?.rule);
    return forKey === undefined ? { asMissing: true } : { asMissing: false, rule: forKey.rule };
  }

  /** Decides a write by a node: undefined when allowed, else the rule to tell it (an item rule's writers never shown). */
  checkWrite(actor: Actor, ctx: OpContext, key: string, item: Commit | undefined): string | undefined {
    const denial = deniedBy('write', key, actor, item);
    if (denial === undefined) return undefined;
    const shown = denial.byItem ? 'the item does not allow this node to write it' : denial.rule;
    this.#record(actor, ctx, key, 'write', denial, shown);
    return shown;
  }

  /** Recorded denials (the newest `limit`), optionally of one node. */
  denials(nodeId?: string): AccessDenial[] {
    return this.#recent().filter((d) => nodeId === undefined || d.nodeId === nodeId);
  }

  /** Replaces the denial log (restore). */
  restore(denials: AccessDenial[]): void {
    this.#denials = denials;
  }

  /**
   * Records a denial (the full reason, for the owner) and emits `access.denied`. `shown` is the rule the node itself
   * is told; without one the event is marked `hidden` (to the node the key is missing, so its event view drops it).
   */
  #record(actor: Actor, ctx: OpContext, key: string, operation: 'read' | 'write', denial: Denial, shown: string | undefined): void {
    this.#denials.push(Object.freeze({ timestamp: Date.now(), nodeId: actor.nodeId!, key, operation, rule: denial.rule }));
    // Trimmed in batches so a denial costs O(1) amortized; readers see only the newest `limit`.
    if (this.#denials.length > 2 * this.limit) this.#denials = this.#recent();
    this.emit?.('access.denied', shown === undefined ? { key, operation, rule: denial.rule, hidden: true } : { key, operation, rule: shown }, actor, ctx);
  }

  #recent(): AccessDenial[] {
    return this.#denials.slice(-this.limit);
  }
}

// Code running in a node must not rewrite what the library runs for others (README: threat model).
hardenClass(AccessGuard);
