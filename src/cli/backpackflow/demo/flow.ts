/** The demo research agent as one durable flow. */
import { fileURLToPath } from 'node:url';
import { generateText } from 'ai';
import { ContextEngine } from '../../../context/index.js';
import { resolveModel } from '../../../nodes/llm/index.js';
import { Flow } from '../../../nodes/index.js';
import { MemoryStore } from '../../../store/index.js';
import { AnswerNode, GuardNode, RememberNode, ResearchNode, RumorNode, type Generate, type Progress } from './nodes.js';

/** This module's file, as the demo records it with its runs (`.ts` from source, `.js` when built). */
export const DEMO_FLOW_MODULE = fileURLToPath(import.meta.url);

/** The claim the guard must catch: the workspace says state is kept in JSONL logs and JSON checkpoints. */
export const POISONED_CLAIM = 'backpackflow keeps every run in a hosted SQL database that needs a network connection';

/** Dependencies of the demo flow. */
export interface DemoFlowDeps {
  engine: ContextEngine;
  memory: MemoryStore;
  progress?: Progress;
  /** An LLM for summaries and the answer (default: extractive, offline). */
  llm?: Generate;
}

/**
 * research (scan → summarize → synthesize, a composite) → remember → rumor → answer → guard, under namespace
 * `demo`.
 */
export function buildDemoFlow(deps: DemoFlowDeps): Flow {
  const values = new Map<string, unknown>(Object.entries(deps).filter(([, v]) => v !== undefined));
  const flow = new Flow({
    namespace: 'demo',
    deps: { get: <T>(key: string) => values.get(key) as T, has: (key: string) => values.has(key) },
  });
  const research = flow.addNode(ResearchNode, { id: 'research' });
  const remember = flow.addNode(RememberNode, { id: 'remember' });
  const rumor = flow.addNode(RumorNode, { id: 'rumor', claim: POISONED_CLAIM });
  const answer = flow.addNode(AnswerNode, { id: 'answer' });
  const guard = flow.addNode(GuardNode, { id: 'guard' });
  research.next(remember);
  remember.next(rumor);
  rumor.next(answer);
  answer.next(guard);
  return flow;
}

/**
 * The LLM from the environment: `BACKPACKFLOW_MODEL` ("provider:modelId", e.g. "openai:gpt-4o-mini"; the provider's
 * API key variable as usual) and, for `openai-compatible`, `BACKPACKFLOW_BASE_URL`. Unset: offline.
 */
async function configuredLlm(): Promise<{ label: string; generate: Generate } | undefined> {
  const spec = process.env.BACKPACKFLOW_MODEL;
  if (spec === undefined || spec === '') return undefined;
  const resolved = await resolveModel(spec, { baseURL: process.env.BACKPACKFLOW_BASE_URL, owner: 'BACKPACKFLOW_MODEL' });
  return { label: resolved.label, generate: async (prompt) => (await generateText({ model: resolved.model, prompt, maxRetries: 2 })).text };
}

/**
 * The demo flow with what it needs opened: the context engine over `workspace` (with `ignore`), long-term memory in
 * `dataDir`, and the LLM from the environment, if any. The demo records this builder with its runs, so that
 * `runs resume` and `runs fork` rebuild the same flow; `close` releases what it opened.
 */
export async function openDemoFlow(
  args: { workspace: string; dataDir: string; ignore?: string[] },
  progress?: Progress,
): Promise<{ flow: Flow; close: () => Promise<void>; llm: { label: string } | undefined }> {
  const llm = await configuredLlm();
  const engine = await ContextEngine.open(args.workspace, { ignore: args.ignore ?? [] });
  const memory = new MemoryStore({ dataDir: args.dataDir });
  const flow = buildDemoFlow({ engine, memory, progress, llm: llm?.generate });
  return { flow, llm, close: async () => { await memory.close(); await engine.close(); } };
}
