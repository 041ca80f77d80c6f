/**
 * Pauses for a person in durable runs (DESIGN D16): what a run waits for and the answers it was given, read back
 * from its log. Answers recorded since the run's last step boundary belong to the node executions at its position:
 * they are handed to the flow on every resume (also after a crash mid-resume), so each `interrupt` call gets its
 * answer again and the node goes on past it.
 */
import { StreamEventType, isEventOf, type InterruptInfo, type StreamEvent } from '../events/index.js';
import { checkAnswer, InterruptAnswerError, RedactedAnswer, schemaFromJson } from '../nodes/index.js';

/** The answers since the last step boundary and the interrupt still unanswered, if any. */
export interface PendingAnswers {
  /** By the namespace of the node that asked, in the order it asked. */
  answers: Map<string, unknown[]>;
  /** The latest pause of the run, when no answer to it was recorded after it. */
  waitingFor: InterruptInfo | undefined;
}

/** Folds a run's events (in log order) into its {@link PendingAnswers}. */
export function pendingAnswers(events: Iterable<StreamEvent>): PendingAnswers {
  let answers = new Map<string, unknown[]>();
  let waitingFor: InterruptInfo | undefined;
  for (const event of events) {
    if (isEventOf(event, StreamEventType.CHECKPOINT_SAVED)) {
      if (event.payload.start !== true) answers = new Map();
    } else if (isEventOf(event, StreamEventType.INTERRUPT_ANSWERED)) {
      const { namespace, index, answer } = event.payload;
      const list = answers.get(namespace) ?? [];
      // The log keeps a secret answer redacted: the node is told so rather than given '[REDACTED]' as the answer.
      list[index] = event.redaction?.containsSecrets === true ? new RedactedAnswer(namespace, index) : answer;
      answers.set(namespace, list);
      if (waitingFor?.namespace === namespace && waitingFor.index === index) waitingFor = undefined;
    } else if (isEventOf(event, StreamEventType.RUN_WAITING)) {
      waitingFor = event.payload.interrupt;
    }
  }
  return { answers, waitingFor };
}

/**
 * Checks `answer` against the JSON Schema the waiting node gave (when it gave one), before anything is written:
 * throws {@link InterruptAnswerError} naming each JSON pointer, and the run keeps waiting.
 */
export function checkRecordedAnswer(waitingFor: InterruptInfo, answer: unknown): void {
  if (answer === undefined) throw new InterruptAnswerError(waitingFor, [{ path: '', message: 'an answer is required (got undefined)' }]);
  if (waitingFor.schema === undefined) return;
  const checked = checkAnswer(schemaFromJson(waitingFor.schema), answer);
  if (!checked.ok) throw new InterruptAnswerError(waitingFor, checked.problems);
}
