/**
 * Access control (DESIGN D9). Deny wins. Order: the item's own rules (given at pack), the node's `deny` key patterns,
 * its allow lists (`read`/`write` key patterns, `namespaceRead` against the item's source namespace, `namespaceWrite`
 * against the writer's own namespace), then the default: a node that declared rules for the operation is denied,
 * a node that declared none is allowed. All patterns are D5 namespace patterns.
 */
import { z } from 'zod';
import { BackpackError } from './errors.js';
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
    read: z.array(z.string().min(1, 'node ids must not be empty')).readonly().optional(),
    write: z.array(z.string().min(1, 'node ids must not be empty')).readonly().optional(),
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

/**
 * Decides one access. Returns undefined when allowed, else the rule that denied it (for the error message, the
 * access log and the `access.denied` event).
 *
 * @param item the item's own rules and source namespace, when the key exists
 * @param actorNamespace the acting node's namespace (for `namespaceWrite`)
 */
export function deniedBy(
  operation: 'read' | 'write',
  key: string,
  nodeId: string,
  actorNamespace: string | undefined,
  permissions: Readonly<NodePermissions> | undefined,
  item: { acl: Readonly<ItemAccessControl> | undefined; namespace: string | undefined } | undefined,
): string | undefined {
  const itemRule = item?.acl?.[operation];
  if (itemRule && !matchesAnyNamespace(itemRule, nodeId)) return `item accessControl.${operation} allows only ${list(itemRule)}`;
  if (!permissions) return undefined;
  if (permissions.deny) {
    for (const pattern of permissions.deny) if (matchesAnyNamespace([pattern], key)) return `deny '${pattern}'`;
  }
  if (itemRule) return undefined;
  const keyRule = operation === 'read' ? permissions.read : permissions.write;
  if (keyRule && matchesAnyNamespace(keyRule, key)) return undefined;
  const nsRule = operation === 'read' ? permissions.namespaceRead : permissions.namespaceWrite;
  const namespace = operation === 'read' ? item?.namespace : actorNamespace;
  if (nsRule && namespace !== undefined && matchesAnyNamespace(nsRule, namespace)) return undefined;
  if (keyRule === undefined && nsRule === undefined) return undefined;
  const nsName = operation === 'read' ? 'namespaceRead' : 'namespaceWrite';
  const parts: string[] = [];
  if (keyRule) parts.push(`${operation}: ${list(keyRule)}`);
  if (nsRule) parts.push(`${nsName}: ${list(nsRule)}${namespace === undefined ? '' : ` (namespace '${namespace}')`}`);
  return `no ${operation} rule matches (${parts.join('; ')})`;
}
