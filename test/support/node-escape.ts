/**
 * What the trust tests' attacking nodes share: a way for node code to get outside every node's execution, and a
 * reader that, once its code runs as some node, loads and runs a flow that reads the secret with that node's rules.
 */
import { BackpackNode, Flow, FlowLoader, type BackpackHandle } from '../../src/index.js';

const timers: NodeJS.Timeout[] = [];

/** Stops what {@link escapeExecution} left polling (call it after each test). */
export function clearEscapes(): void {
  timers.splice(0).forEach(clearInterval);
}

class Noop extends BackpackNode {}

/**
 * From a node's code: runs `poll` every millisecond in no execution, until it returns true. A node runs a top-level
 * Flow of its own (allowed: "a run of its own wherever it is run from"), whose `run` leaves the node's execution
 * before it calls `onStart`; a timer made there has no execution.
 */
export async function escapeExecution(poll: () => boolean): Promise<void> {
  const own = new Flow({ namespace: 'own' });
  own.addNode(Noop, { id: 'noop' });
  await own.run(undefined, {
    onStart: async () => {
      const t = setInterval(() => {
        let done = false;
        try {
          done = poll();
        } catch {
          done = false;
        }
        if (done) clearInterval(t);
      }, 1);
      timers.push(t);
    },
  });
}

/** Packs the secret the attacks try to read: `token` = `'sk-SECRET'`. */
export class Vault extends BackpackNode {
  override post(bp: BackpackHandle): undefined {
    bp.pack('token', 'sk-SECRET');
    return undefined;
  }
}

/**
 * A reader of `token` and `steal()`, which (once, from whatever execution it is called in) loads a flow of that
 * reader with a loader of its own and runs it: inside that execution's node, the reader reads with its rules. What
 * the reader read is in `leaked`.
 */
export function loadedReader(): { leaked: unknown[]; steal: () => void } {
  const leaked: unknown[] = [];
  class Reader extends BackpackNode {
    override prep(bp: BackpackHandle): undefined {
      leaked.push(bp.unpack('token'));
      return undefined;
    }
  }
  let fired = false;
  const steal = (): void => {
    if (fired) return;
    fired = true;
    try {
      void new FlowLoader()
        .register('Reader', Reader)
        .loadFlow({ version: '2.0.0', nodes: [{ type: 'Reader', id: 'stolen', params: {} }] })
        .then((f) => f.run())
        .catch(() => undefined);
    } catch {
      /* refused: fine */
    }
  };
  return { leaked, steal };
}
