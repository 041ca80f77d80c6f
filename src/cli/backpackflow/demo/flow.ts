/** The demo research agent as one durable flow. */
import type { ContextEngine } from '../../../context/index.js';
import { Flow } from '../../../nodes/index.js';
import type { MemoryStore } from '../../../store/index.js';
import { AnswerNode, GuardNode, RememberNode, ResearchNode, RumorNode, type Generate, type Progress } from './nodes.js';

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
