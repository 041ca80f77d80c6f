/**
 * Node classes for the JSON flows in this folder. `register(loader)` registers them under their type names
 * (the CLI's `--modules` calls it).
 */
import { z } from 'zod';
import { BackpackNode, type BackpackHandle, type FlowLoader } from '../../src/index.js';

/** Packs `params.text` under `params.key`. */
export class TextSourceNode extends BackpackNode {
  static override paramsSchema = z.object({ key: z.string().min(1), text: z.string() });
  override post(backpack: BackpackHandle): undefined {
    backpack.pack(this.params.key as string, this.params.text);
    return undefined;
  }
}

/** Packs the `top` most frequent words (of 4+ letters) of the text under `from` as a list under `to`. */
export class KeywordsNode extends BackpackNode<string, string[]> {
  static override paramsSchema = z.object({ from: z.string().min(1), to: z.string().min(1), top: z.number().int().min(1).default(5) });
  override prep(backpack: BackpackHandle): string {
    return backpack.unpackRequired(this.params.from as string) as string;
  }
  override exec(text: string): string[] {
    const counts = new Map<string, number>();
    for (const word of text.toLowerCase().match(/[a-z]{4,}/g) ?? []) counts.set(word, (counts.get(word) ?? 0) + 1);
    return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, (this.params.top as number | undefined) ?? 5).map(([w]) => w);
  }
  override post(backpack: BackpackHandle, _text: string, words: string[]): undefined {
    backpack.pack(this.params.to as string, words);
    return undefined;
  }
}

/** Fills `{{key}}` placeholders of `params.template` from the backpack and packs the result under `params.to`. */
export class TemplateNode extends BackpackNode<string> {
  static override paramsSchema = z.object({ template: z.string(), to: z.string().min(1) });
  override prep(backpack: BackpackHandle): string {
    return (this.params.template as string).replace(/\{\{([^}]+)\}\}/g, (_m, key: string) => {
      const value = backpack.unpack(key.trim());
      return Array.isArray(value) ? value.join(', ') : String(value ?? '');
    });
  }
  override post(backpack: BackpackHandle, text: string): undefined {
    backpack.pack(this.params.to as string, text);
    return undefined;
  }
}

/** A composite whose internal flow comes from its config (the loader attaches it; the default exec runs it). */
export class PipelineNode extends BackpackNode {}

/** Registers every node class of this module on `loader`. */
export function register(loader: FlowLoader): void {
  loader.register('TextSource', TextSourceNode).register('Keywords', KeywordsNode).register('Template', TemplateNode).register('Pipeline', PipelineNode);
}
