/**
 * The names a run writes to its event log as they are (the envelope's NAME_FIELDS, DESIGN D11 and D15): node ids,
 * class names and namespaces are never redacted (checkpoints, projections and readers find nodes by them), so the
 * store refuses an event whose names hold a secret. A flow with such a name is refused here instead, by the run's
 * own redaction, before anything of the run is written (the store would refuse it only once its first step ran).
 */
import { FlowError, type BaseNode } from '../flow/index.js';
import { routeTable } from '../flow/node.js';
import { registeredNodeName } from '../backpack/handle.js';
import { nodeBinding } from '../nodes/backpack-node.js';
import { BackpackNode, Flow, composeNamespace } from '../nodes/index.js';
import { redactorFor, type RedactionOptions } from '../redact/index.js';
import { InvalidIdError } from '../store/index.js';

/**
 * Whether a name holds a secret by the redaction `redaction` (a run's `redaction` option; without one, the built-in
 * catalogue): the test the run's store applies to the names of every event it writes. `FlowLoader.validateConfig`
 * takes it as `secretName`.
 */
export function secretNameTest(redaction?: RedactionOptions): (name: string) => boolean {
  const redactor = redactorFor(redaction);
  return (name) => redactor.holdsSecret(name);
}

/**
 * Refuses `flow` with a FlowError when a name a run of it would write holds a secret by `redaction` (see
 * {@link secretNameTest}): the id, class name or namespace of a node, or the id or namespace of a subflow. The error
 * names the first such node by its namespace with the secret replaced, and which of its names holds it. Checked are
 * the nodes a run can execute, at every level: those reachable from the entry of the flow, of each subflow reached
 * and of each composite node's internal flow (a run starts or resumes only at those). Nodes no route reaches are
 * left alone, and so not built: a flow loaded from a large config builds its nodes on first use.
 */
export function checkFlowNames(flow: Flow, redaction?: RedactionOptions): void {
  const redactor = redactorFor(redaction);
  // Named as the store names them in an event (NAME_FIELDS), and as the node's own names.
  const refuse = (what: string, namespace: string, field: 'nodeId' | 'nodeName' | 'namespace'): never => {
    const own = field === 'nodeId' ? 'its id' : field === 'nodeName' ? 'its class name' : 'its namespace';
    throw new FlowError(
      `${what} '${redactor.redactText(namespace)}' has a secret-looking ${field} (${own}, by the run's redaction): names and ids are written to ` +
        'the event log as they are (never redacted), so they must not hold secrets; rename it',
    );
  };
  const visit = (current: Flow): void => {
    if (current.namespace !== '' && redactor.holdsSecret(current.namespace)) refuse('flow', current.namespace, 'namespace');
    const queue: BaseNode[] = current.entryNode === undefined ? [] : [current.entryNode];
    const reached = new Set<BaseNode>(queue);
    for (let i = 0; i < queue.length; i++) {
      const node = queue[i]!;
      if (node instanceof Flow) {
        if (redactor.holdsSecret(node.id)) refuse('subflow', node.namespace, 'nodeId');
        visit(node);
      } else if (node instanceof BackpackNode) {
        if (redactor.holdsSecret(node.id)) refuse('node', node.namespace, 'nodeId');
        // The name its events carry: the one it was registered under (a node of another flow: its class's).
        const registered = nodeBinding(node, current);
        if (redactor.holdsSecret(registered === undefined ? node.constructor.name : registeredNodeName(registered))) refuse('node', node.namespace, 'nodeName');
        if (redactor.holdsSecret(node.namespace)) refuse('node', node.namespace, 'namespace');
        if (node.internalFlow !== undefined) visit(node.internalFlow);
      } else if (redactor.holdsSecret(node.id)) {
        refuse('node', composeNamespace(current.namespace, node.id), 'nodeId');
      }
      for (const next of routeTable(node).values()) {
        if (!reached.has(next)) {
          reached.add(next);
          queue.push(next);
        }
      }
    }
  };
  visit(flow);
}

/**
 * Refuses a new run whose run id or session key holds a secret by `redaction` (the run's; without one, the built-in
 * catalogue) with an InvalidIdError that shows it redacted: they name the run's directory (or its rows) and are
 * written in every event as they are, never redacted. Run ids a LangGraph thread maps to are hashed first.
 */
export function checkRunIds(ids: { sessionKey: string; runId: string }, redaction?: RedactionOptions): void {
  const redactor = redactorFor(redaction);
  for (const [kind, id] of [['sessionKey', ids.sessionKey], ['runId', ids.runId]] as const) {
    if (redactor.holdsSecret(id)) {
      throw new InvalidIdError(
        kind,
        redactor.redactText(id),
        "it looks like a secret (by the run's redaction): run ids and session keys name the run's files and are written in every event as they are, never redacted; choose another",
      );
    }
  }
}
