/**
 * An agent that asks a person before it publishes: `draft` writes a post, `approve` pauses the run with the draft
 * and waits for `{ approved, note? }`, then routes to `publish` or `revise`. Built in code, so the CLI runs it with
 * `--flow-module examples/approval/agent.ts#buildFlow` (and resumes it with no flags: the module is recorded).
 */
import { z } from 'zod';
import { BackpackNode, Flow, type BackpackHandle } from '../../src/index.js';

/** The answer the person gives. */
export const Decision = z.object({ approved: z.boolean(), note: z.string().optional() });

class Draft extends BackpackNode {
  override readonly permissions = { read: ['topic'], write: ['draft'] };
  override post(backpack: BackpackHandle) {
    backpack.pack('draft', `Tides: the moon pulls the sea. A post about ${backpack.unpack<string>('topic') ?? 'tides'}.`);
    return undefined;
  }
}

class Approve extends BackpackNode {
  override readonly permissions = { read: ['draft'], write: ['decision'] };
  override async post(backpack: BackpackHandle) {
    // Before the interrupt: reads only, so running again on resume is harmless.
    const draft = backpack.unpack<string>('draft');
    const decision = await this.interrupt({ question: 'Publish this post?', draft }, { schema: Decision });
    backpack.pack('decision', decision);
    return decision.approved ? 'publish' : 'revise';
  }
}

class Publish extends BackpackNode {
  override readonly permissions = { read: ['draft'], write: ['published'] };
  override post(backpack: BackpackHandle) {
    backpack.pack('published', { text: backpack.unpack('draft'), at: 'the blog' });
    return undefined;
  }
}

class Revise extends BackpackNode {
  override readonly permissions = { read: ['decision'], write: ['todo'] };
  override post(backpack: BackpackHandle) {
    backpack.pack('todo', `revise: ${backpack.unpack<{ note?: string }>('decision')?.note ?? 'no note'}`);
    return undefined;
  }
}

/** The approval flow. */
export function buildFlow(): Flow {
  const flow = new Flow({ namespace: 'approval' });
  const draft = flow.addNode(Draft, { id: 'draft' });
  const approve = flow.addNode(Approve, { id: 'approve' });
  draft.next(approve);
  approve.on('publish', flow.addNode(Publish, { id: 'publish' }));
  approve.on('revise', flow.addNode(Revise, { id: 'revise' }));
  return flow;
}
