/**
 * Pauses for a person in durable runs (DESIGN D16): what a run waits for and the answers it was given, read back
 * from its log. Answers recorded since the run's last step boundary belong to the node executions at its position:
 * they are handed to the flow on every resume (also after a crash mid-resume), so each `interrupt` call gets its
 * answer again and the node goes on past it.
 */
import { StreamEventType, isEventOf, type InterruptInfo, type StreamEvent } from '../events/index.js';
import { nestingProblem } from '../backpack/nesting.js';
import { checkAnswer, InterruptAnswerError, RedactedAnswer, recordedSchemaCheck } from '../nodes/index.js';
import { redactorFor, type RedactionOptions } from '../redact/index.js';
import { encodeEvent } from '../store/event-encode.js';

/** The answers since the last step boundary and the interrupt still unanswered, if any. */
export interface PendingAnswers {
  /** By the namespace of the node that asked, in the order it asked. */
  answers: Map<string, unknown[]>;
  /** The question each answer was given to, as the log stores it (see {@link storedQuestion}), where the log says. */
  questions: Map<string, string[]>;
  /** The latest pause of the run, when no answer to it was recorded after it. */
  waitingFor: InterruptInfo | undefined;
}

/** Folds a run's events (in log order) into its {@link PendingAnswers}. */
export function pendingAnswers(events: Iterable<StreamEvent>): PendingAnswers {
  let answers = new Map<string, unknown[]>();
  let questions = new Map<string, string[]>();
  let waitingFor: InterruptInfo | undefined;
  for (const event of events) {
    if (isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) {
      if (event.payload.start !== true) {
        answers = new Map();
        questions = new Map();
      }
    } else if (isEventOf(event, StreamEventType.INTERRUPT_ANSWERED)) {
      const { namespace, index, answer } = event.payload;
      const list = answers.get(namespace) ?? [];
      // The log keeps a secret answer redacted (by the redactor, or by its schema's marks): the node is told so rather
      // than given '[REDACTED]' as the answer.
      list[index] = event.redaction?.containsSecrets === true || event.payload.secret === true ? new RedactedAnswer(namespace, index) : answer;
      answers.set(namespace, list);
      if (waitingFor?.namespace === namespace && waitingFor.index === index) {
        const asked = questions.get(namespace) ?? [];
        asked[index] = questionText(waitingFor);
        questions.set(namespace, asked);
        waitingFor = undefined;
      }
    } else if (isEventOf(event, StreamEventType.RUN_WAITING)) {
      waitingFor = { ...event.payload.interrupt, pause: event.seq };
    }
  }
  return { answers, questions, waitingFor };
}

/**
 * A question's payload and schema as one text: what two questions are compared by. The schema's `default` and
 * `examples` are left out: zod writes a function default's value there each time it converts the schema (the time,
 * a random id), which would make every question a new one.
 */
export function questionText(question: Pick<InterruptInfo, 'payload' | 'schema'>): string {
  return JSON.stringify([question.payload, question.schema === undefined ? null : withoutExamples(question.schema, 0)]);
}

/** Keywords of a JSON Schema that give data for a person, not the question's shape. */
const EXAMPLE_KEYWORDS: ReadonlySet<string> = new Set(['default', 'examples']);
/** Keywords whose value maps names (a property's, a definition's) to schemas: its keys are names, never keywords. */
const NAMED_SCHEMAS: ReadonlySet<string> = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);

/**
 * `schema` without its `default` and `examples` keywords, at any depth (a schema is data from the node: bounded). A
 * property named `default` is a name, kept with its schema.
 */
function withoutExamples(schema: unknown, depth: number, names = false): unknown {
  if (schema === null || typeof schema !== 'object' || depth > 512) return schema;
  if (Array.isArray(schema)) return schema.map((s) => withoutExamples(s, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!names && EXAMPLE_KEYWORDS.has(key)) continue;
    const next = names ? withoutExamples(value, depth + 1) : withoutExamples(value, depth + 1, NAMED_SCHEMAS.has(key));
    Object.defineProperty(out, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * The question `question` (an InterruptInfo a node asks) as the run's log would store it: its payload and schema
 * after the store's redaction (with `redaction`), as {@link questionText} gives a recorded one. Comparing the two
 * tells whether a node asks the question an answer was given to; undefined when it cannot be stored at all.
 */
export function storedQuestion(question: InterruptInfo, redaction?: RedactionOptions): string | undefined {
  const stored = encodedAlone({ type: StreamEventType.RUN_WAITING, payload: { durationMs: 0, steps: 0, interrupt: question } }, redaction, 'the question');
  if (!('line' in stored)) return undefined;
  return questionText((JSON.parse(stored.line) as { payload: { interrupt: InterruptInfo } }).payload.interrupt);
}

/**
 * An event of its own (in no run) encoded as the run stores encode an event (the envelope checked, redacted with
 * `redaction`, serialized): its stored line, or why it cannot be stored (`where` names it in messages).
 */
function encodedAlone(fields: Pick<StreamEvent, 'type' | 'payload' | 'nodeId' | 'namespace'>, redaction: RedactionOptions | undefined, where: string): { line: string } | { problem: string } {
  const ids = { sessionKey: 'alone', runId: 'alone' };
  const event: StreamEvent = { v: 1, id: 'alone', seq: 1, timestamp: 0, ...ids, ...fields };
  try {
    const { line } = encodeEvent({ ...ids, redactor: redactorFor(redaction), where }, event, undefined, '');
    return { line: typeof line === 'string' ? line : Buffer.concat(line).toString('utf8') };
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * Checks `answer` before anything is written: that the run's log can hold it (it is recorded before the node runs
 * again), then against the JSON Schema the waiting node gave (when it gave one). Throws {@link InterruptAnswerError}
 * naming each JSON pointer, and the run keeps waiting.
 */
export function checkRecordedAnswer(waitingFor: InterruptInfo, answer: unknown, redaction?: RedactionOptions): void {
  if (answer === undefined) throw new InterruptAnswerError(waitingFor, [{ path: '', message: 'an answer is required (got undefined)' }]);
  // The bound of everything that reaches the library from outside (configs, inputs, packed values), at its pointer.
  const deep = nestingProblem(answer);
  if (deep !== undefined) throw new InterruptAnswerError(waitingFor, [deep], 'is nested too deeply');
  const unstorable = storeProblem(waitingFor, answer, redaction);
  if (unstorable !== undefined) throw new InterruptAnswerError(waitingFor, [{ path: '', message: unstorable }], "cannot be stored in the run's log");
  if (waitingFor.schema === undefined) return;
  // A recorded schema too large to walk here is left to the node's own schema (see recordedSchemaCheck).
  const schema = recordedSchemaCheck(waitingFor.schema);
  if (schema === undefined) return;
  const checked = checkAnswer(schema, answer);
  if (!checked.ok) throw new InterruptAnswerError(waitingFor, checked.problems);
}

/**
 * Why the `interrupt.answered` event of `answer` cannot be stored, or undefined: it is encoded as the run stores
 * encode it (the envelope checked, redacted with `redaction`, serialized), so a BigInt, a cycle or nesting deeper
 * than redaction checks is found here, not after the node acted on the answer.
 */
function storeProblem(waitingFor: InterruptInfo, answer: unknown, redaction: RedactionOptions | undefined): string | undefined {
  const { nodeId, namespace, index } = waitingFor;
  const stored = encodedAlone({ type: StreamEventType.INTERRUPT_ANSWERED, nodeId, namespace, payload: { nodeId, namespace, index, answer } }, redaction, 'the answer');
  return 'problem' in stored ? stored.problem : undefined;
}
