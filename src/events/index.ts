export * from './types.js';
export { newRunId, newSpanId } from './ids.js';
export { EventStreamer, type EventHandler, type EventStreamerOptions, type HandlerErrorReporter, type HistoryFilter } from './streamer.js';
