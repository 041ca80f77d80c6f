/**
 * Errors of the Backpack. Every message names what was involved (key, node, rule or commit) and, where there is
 * one, what to do next.
 */

/** Base class of every error the Backpack throws. */
export class BackpackError extends Error {
  /** The key involved, when there is one. */
  readonly key: string | undefined;
  /** The acting node, when there is one. */
  readonly nodeId: string | undefined;

  constructor(message: string, details: { key?: string; nodeId?: string } = {}) {
    super(message);
    this.name = 'BackpackError';
    this.key = details.key;
    this.nodeId = details.nodeId;
  }
}

/** A node tried to read or write a key its permissions (or the item's own rules) do not allow (DESIGN D9). */
export class AccessDeniedError extends BackpackError {
  /** `read` or `write`. */
  readonly operation: 'read' | 'write';
  /** The rule that decided, e.g. `deny 'pii.*'` or `item accessControl.read [auth-node]`. */
  readonly rule: string;

  constructor(key: string, nodeId: string, operation: 'read' | 'write', rule: string, tags?: readonly string[]) {
    const tagged = tags && tags.length > 0 ? ` (item tagged ${tags.join(', ')})` : '';
    super(`node '${nodeId}' may not ${operation} key '${key}'${tagged}: ${rule}`, { key, nodeId });
    this.name = 'AccessDeniedError';
    this.operation = operation;
    this.rule = rule;
  }
}

/** `unpackRequired` of a key that is not in the active state. */
export class KeyNotFoundError extends BackpackError {
  constructor(key: string, nodeId?: string) {
    const who = nodeId === undefined ? '' : ` (requested by node '${nodeId}')`;
    super(`Required key '${key}' is not in the Backpack${who}; pack it before reading it, or use unpack() for optional data`, {
      key,
      ...(nodeId === undefined ? {} : { nodeId }),
    });
    this.name = 'KeyNotFoundError';
  }
}

/** A snapshot was requested for a point older than the retained history window (DESIGN D8). */
export class HistoryPrunedError extends BackpackError {
  constructor(what: string, oldestRetained: string) {
    super(
      `${what} is older than the retained history (${oldestRetained}); raise maxHistorySize or maxHistoryBytes to keep more`,
    );
    this.name = 'HistoryPrunedError';
  }
}

/** A commit id (or node id used as a commit reference) that this Backpack's history does not know. */
export class InvalidCommitError extends BackpackError {
  constructor(message: string, nodeId?: string) {
    super(message, nodeId === undefined ? {} : { nodeId });
    this.name = 'InvalidCommitError';
  }
}
