/**
 * Review s42: flow files may name `backpackflow/schema/flow-config.schema.json` as their "$schema" (exported as
 * ./schema/*, "for an editor's help"). That JSON Schema was generated from the zod schema's output type
 * (scripts/generate-schemas.ts renderSchemaFile: z.toJSONSchema(schema) without io: 'input'), so it required every key
 * zod fills with a default: `namespace`, `edges`, `dependencies` at each flow, `params` at each node, `condition` at
 * each edge. An editor (or any JSON Schema validator) flags valid flow files, such as this repository's own CLI
 * fixture, as invalid, while `backpackflow validate` and `run` accept them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FlowConfigSchema } from '../../src/serialization/schema.js';

const root = join(import.meta.dirname, '..', '..');
const jsonSchema = JSON.parse(readFileSync(join(root, 'schema', 'flow-config.schema.json'), 'utf8')) as any;

/** Keys the JSON Schema requires that `config` lacks, with their JSON path (flows, their nodes and edges, nested). */
function missingRequired(config: any, path = ''): string[] {
  const out: string[] = [];
  for (const key of jsonSchema.required as string[]) if (!(key in config)) out.push(`${path}/${key}`);
  (config.nodes ?? []).forEach((node: any, i: number) => {
    for (const key of jsonSchema.properties.nodes.items.required as string[]) if (!(key in node)) out.push(`${path}/nodes/${i}/${key}`);
    if (node.internalFlow) out.push(...missingRequired(node.internalFlow, `${path}/nodes/${i}/internalFlow`));
  });
  (config.edges ?? []).forEach((edge: any, i: number) => {
    for (const key of jsonSchema.properties.edges.items.required as string[]) if (!(key in edge)) out.push(`${path}/edges/${i}/${key}`);
  });
  (config.subflows ?? []).forEach((sub: any, i: number) => out.push(...missingRequired(sub, `${path}/subflows/${i}`)));
  return out;
}

describe('the shipped flow-config JSON Schema', () => {
  it('requires nothing that the library accepts a flow file without', () => {
    const file = JSON.parse(readFileSync(join(root, 'test', 'cli', 'fixtures', 'flow.json'), 'utf8'));
    expect(FlowConfigSchema.safeParse(file).success).toBe(true);
    expect(missingRequired(file)).toEqual([]);
    const minimal = { version: '2.0.0', nodes: [{ type: 'Step', id: 'step' }] };
    expect(FlowConfigSchema.safeParse(minimal).success).toBe(true);
    expect(missingRequired(minimal)).toEqual([]);
  });
});
