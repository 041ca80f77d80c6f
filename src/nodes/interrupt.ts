/**
 * Pausing a run for a person (DESIGN D16). `BackpackNode.interrupt(payload, { schema })` throws a
 * {@link RunInterrupted} when the run has no answer for it yet: the node, its flow and every enclosing flow stop
 * where they are (no retry, no fallback, no error event), and a durable run records itself as waiting. When the run
 * is resumed with an answer, the node runs again from `prep`, and the same `interrupt` call returns the answer.
 */
import { z, type ZodType } from 'zod';
import { FlowError, FlowSignal } from '../flow/index.js';
import type { InterruptInfo } from '../events/index.js';
import { jsonPointer } from '../backpack/nesting.js';
import { isSecretSchema } from '../redact/schema-secrets.js';
import type { NodeExecution } from './execution.js';
import { expandsBeyond, withoutPatterns } from './schema-patterns.js';

/**
 * The run stopped to wait for a person's answer to `interrupt`. Only the instances `BackpackNode.interrupt` throws
 * pause a run: one that node code constructs and throws (or one `interrupt` made in another run) is that node's
 * failure, a FlowError naming it. What a run records as waiting is what `interrupt` captured, frozen, never this
 * object's `interrupt` field as node code may have left it.
 */
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

/**
 * An answer refused: it does not match the interrupt's schema, or (from `resumeRun`) the run's log cannot hold it. The
 * run keeps waiting for a valid one.
 */
export class InterruptAnswerError extends RunInterrupted {
  override name = 'InterruptAnswerError';
  constructor(
    interrupt: InterruptInfo,
    /** Each problem with its JSON pointer into the answer ('' for the answer itself). */
    readonly problems: { path: string; message: string }[],
    /** Why the answer is refused, for the message. */
    why = 'does not match its schema',
  ) {
    const list = problems.map((p) => `${p.path || '(the answer)'}: ${p.message}`).join('; ');
    super(interrupt, `The answer to node '${interrupt.nodeId}' (${interrupt.namespace}), interrupt ${interrupt.index}, ${why}: ${list}; the run is still waiting`);
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

/**
 * The pauses `BackpackNode.interrupt` made: what it captured (frozen), the controls of the run it was made in, and
 * the execution it stands for now: the one that made it, then each enclosing execution that ended with it.
 */
const pauses = new WeakMap<RunInterrupted, { info: Readonly<InterruptInfo>; run: object | undefined; carrier: NodeExecution }>();

/**
 * The pause `BackpackNode.interrupt` throws for `info` (its answer refused by the node's own schema when `refused` is
 * given) in `execution` of the run whose controls are `run`. `info` is frozen, with everything in it. Not exported
 * from the package.
 */
export function makePause(info: InterruptInfo, run: object | undefined, execution: NodeExecution, refused?: { path: string; message: string }[]): RunInterrupted {
  deepFreeze(info);
  const pause = refused ? new InterruptAnswerError(info, refused) : new RunInterrupted(info);
  pauses.set(pause, { info, run, carrier: execution });
  return pause;
}

/**
 * What `interrupt` captured when it made `error`, or undefined for any other value (a RunInterrupted node code made).
 * Not exported from the package.
 */
export function pauseInfo(error: unknown): Readonly<InterruptInfo> | undefined {
  return error instanceof RunInterrupted ? pauses.get(error)?.info : undefined;
}

/**
 * `thrown`, or, when it is a RunInterrupted that does not pause run `run` (by its controls) here, the failure it
 * stands for: a FlowError naming `who` threw it, with it as cause. Not exported from the package.
 *
 * A pause pauses the run only as it goes up from the node execution that called `interrupt()`: it is thrown by that
 * execution (`execution`, whose node's prep, exec or post ends with it), then by the execution it runs in (a
 * composite's), and so on, and last by the top-level flow (`execution` undefined), each time by the execution the
 * one that ended with it runs in. One made by node code, or in another run, or kept by a node that then returned
 * (or failed otherwise) and thrown by another node or a flow's own prep or post, is a failure: the run would be
 * recorded waiting on a question in the name of a node execution that is over.
 */
export function unlessForged(thrown: unknown, run: object | undefined, who: string, execution?: NodeExecution): unknown {
  if (!(thrown instanceof RunInterrupted)) return thrown;
  const pause = pauses.get(thrown);
  if (pause === undefined || pause.run !== run) {
    return new FlowError(`${who} threw a RunInterrupted that no interrupt() of this run made: a run pauses only where a node calls this.interrupt(), so this is a failure`, { cause: thrown });
  }
  const { carrier, info } = pause;
  if (carrier !== execution && !(carrier.parent === execution && carrier.paused === thrown)) {
    return new FlowError(
      `${who} threw the pause that node '${info.nodeId}' (${info.namespace}) made with its interrupt ${info.index}, but that execution of the node did not end with it ` +
        '(it caught it, then returned or failed otherwise): a run pauses only as the node execution that called this.interrupt() ends with its pause, so this is a failure',
      { cause: thrown },
    );
  }
  if (execution !== undefined) {
    pause.carrier = execution;
    execution.paused = thrown;
  }
  return thrown;
}

/** Freezes `value` and every object in it (a JSON value: no cycles), without recursion (its depth is the caller's). */
function deepFreeze(value: unknown): void {
  const stack = [value];
  while (stack.length > 0) {
    const next = stack.pop();
    if (next === null || typeof next !== 'object' || Object.isFrozen(next)) continue;
    Object.freeze(next);
    for (const child of Object.values(next)) stack.push(child);
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
    // The schema of what the node's schema accepts (its input), not of what it returns: a plain z.object strips keys
    // it does not know, so an answer with more keys is one it takes, and the recorded schema must not refuse it.
    const input = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
    // A secret marked on the output side of a pipe (`z.string().trim().pipe(z.string().meta({ writeOnly: true }))`)
    // is not in the input's schema: the whole answer is marked then, so that the log blanks it and the Studio masks it.
    if (secretMarks(outputSchema(schema), 0) > secretMarks(input, 0)) input['writeOnly'] = true;
    return input;
  } catch (error) {
    throw new TypeError(`Node '${nodeId}': the schema of an interrupt's answer must be expressible as JSON Schema (${(error as Error).message})`);
  }
}

/** The JSON Schema of what `schema` returns (a transform read as anything), or undefined when zod cannot write one. */
function outputSchema(schema: ZodType): unknown {
  try {
    return z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' });
  } catch {
    return undefined;
  }
}

/** How many parts of a JSON Schema are marked secret (see isSecretSchema), counted to a bounded depth. */
function secretMarks(schema: unknown, depth: number): number {
  if (schema === null || typeof schema !== 'object' || depth > 256) return 0;
  let count = !Array.isArray(schema) && isSecretSchema(schema) ? 1 : 0;
  for (const value of Object.values(schema)) count += secretMarks(value, depth + 1);
  return count;
}

/**
 * A zod schema from a recorded JSON Schema, to check an answer before a run resumes: without its regular expressions
 * (see schema-patterns.ts). The schema is data read from the run's log, which whoever can write the log can change,
 * and a pattern that backtracks would block the process that checks (the Studio's server for every tab, the CLI).
 * The waiting node checks the answer against its own schema, patterns included, when it runs again.
 */
export function schemaFromJson(schema: Record<string, unknown>): ZodType {
  return z.fromJSONSchema(withoutPatterns(schema) as Parameters<typeof z.fromJSONSchema>[0]);
}

/**
 * {@link schemaFromJson} for checking an answer before a run resumes, or undefined when the recorded schema is not
 * checked here because it expands to more than MAX_EXPANDED_SUBSCHEMAS subschemas (see schema-patterns.ts: a check
 * would walk them all, exponentially many for `$defs` that refer to each other twice, without end for a recursive
 * one). The waiting node checks the answer against its own schema when it runs again.
 */
export function recordedSchemaCheck(schema: Record<string, unknown>): ZodType | undefined {
  return expandsBeyond(schema) ? undefined : schemaFromJson(schema);
}
