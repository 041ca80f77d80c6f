/**
 * The options of the commands that build a flow (a flow file, a flow module, node modules), defined without loading
 * the flow loader, so that commands which only read runs stay light.
 */
import { Option } from 'commander';
import { DEFAULT_MAX_FLOW_BYTES } from '../../serialization/limits.js';
import { positiveInteger } from './arguments.js';

/** Options of the commands that read a flow file. */
export interface FlowFileOptions {
  modules: string[];
  maxFlowBytes: number;
}

/** `--modules <file...>`: modules whose BackpackNode classes the flow uses. */
export function modulesOption(): Option {
  return new Option('--modules <file...>', 'modules whose BackpackNode classes the flow uses').default([]);
}

/** `--max-flow-bytes <n>`: the largest flow file accepted (default 16 MiB). */
export function maxFlowBytesOption(): Option {
  return new Option('--max-flow-bytes <n>', 'largest flow file accepted, in bytes')
    .argParser(positiveInteger('--max-flow-bytes'))
    .default(DEFAULT_MAX_FLOW_BYTES);
}

/** Options of the commands that build a run's flow: a flow file, a flow module, node modules. */
export interface FlowSourceOptions extends FlowFileOptions {
  flow?: string;
  flowModule?: string;
}

/** `--flow-module <file#export>`: build the flow by calling an exported function of a module. */
export function flowModuleOption(): Option {
  return new Option('--flow-module <file#export>', 'build the flow with an exported function of a module (default export name: buildFlow)');
}

