import { FlowConfigError } from './errors.js';

/** Parses the text of a flow config file; malformed JSON is a FlowConfigError naming line and column. */
export function parseFlowConfig(text: string, source = 'flow config'): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const message = (error as Error).message;
    const at = /position (\d+)/.exec(message);
    let where = '';
    if (at) {
      const offset = Number(at[1]);
      const before = text.slice(0, offset);
      const line = before.split('\n').length;
      const column = offset - before.lastIndexOf('\n');
      where = ` at line ${line}, column ${column}`;
    }
    throw new FlowConfigError([{ path: '', message: `${source} is not valid JSON${where}: ${message}` }], `Malformed ${source}`);
  }
}
