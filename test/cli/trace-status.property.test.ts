/**
 * Audit findings 8 and 9 over generated run histories: segments that completed, failed, paused, were aborted, or
 * whose writer was killed (no end recorded), the last one possibly still open. The projection's duration counts a
 * killed segment up to its last event and says it is a lower bound; `runs list` and `runs show` print the same status
 * word and the same duration for the run; a node left without an end is never called anything but running/stopped.
 */
import fc from 'fast-check';
import { createColors } from 'picocolors';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { colors } from '../../src/cli/colors.js';
import { renderRuns } from '../../src/cli/backpackflow/render.js';
import { buildTrace, renderTrace, withRunMeta, type TraceItem } from '../../src/cli/backpackflow/trace.js';
import { StreamEventType as T, type StreamEvent } from '../../src/events/index.js';
import { emptyRunMeta, foldRunMeta, foldRunMetaBatch, runDuration } from '../../src/store/run-meta.js';
import { trials } from '../support/soak.js';

/** Where the rendered commands point: the CLI's default data directory and session. */
const DEFAULT_PLACE = { dataDir: '.backpackflow', session: 'default' };

type End = 'completed' | 'failed' | 'waiting' | 'aborted' | 'killed';
const ENDS: End[] = ['completed', 'failed', 'waiting', 'aborted', 'killed'];

/** A run's log: per segment, run.started, `nodes` nodes (the last left open when killed), then its end. */
function history(segments: Array<{ end: End; gaps: number[] }>): StreamEvent[] {
  const events: StreamEvent[] = [];
  let now = 1_000;
  const emit = (type: string, extra: Partial<StreamEvent> = {}, payload: Record<string, unknown> = {}): void =>
    void events.push({ id: `e${events.length}`, seq: events.length, timestamp: now, runId: 'r', type, payload, ...extra } as StreamEvent);
  segments.forEach((segment, i) => {
    emit(T.RUN_START, { spanId: `s${i}` }, { flowNamespace: 'f' });
    segment.gaps.forEach((gap, n) => {
      const span = { spanId: `n${i}.${n}`, parentSpanId: `s${i}`, nodeId: `node${n}`, namespace: `f.node${n}` };
      now += gap;
      emit(T.NODE_START, span);
      // A killed writer leaves its last node without an end (what a log cut mid-step looks like).
      if (segment.end === 'killed' && n === segment.gaps.length - 1) return;
      now += 1;
      emit(T.NODE_END, span, { action: 'default', durationMs: gap });
    });
    now += 3;
    if (segment.end === 'killed') now += 500; // the time after its last event is not known: never counted
    else if (segment.end === 'completed') emit(T.RUN_END, { spanId: `s${i}` }, { action: 'default' });
    else if (segment.end === 'waiting') emit(T.RUN_WAITING, { spanId: `s${i}` }, { interrupt: { nodeId: 'ask', namespace: 'f.ask', index: 0, payload: {} } });
    else emit(T.RUN_ERROR, { spanId: `s${i}` }, segment.end === 'aborted' ? { aborted: true } : { error: { name: 'Error', message: 'boom' } });
  });
  return events;
}

/** The duration the log tells, computed here on its own: each segment to its end, or a killed one to its last event. */
function truth(events: StreamEvent[]): { ms: number; lowerBound: boolean } {
  let ms = 0;
  let lowerBound = false;
  let start: number | undefined;
  let last = 0;
  for (const event of events) {
    if (event.type === T.RUN_START && start !== undefined) {
      ms += last - start;
      lowerBound = true;
    }
    if (event.type === T.RUN_START) start = event.timestamp;
    last = event.timestamp;
    if ((event.type === T.RUN_END || event.type === T.RUN_ERROR || event.type === T.RUN_WAITING) && start !== undefined) {
      ms += event.timestamp - start;
      start = undefined;
    }
  }
  if (start !== undefined) {
    ms += last - start;
    lowerBound = true;
  }
  return { ms, lowerBound };
}

function nodeStatuses(items: TraceItem[]): string[] {
  return items.flatMap((item) => (item.kind === 'node' ? [item.node.status, ...nodeStatuses(item.node.items)] : []));
}

const segmentsArb = fc.array(fc.record({ end: fc.constantFrom(...ENDS), gaps: fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 4 }) }), { minLength: 1, maxLength: 5 });

describe('run status and duration over generated histories', () => {
  const saved = { ...colors };
  beforeAll(() => void Object.assign(colors, createColors(false)));
  afterAll(() => void Object.assign(colors, saved));

  it('the projection counts killed segments to their last event, marked a lower bound; the incremental fold agrees', () => {
    fc.assert(
      fc.property(segmentsArb, (segments) => {
        const events = history(segments);
        const meta = foldRunMetaBatch(emptyRunMeta('s', 'r'), events);
        expect(runDuration(meta)).toEqual(truth(events));
        expect(events.reduce(foldRunMeta, emptyRunMeta('s', 'r'))).toEqual(meta);
      }),
      { numRuns: trials(300, 5000) },
    );
  });

  it('runs list and runs show print the same status word and duration; no node is left "incomplete"', () => {
    fc.assert(
      fc.property(segmentsArb, fc.boolean(), (segments, writerAlive) => {
        const events = history(segments);
        const folded = foldRunMetaBatch(emptyRunMeta('s', 'r'), events);
        // As listings give it: a run that recorded no end is running only while a live writer holds it.
        const meta = folded.status === 'running' && !writerAlive ? { ...folded, status: 'stopped' as const } : folded;
        const trace = withRunMeta(buildTrace('r', events), meta);
        expect(trace.status).toBe(meta.status);
        const duration = truth(events);
        expect({ ms: trace.durationMs, lowerBound: trace.durationLowerBound }).toEqual(duration);
        const shown = `${duration.lowerBound ? '≥ ' : ''}`;
        const row = renderRuns([meta]).split('\n')[1]!;
        const head = renderTrace(trace, DEFAULT_PLACE).split('\n')[0]!;
        expect(row).toContain(` ${meta.status} `);
        expect(head).toContain(` ${meta.status}`);
        const listedDuration = row.slice(row.lastIndexOf('Z') + 1).trim();
        expect(listedDuration.startsWith(shown)).toBe(true);
        expect(head).toContain(`· ${listedDuration}`);
        const statuses = nodeStatuses(trace.items);
        expect(statuses).not.toContain('incomplete');
        if (meta.status !== 'running') expect(statuses).not.toContain('running');
        // A node a killed writer left in an earlier segment is stopped, whatever the run's status now.
        const killedBefore = segments.slice(0, -1).filter((s) => s.end === 'killed').length;
        expect(statuses.filter((s) => s === 'stopped').length).toBeGreaterThanOrEqual(killedBefore);
      }),
      { numRuns: trials(300, 5000) },
    );
  });
});
