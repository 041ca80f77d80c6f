/**
 * A flow file may name the JSON Schema it follows (`"$schema"`, as editors use): it is accepted by validation and
 * loading alike, and it is not part of the flow (exporting the loaded flow gives no `$schema`). Refused before, as
 * an unrecognized key.
 */
import { describe, expect, it } from 'vitest';
import { BackpackNode, FlowLoader } from '../../src/index.js';

class Step extends BackpackNode {}

const config = {
  $schema: './node_modules/backpackflow/schema/flow-config.schema.json',
  version: '2.0.0',
  namespace: 'app',
  nodes: [{ type: 'Step', id: 'step' }],
};

describe('"$schema" in a flow file', () => {
  it('is accepted by validation and loading, and left out of the exported flow', async () => {
    const loader = new FlowLoader();
    loader.register('Step', Step);
    expect(loader.validateConfig(config)).toMatchObject({ valid: true });
    const flow = await loader.loadFlow(config);
    const exported = loader.exportFlow(flow);
    expect(exported).not.toHaveProperty('$schema');
    expect(exported).toMatchObject({ version: '2.0.0', namespace: 'app', nodes: [{ type: 'Step', id: 'step' }] });
  });

  it('must be a string, and other unknown keys stay refused', () => {
    const loader = new FlowLoader();
    loader.register('Step', Step);
    expect(loader.validateConfig({ ...config, $schema: 42 })).toMatchObject({ valid: false });
    expect(loader.validateConfig({ ...config, $comment: 'x' })).toMatchObject({ valid: false });
  });
});
