/** A flow that runs a script of Backpack edits, one per step: for tests of what each step's record shows. */
import { BackpackNode, Flow, type BackpackHandle } from '../../src/index.js';

/** A flow of one node looping over `script`: step i runs script[i - 1]. */
export function stepper(script: Array<(backpack: BackpackHandle) => void>): Flow {
  class Stepper extends BackpackNode {
    override post(backpack: BackpackHandle): string {
      const i = (backpack.peek('__i') as number | undefined) ?? 0;
      script[i]!(backpack);
      backpack.pack('__i', i + 1);
      return i + 1 < script.length ? 'again' : 'done';
    }
  }
  const flow = new Flow({ namespace: 'main' });
  const node = flow.addNode(Stepper, { id: 'stepper' });
  node.on('again', node);
  return flow;
}
