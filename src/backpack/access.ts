/**
 * Access control (DESIGN D9). Deny wins. Order: the item's own rules (given at pack), the node's `deny` key patterns,
 * its allow lists (`read`/`write` key patterns, `namespaceRead` against the item's source namespace, `namespaceWrite`
 * against the writer's registered namespace; item rules against the reader's full namespace), then the default: a
 * node that declared rules for the operation is denied, a node that declared none is allowed. All patterns are D5
 * namespace patterns.
 */
import { z } from 'zod';
import { BackpackError } from './errors.js';
import type { Actor } from './actor.js';
import { matchesAnyNamespace } from './patterns.js';
import type { ItemAccessControl, NodePermissions } from './types.js';

const patternList = z.array(z.string().min(1, 'patterns must not be empty')).readonly();

/** zod schema of {@link NodePermissions}. */
export const NodePermissionsSchema = z
  .object({
    read: patternList.optional(),
    write: patternList.optional(),
    deny: patternList.optional(),
    namespaceRead: patternList.optional(),
    namespaceWrite: patternList.optional(),
  })
  .strict();

/** zod schema of {@link ItemAccessControl}. */
export const ItemAccessControlSchema = z
  .object({
    read: patternList.optional(),
    write: patternList.optional(),
  })
  .strict();

/** Formats a zod issue path as `a.b[0]`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out === '' ? String(seg) : `.${String(seg)}`;
  }
  return out;
}

function freezeRules<T extends object>(rules: T): T {
  const out: Record<string, readonly string[]> = {};
  for (const [k, v] of Object.entries(rules)) if (v !== undefined) out[k] = Object.freeze([...(v as string[])]);
  return Object.freeze(out) as T;
}

/** Validates and freezes a node's permissions; throws BackpackError naming the node and the offending field. */
export function checkPermissions(nodeId: string, permissions: unknown): Readonly<NodePermissions> {
  if (typeof nodeId !== 'string' || nodeId === '') throw new BackpackError('registerPermissions needs a non-empty node id');
  const parsed = NodePermissionsSchema.safeParse(permissions);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new BackpackError(`Invalid permissions for node '${nodeId}' at '${formatPath(issue.path) || '(root)'}': ${issue.message}`, {
      nodeId,
    });
  }
  return freezeRules(parsed.data as NodePermissions);
}

/** Validates and freezes an item's access rules; throws BackpackError naming the key. */
export function checkItemAccessControl(key: string, rules: unknown): Readonly<ItemAccessControl> {
  const parsed = ItemAccessControlSchema.safeParse(rules);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new BackpackError(`Invalid accessControl for key '${key}' at '${formatPath(issue.path) || '(root)'}': ${issue.message}`, {
      key,
    });
  }
  return freezeRules(parsed.data as ItemAccessControl);
}

const list = (patterns: readonly string[]): string => `[${patterns.join(', ')}]`;

/** Why an access was refused. */
export interface Denial {
  /** The rule that refused it (for the owner's records and the `access.denied` event, never for the node). */
  readonly rule: string;
  /** Refused by the item's own rules: to the node this looks exactly like a missing key (D9). */
  readonly byItem: boolean;
}

/** What access control needs of an existing item (a Commit is one): its own rules and who wrote it. */
export interface ItemRules {
  readonly acl: Readonly<ItemAccessControl> | undefined;
  /** The writer; its namespace is the item's source namespace (for `namespaceRead`). */
  readonly actor: { readonly namespace: string | undefined };
}

/**
 * Decides one access by `actor` (DESIGN D9). Returns undefined when allowed, else the denial. The item's own rules
 * apply first, to the actor's full namespace and to that of every node it runs inside (a node that node code nests,
 * under a name an item admits, gains nothing its enclosing nodes lack); then the actor's deny, allow and namespace
 * lists; then those of every node it runs inside, each judged as that node (a composite's parts can do no more than
 * the composite).
 */
export function deniedBy(operation: 'read' | 'write', key: string, actor: Actor, item: ItemRules | undefined): Denial | undefined {
  const itemRule = item?.acl?.[operation];
  if (itemRule) {
    for (let a: Actor | undefined = actor; a !== undefined; a = a.parent) {
      if (a.namespace !== undefined && matchesAnyNamespace(itemRule, a.namespace)) continue;
      const rule = `item accessControl.${operation} allows only ${list(itemRule)} (${a === actor ? 'reader' : `enclosing node '${a.nodeId}'`} namespace '${a.namespace ?? ''}')`;
      return { rule, byItem: true };
    }
  }
  const own = ruleDenial(operation, key, actor, item, itemRule !== undefined);
  if (own !== undefined) return { rule: own, byItem: false };
  for (let p = actor.parent; p !== undefined; p = p.parent) {
    const inherited = ruleDenial(operation, key, p, item, false);
    if (inherited !== undefined) return { rule: `enclosing node '${p.nodeId}' (${p.namespace}): ${inherited}`, byItem: false };
  }
  return undefined;
}

function ruleDenial(operation: 'read' | 'write', key: string, actor: Actor, item: ItemRules | undefined, itemAllowed: boolean): string | undefined {
  const permissions = actor.permissions;
  if (!permissions) return undefined;
  if (permissions.deny) {
    for (const pattern of permissions.deny) if (matchesAnyNamespace([pattern], key)) return `deny '${pattern}'`;
  }
  if (itemAllowed) return undefined;
  const keyRule = operation === 'read' ? permissions.read : permissions.write;
  if (keyRule && matchesAnyNamespace(keyRule, key)) return undefined;
  const nsRule = operation === 'read' ? permissions.namespaceRead : permissions.namespaceWrite;
  const namespace = operation === 'read' ? item?.actor.namespace : actor.namespace;
  if (nsRule && namespace !== undefined && matchesAnyNamespace(nsRule, namespace)) return undefined;
  if (keyRule === undefined && nsRule === undefined) return undefined;
  const nsName = operation === 'read' ? 'namespaceRead' : 'namespaceWrite';
  const parts: string[] = [];
  if (keyRule) parts.push(`${operation}: ${list(keyRule)}`);
  if (nsRule) parts.push(`${nsName}: ${list(nsRule)}${namespace === undefined ? '' : ` (namespace '${namespace}')`}`);
  return `no ${operation} rule matches (${parts.join('; ')})`;
}
