/**
 * `npm run example:hello`: a two-node flow on the Backpack, then the questions backpackflow answers:
 * who wrote each key, what changed, and what the agent knew before a node ran.
 */
import { BackpackNode, Flow, type BackpackHandle } from '../src/index.js';

class Greeter extends BackpackNode<string, string> {
  static override namespaceSegment = 'greeter';
  override prep(backpack: BackpackHandle): string {
    return backpack.unpackRequired('name') as string;
  }
  override exec(name: string): string {
    return `Hello, ${name}!`;
  }
  override post(backpack: BackpackHandle, _name: string, greeting: string): string {
    backpack.pack('greeting', greeting);
    return 'shout';
  }
}

class Shouter extends BackpackNode {
  override readonly permissions = { read: ['greeting'], write: ['loud'] };
  override post(backpack: BackpackHandle): undefined {
    backpack.pack('loud', (backpack.unpackRequired('greeting') as string).toUpperCase());
    return undefined;
  }
}

const flow = new Flow({ namespace: 'hello' });
const greeter = flow.addNode(Greeter, { id: 'greeter' });
greeter.on('shout', flow.addNode(Shouter, { id: 'shouter' }));

await flow.run({ name: 'world' });

const loud = flow.backpack.getItem('loud');
console.log(`loud = ${JSON.stringify(loud?.value)}, written by ${loud?.metadata.sourceNodeId} in ${loud?.metadata.sourceNamespace}`);
const before = flow.backpack.getSnapshotBeforeNode('shouter');
console.log('keys before shouter ran:', before.keys());
console.log('diff:', JSON.stringify(flow.backpack.diff(before, flow.backpack).added));
