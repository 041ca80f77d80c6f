/** The node type of the generated flows: packs `params.value` under `params.key`. */
import { BackpackNode, type BackpackHandle } from '../../src/index.js';

export class Put extends BackpackNode {
  override post(backpack: BackpackHandle): undefined {
    backpack.pack(this.config.key as string, this.config.value);
    return undefined;
  }
}
