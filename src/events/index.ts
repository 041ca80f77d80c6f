export * from './types.js';
export { generateId, newEventId, newRunId, newSpanId } from './ids.js';
export { EventStreamer, type EventHandler, type EventStreamerOptions, type HandlerErrorReporter, type HistoryFilter, type EventStreamerStats } from './streamer.js';
export { copyData, snapshot } from './snapshot.js';
export { FlowVisualizer, type FlowVisualizerOptions } from './visualizer.js';
export {
  attachOpenTelemetry,
  bridgeToOpenTelemetry,
  providerName,
  GENAI_SEMCONV_VERSION,
  type OtelAttributeValue,
  type OpenTelemetryOptions,
  type OtelApi,
  type OtelAttributes,
  type OtelSpan,
  type OtelTracer,
} from './otel.js';
