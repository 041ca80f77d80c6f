import { loadAiSdk } from './ai-sdk.js';
import { z } from 'zod';
import type { BackpackHandle } from '../../backpack/index.js';
import { FlowAction, type RunScope } from '../../flow/index.js';
import { InvalidModelOutputError } from './errors.js';
import { LlmNode, llmParamsShape, type LlmParams } from './llm-node.js';
import { promptParamsShape, readPrompt, type Prompt, type PromptParams } from './prompt.js';

const actionName = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'an action is 1-64 letters, digits, or _ . : -');

/** Params of {@link DecisionNode}. */
export const decisionParamsSchema = z
  .strictObject({
    ...llmParamsShape,
    ...promptParamsShape,
    /** The actions the model chooses from: a list, or action to a description of when to choose it. */
    actions: z.union([z.array(actionName).min(1), z.record(actionName, z.string())]),
    /** Backpack key the decision (`{ action, reason }`) is packed under. Default `'decision'`. */
    decisionTo: z.string().min(1).optional(),
    /** Model answers asked for before routing to `'error'` when none is a valid choice. Default 3. */
    decisionAttempts: z.number().int().min(1).max(10).optional(),
  })
  .refine((p) => p.promptFrom !== undefined || p.conversation !== undefined, { message: 'set promptFrom or conversation (where the prompt is in the backpack)' })
  .refine((p) => (Array.isArray(p.actions) ? p.actions.length : Object.keys(p.actions).length) > 0, { message: 'declare at least one action', path: ['actions'] })
  .refine((p) => !actionList(p.actions).includes(FlowAction.ERROR), { message: `'${FlowAction.ERROR}' is reserved for an invalid decision`, path: ['actions'] });

/** The params of a DecisionNode, typed. */
export type DecisionParams = LlmParams & PromptParams & { actions: string[] | Record<string, string>; decisionTo?: string; decisionAttempts?: number };

/** A decision as packed: the chosen action and the model's reason, or the error when no valid choice came. */
export interface Decision {
  action: string;
  reason?: string;
  error?: string;
}

interface DecisionPrep extends Prompt {
  signal?: AbortSignal;
}

function actionList(actions: string[] | Record<string, string>): string[] {
  return Array.isArray(actions) ? actions : Object.keys(actions);
}

/**
 * The model chooses one of the node's declared `actions` (structured output, validated with zod); the node packs
 * `{ action, reason }` under `decisionTo` and returns the action, so the flow routes on it. An answer that is not a
 * valid choice is quarantined and the model asked again (up to `decisionAttempts`); then the node routes to
 * `FlowAction.ERROR`.
 */
export class DecisionNode extends LlmNode<DecisionPrep, Decision> {
  static override paramsSchema: z.ZodType = decisionParamsSchema;

  /** The node's params, typed. */
  protected get decisionParams(): DecisionParams {
    return this.params as unknown as DecisionParams;
  }

  /** The actions the model may choose. */
  get actions(): string[] {
    return actionList(this.decisionParams.actions);
  }

  override prep(backpack: BackpackHandle, scope: RunScope): DecisionPrep {
    const p = this.decisionParams;
    const listed = Array.isArray(p.actions) ? p.actions.map((a) => `- ${a}`) : Object.entries(p.actions).map(([a, when]) => `- ${a}: ${when}`);
    const instruction = `Choose exactly one of these actions:\n${listed.join('\n')}\nAnswer with JSON only: {"action": "<one of the actions>", "reason": "<one sentence>"}.`;
    const system = [p.systemPrompt, instruction].filter(Boolean).join('\n\n');
    return { ...readPrompt(this.id, backpack, p, system), signal: scope.signal };
  }

  override async exec(prep: DecisionPrep): Promise<Decision> {
    const actions = this.actions;
    const schema = z.object({ action: z.enum(actions as [string, ...string[]]), reason: z.string().optional() });
    const attempts = this.decisionParams.decisionAttempts ?? 3;
    const { Output } = await loadAiSdk();
    let last: InvalidModelOutputError | undefined;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        const reply = await this.callModel({
          system: prep.system,
          messages: prep.messages,
          output: Output.object({ schema, name: 'decision' }),
          signal: prep.signal,
          purpose: 'decision',
        });
        const decision = schema.parse(reply.output);
        return decision.reason === undefined ? { action: decision.action } : { action: decision.action, reason: decision.reason };
      } catch (error) {
        if (!(error instanceof InvalidModelOutputError)) throw error;
        last = error;
        this.recordFailedAttempt('decision', attempt, { error: error.message, output: typeof error.output === 'string' ? error.output : null });
      }
    }
    return { action: FlowAction.ERROR, error: `Node '${this.id}': no valid decision after ${attempts} attempts (actions: ${actions.join(', ')}); last: ${last?.message}` };
  }

  override post(backpack: BackpackHandle, _prep: DecisionPrep, decision: Decision): string {
    backpack.pack(this.decisionParams.decisionTo ?? 'decision', decision);
    return decision.action;
  }
}
