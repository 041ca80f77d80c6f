import type { DependencyLookup } from '../../src/nodes/index.js';
import { EventStreamer, type StreamEvent } from '../../src/events/index.js';

/** A dependency lookup over a plain record (what a DependencyContainer provides). */
export function depsOf(values: Record<string, unknown>): DependencyLookup {
  return {
    has: (key) => Object.hasOwn(values, key),
    get: <T>(key: string) => {
      if (!Object.hasOwn(values, key)) throw new Error(`no dependency '${key}'`);
      return values[key] as T;
    },
  };
}

/** An event streamer and the list of every event it emitted. */
export function recordingStreamer(): { streamer: EventStreamer; events: StreamEvent[] } {
  const streamer = new EventStreamer();
  const events: StreamEvent[] = [];
  streamer.on('*', (e) => void events.push(e));
  return { streamer, events };
}
