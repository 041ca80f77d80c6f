/** One broken promise of a data contract. */
export interface ContractViolation {
  /** Backpack key the contract is about. */
  key: string;
  /** Path inside the value (dot-joined), empty for the value itself. */
  path: string;
  message: string;
}

/**
 * A node's data contract did not hold: an input before `prep` or an output after `post`. Lists every violation.
 */
export class ContractValidationError extends Error {
  override name = 'ContractValidationError';
  constructor(
    readonly nodeId: string,
    readonly direction: 'input' | 'output',
    readonly violations: ContractViolation[],
  ) {
    const lines = violations.map((v) => `  - ${v.key}${v.path ? `.${v.path}` : ''}: ${v.message}`);
    super(`Node '${nodeId}' ${direction} contract failed (${violations.length} violation${violations.length === 1 ? '' : 's'}):\n${lines.join('\n')}`);
  }
}
