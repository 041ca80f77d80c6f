import { randomBytes } from 'node:crypto';

/**
 * Ids for runs, spans and events: a random prefix drawn once per process (so two processes never collide) plus a
 * counter (so making one costs a few tens of nanoseconds). Only `[a-z0-9-]`, so ids are safe in file names.
 */
const processPrefix = randomBytes(6).toString('hex');
let runCounter = 0;
let spanCounter = 0;
let eventCounter = 0;

/**
 * A new run id, unique across processes and sortable by creation time within one process:
 * `run-<time>-<process>-<counter>`.
 */
export function newRunId(): string {
  return `run-${Date.now().toString(36)}-${processPrefix}-${(++runCounter).toString(36)}`;
}

/** A new span id (one per node execution or flow run), unique across processes. */
export function newSpanId(): string {
  return `sp-${processPrefix}-${(++spanCounter).toString(36)}`;
}

/** A new event id, unique across processes. */
export function newEventId(): string {
  return `ev-${processPrefix}-${(++eventCounter).toString(36)}`;
}
