/**
 * The demo research agent's nodes: built from the library's own parts (context engine, memory store, Backpack
 * provenance and quarantine). All offline and deterministic.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackpackHandle } from '../../../backpack/index.js';
import type { ContextEngine } from '../../../context/index.js';
import { BackpackNode, type Flow } from '../../../nodes/index.js';
import { MemoryStore, tokenize, type MemoryItem } from '../../../store/index.js';
import { isSummarizable, summarizeFile } from './summarize.js';

/** Agent ids the demo registers with the context engine. */
export const WRITER = 'demo-writer';
export const SYNTHESIZER = 'demo-synthesis';
const FRAME_TYPE = 'summary';

/** Progress callback for long steps (the CLI shows a bar when stdout is a terminal). */
export type Progress = (done: number, total: number) => void;

/** A text generator (an LLM behind it); when present, summaries and answers come from it. */
export type Generate = (prompt: string) => Promise<string>;

interface DemoDeps {
  engine: ContextEngine;
  memory: MemoryStore;
  progress?: Progress;
  llm?: Generate;
}

function deps(node: BackpackNode): DemoDeps {
  const lookup = node.deps;
  if (!lookup) throw new Error(`${node.id}: the demo nodes need deps { engine, memory }`);
  const optional = <T>(key: string): T | undefined => (lookup.has(key) ? lookup.get<T>(key) : undefined);
  return { engine: lookup.get<ContextEngine>('engine'), memory: lookup.get<MemoryStore>('memory'), progress: optional('progress'), llm: optional('llm') };
}

/** Scans the workspace (Merkle tree, incremental) and registers the writer and synthesis agents. */
export class ScanNode extends BackpackNode {
  override async exec(): Promise<{ nodes: number; hashed: number; changedPaths: number }> {
    const { engine } = deps(this);
    const report = await engine.scan();
    await engine.registerAgent({ agentId: WRITER, role: 'writer', capabilities: [FRAME_TYPE] });
    await engine.registerAgent({ agentId: SYNTHESIZER, role: 'synthesis', capabilities: [FRAME_TYPE] });
    return { nodes: report.nodes, hashed: report.hashed, changedPaths: report.changedPaths.length };
  }
  override post(backpack: BackpackHandle, _p: unknown, scan: { nodes: number; hashed: number; changedPaths: number }): undefined {
    backpack.pack('scan', scan);
    return undefined;
  }
}

/**
 * Summarizes, as the writer agent, every file whose summary frame is missing or describes an older version:
 * extractively, or with the LLM when one is configured.
 */
export class SummarizeNode extends BackpackNode {
  override async exec(): Promise<{ written: string[]; reused: number }> {
    const { engine, progress, llm } = deps(this);
    const files = (await engine.listNodes('')).filter((n) => n.kind === 'file' && isSummarizable(n.path, n.size));
    const written: string[] = [];
    let reused = 0;
    for (const [i, file] of files.entries()) {
      progress?.(i, files.length);
      const head = await engine.getHead(file.path, FRAME_TYPE);
      if (head !== null && (await engine.getFrame(head)).nodeId === file.nodeId) {
        reused++;
        continue;
      }
      const text = readFileSync(join(engine.workspaceRoot, file.path), 'utf8');
      const summary = llm
        ? (await llm(`Summarize the file ${file.path} in one sentence.\n\n${text.slice(0, 6000)}`)).trim().replace(/\s+/g, ' ')
        : summarizeFile(file.path, text);
      if (summary === '') continue;
      await engine.putFrame(file.path, { type: FRAME_TYPE, content: `${file.path}: ${summary}` }, WRITER);
      written.push(file.path);
    }
    progress?.(files.length, files.length);
    return { written, reused };
  }
  override post(backpack: BackpackHandle, _p: unknown, result: { written: string[]; reused: number }): undefined {
    backpack.pack('summaries', { written: result.written.length, reused: result.reused, files: result.written });
    return undefined;
  }
}

/** Synthesizes directory summaries bottom-up as the synthesis agent; on later runs regenerates only stale ones. */
export class SynthesizeNode extends BackpackNode {
  override async exec(): Promise<{ mode: 'synthesized' | 'regenerated'; frames: number }> {
    const { engine } = deps(this);
    if ((await engine.getHead('', FRAME_TYPE)) === null) {
      await engine.synthesizeBranch('', FRAME_TYPE, SYNTHESIZER, { kind: 'summarization', sourceType: FRAME_TYPE });
      const dirs = (await engine.listNodes('')).filter((n) => n.kind === 'dir').length;
      return { mode: 'synthesized', frames: dirs };
    }
    const result = await engine.regenerate('', { recursive: true });
    return { mode: 'regenerated', frames: result.regenerated.length };
  }
  override post(backpack: BackpackHandle, _p: unknown, result: { mode: string; frames: number }): undefined {
    backpack.pack('synthesis', result);
    return undefined;
  }
}

/** The composite research step: scan → summarize → synthesize, as an internal flow. */
export class ResearchNode extends BackpackNode {
  override buildInternalFlow(flow: Flow): void {
    const scan = flow.addNode(ScanNode, { id: 'scan' });
    const summarize = flow.addNode(SummarizeNode, { id: 'summarize' });
    const synthesize = flow.addNode(SynthesizeNode, { id: 'synthesize' });
    scan.next(summarize);
    summarize.next(synthesize);
  }
}

function memoryId(path: string): string {
  return `ctx_${createHash('sha256').update(path).digest('hex').slice(0, 20)}`;
}

/**
 * Writes file summaries to long-term memory, one item per file: only those whose item is missing or holds an older
 * summary frame (so a new data directory over a scanned workspace still gets every summary).
 */
export class RememberNode extends BackpackNode {
  override async exec(): Promise<number> {
    const { engine, memory } = deps(this);
    const items: MemoryItem[] = [];
    for (const file of await engine.listNodes('')) {
      if (file.kind !== 'file') continue;
      const head = await engine.getHead(file.path, FRAME_TYPE);
      if (head === null) continue;
      const id = memoryId(file.path);
      if ((await memory.get(id))?.metadata?.['frameId'] === head) continue;
      const frame = await engine.getFrame(head);
      items.push({ id, content: frame.content, keywords: file.path.split(/[/.]/).filter(Boolean), metadata: { path: file.path, frameId: head }, createdAt: Date.now() });
    }
    if (items.length) await memory.writeMany(items);
    return items.length;
  }
  override post(backpack: BackpackHandle, _p: unknown, written: number): undefined {
    backpack.pack('memory', { written });
    return undefined;
  }
}

/** A source the agent should not trust: packs a claim that contradicts the workspace (the poisoned value). */
export class RumorNode extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    backpack.pack('claim', this.params['claim'], { tags: ['untrusted'] });
    return undefined;
  }
}

/** Answers the question from memory search: the best matching summaries (or the LLM's answer from them), with their sources. */
export class AnswerNode extends BackpackNode {
  override prep(backpack: BackpackHandle): string {
    return backpack.unpackRequired('question') as string;
  }
  override async exec(question: string): Promise<{ text: string; sources: string[] }> {
    const { memory, llm } = deps(this);
    const hits = await memory.searchScored(question, 3);
    if (hits.length === 0) return { text: 'nothing in memory answers that', sources: [] };
    const notes = hits.map((h) => h.item.content).join('\n');
    const sources = hits.map((h) => String(h.item.metadata?.['path'] ?? h.item.id));
    if (!llm) return { text: notes, sources };
    return { text: (await llm(`Answer the question from these notes only.\n\nQuestion: ${question}\n\nNotes:\n${notes}`)).trim(), sources };
  }
  override post(backpack: BackpackHandle, _q: string, answer: { text: string; sources: string[] }): undefined {
    backpack.pack('answer', answer);
    return undefined;
  }
}

/**
 * Checks the untrusted claim against memory: supported only when one memory item holds most of its words.
 * An unsupported claim is quarantined (out of the active state, with the reason).
 */
export class GuardNode extends BackpackNode {
  override prep(backpack: BackpackHandle): string | undefined {
    return backpack.unpack('claim') as string | undefined;
  }
  override async exec(claim: string | undefined): Promise<{ supported: boolean; coverage: number }> {
    if (claim === undefined) return { supported: true, coverage: 1 };
    const words = new Set(tokenize(claim));
    let best = 0;
    for (const hit of await deps(this).memory.searchScored(claim, 5)) {
      const have = new Set(tokenize(hit.item.content));
      best = Math.max(best, [...words].filter((w) => have.has(w)).length / Math.max(1, words.size));
    }
    return { supported: best >= 0.8, coverage: best };
  }
  override post(backpack: BackpackHandle, _c: unknown, verdict: { supported: boolean; coverage: number }): string {
    if (verdict.supported) return 'default';
    backpack.quarantine('claim', { reason: `unsupported by the workspace (best memory match covers ${Math.round(verdict.coverage * 100)}% of its words)` });
    return 'quarantined';
  }
}
