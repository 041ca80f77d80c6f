/**
 * Pausing a run for a person (DESIGN D16). `BackpackNode.interrupt(payload, { schema })` throws a
 * {@link RunInterrupted} when the run has no answer for it yet: the node, its flow and every enclosing flow stop
 * where they are (no retry, no fallback, no error event), and a durable run records itself as waiting. When the run
 * is resumed with an answer, the node runs again from `prep`, and the same `interrupt` call returns the answer.
 */
import { z, type ZodType } from 'zod';
import { FlowSignal } from '../flow/index.js';
import type { InterruptInfo } from '../events/index.js';
import { jsonPointer } from '../backpack/nesting.js';

/** The run stopped to wait for a person's answer to `interrupt`. */
export class RunInterrupted extends FlowSignal {
  override name = 'RunInterrupted';
  constructor(
    /** Which node asked, and what. */
    readonly interrupt: InterruptInfo,
    message = `Run paused: node '${interrupt.nodeId}' (${interrupt.namespace}) is waiting for an answer to its interrupt ${interrupt.index}`,
  ) {
    super(message);
  }
}

/** An answer that does not match the interrupt's schema: the run keeps waiting for a valid one. */
export class InterruptAnswerError extends RunInterrupted {
  override name = 'InterruptAnswerError';
  constructor(
    interrupt: InterruptInfo,
    /** Each problem with its JSON pointer into the answer ('' for the answer itself). */
    readonly problems: { path: string; message: string }[],
  ) {
    const list = problems.map((p) => `${p.path || '(the answer)'}: ${p.message}`).join('; ');
    super(interrupt, `The answer to node '${interrupt.nodeId}' (${interrupt.namespace}), interrupt ${interrupt.index}, does not match its schema: ${list}; the run is still waiting`);
  }
}

/**
 * In place of an answer a run's log keeps redacted (it held a secret: DESIGN D15), when the run is resumed and
 * its answers are read back from the log (see `BackpackNode.interrupt`). Never handed to node code as an answer.
 */
export class RedactedAnswer {
  constructor(
    /** Namespace of the node that asked. */
    readonly namespace: string,
    /** Which of its interrupts (in the order it asked). */
    readonly index: number,
  ) {
    Object.freeze(this);
  }
}

/** The answer's problems against `schema` (zod or JSON Schema), or the parsed answer. */
export function checkAnswer(schema: ZodType, answer: unknown): { ok: true; value: unknown } | { ok: false; problems: { path: string; message: string }[] } {
  const result = schema.safeParse(answer);
  if (result.success) return { ok: true, value: result.data };
  return { ok: false, problems: result.error.issues.map((i) => ({ path: jsonPointer(i.path), message: i.message })) };
}

/** The JSON Schema of an interrupt's answer schema; a schema JSON cannot express is an error naming the node. */
export function answerJsonSchema(nodeId: string, schema: ZodType): Record<string, unknown> {
  try {
    return z.toJSONSchema(schema) as Record<string, unknown>;
  } catch (error) {
    throw new TypeError(`Node '${nodeId}': the schema of an interrupt's answer must be expressible as JSON Schema (${(error as Error).message})`);
  }
}

/** A zod schema from a recorded JSON Schema, to check an answer before a run resumes. */
export function schemaFromJson(schema: Record<string, unknown>): ZodType {
  return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
}
