export * from './types.js';
export { generateId, newRunId, newSpanId } from './ids.js';
export { EventStreamer, type EventHandler, type EventStreamerOptions, type HandlerErrorReporter, type HistoryFilter, type EventStreamerStats } from './streamer.js';
export { FlowVisualizer, type FlowVisualizerOptions } from './visualizer.js';
export {
  attachOpenTelemetry,
  bridgeToOpenTelemetry,
  type OpenTelemetryOptions,
  type OtelApi,
  type OtelAttributes,
  type OtelSpan,
  type OtelTracer,
} from './otel.js';
