/**
 * Whether creating a node of a class runs only the library's code: then the flow loader may build it on first use
 * (see `deferNode` in the nodes module), as no one can tell when it was built.
 */
import { createRequire } from 'node:module';
import type * as Acorn from 'acorn';
import { BackpackNode, type BackpackNodeClass } from '../nodes/index.js';

/** acorn, loaded when a class is first judged (not with the library: most processes never load a flow). */
let acorn: typeof Acorn | undefined;

const verdicts = new WeakMap<object, boolean>();

/**
 * True when `NodeClass` (a BackpackNode class) and every class between it and BackpackNode are `class` source that
 * declares no constructor and no instance field (public, private or auto-accessor), and none of them gives its
 * nodes a `namespaceSegment`, `permissions` (static, or on the prototype), a `paramsSchema` or a `fromConfig`: so
 * that `new NodeClass(config, context)` does exactly what BackpackNode's constructor does with a checked config,
 * which cannot fail and changes nothing else. Anything this cannot read (a class compiled to a function, a proxy,
 * source acorn does not parse) is judged not plain. Static members and methods are fine; an instance getter or
 * setter is not (the constructors set and read instance properties, which an accessor could intercept).
 */
export function constructsPlainly(NodeClass: BackpackNodeClass): boolean {
  let verdict = verdicts.get(NodeClass);
  if (verdict === undefined) {
    verdict = judge(NodeClass);
    verdicts.set(NodeClass, verdict);
  }
  return verdict;
}

function judge(NodeClass: BackpackNodeClass): boolean {
  const loadable = NodeClass as BackpackNodeClass & { fromConfig?: unknown };
  if (loadable.fromConfig !== undefined || NodeClass.namespaceSegment !== undefined || NodeClass.permissions !== undefined || NodeClass.paramsSchema !== undefined) return false;
  if ('permissions' in NodeClass.prototype) return false;
  for (let C: unknown = NodeClass; C !== BackpackNode; C = Object.getPrototypeOf(C)) {
    if (typeof C !== 'function' || !(C.prototype instanceof BackpackNode) || !declaresNoInstanceState(C)) return false;
  }
  return true;
}

/** True when the source of class `C` parses as a class whose body has no constructor and no instance field. */
function declaresNoInstanceState(C: object): boolean {
  let source: string;
  try {
    source = Function.prototype.toString.call(C);
  } catch {
    return false;
  }
  if (!/^class\b/.test(source)) return false;
  let program: Acorn.Node;
  try {
    acorn ??= createRequire(import.meta.url)('acorn') as typeof Acorn;
    program = acorn.parse(`(${source})`, { ecmaVersion: 'latest', sourceType: 'module' });
  } catch {
    return false;
  }
  const statement = (program as unknown as { body: { type: string; expression?: { type: string; body?: { body: Member[] } } }[] }).body;
  const expression = statement.length === 1 && statement[0]!.type === 'ExpressionStatement' ? statement[0]!.expression : undefined;
  if (expression?.type !== 'ClassExpression' || expression.body === undefined) return false;
  // Instance accessors are refused too: the constructors assign and read instance properties (`this.id = ...`,
  // `this.config = ...`, `this.params` for a schema), and an accessor of the same name on the prototype would run the
  // class's own code while the node is built.
  return expression.body.body.every(
    (member) =>
      member.type === 'StaticBlock' ||
      (member.type === 'MethodDefinition' && (member.kind === 'method' || member.static === true)) ||
      ((member.type === 'PropertyDefinition' || member.type === 'AccessorProperty') && member.static === true),
  );
}

interface Member {
  type: string;
  kind?: string;
  static?: boolean;
}
