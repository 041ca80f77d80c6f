/**
 * Whether creating a node of a class runs only the library's code: then the flow loader may build it on first use
 * (see `deferNode` in the nodes module), as no one can tell when it was built.
 */
import { asBuilder } from '../nodes/execution.js';
import { createRequire } from 'node:module';
import type * as Acorn from 'acorn';
import { isHardenedAccessor } from '../harden.js';
import { BackpackNode, type BackpackNodeClass } from '../nodes/index.js';

/** acorn, loaded when a class is first judged (not with the library: most processes never load a flow). */
let acorn: typeof Acorn | undefined;

/** The verdict on each class's own source (parsed once: a function's source never changes). */
const sourceVerdicts = new WeakMap<object, boolean>();

/**
 * True when `NodeClass` (a BackpackNode class) and every class between it and BackpackNode are `class` source that
 * declares no constructor and no instance field (public, private or auto-accessor), and none of them gives its
 * nodes a `namespaceSegment`, `permissions` (static, or on the prototype), a `paramsSchema` or a `fromConfig`: so
 * that `new NodeClass(config, context)` does exactly what BackpackNode's constructor does with a checked config,
 * which cannot fail and changes nothing else. Anything this cannot read (a class compiled to a function, a proxy,
 * source acorn does not parse) is judged not plain. Static members and methods are fine; an instance getter or
 * setter is not (the constructors set and read instance properties, which an accessor could intercept), whether
 * written in the class or put on its prototype later. Only the verdict on each class's source is kept: what can be
 * changed after the class is defined (its statics, its prototypes' properties, its chain of classes) is read again
 * at every call, so a class changed after a flow was loaded is judged as it is now (see {@link constructorChange}).
 */
export function constructsPlainly(NodeClass: BackpackNodeClass): boolean {
  return describeChange(NodeClass) === undefined;
}

/**
 * Undefined when `NodeClass` constructs plainly (see {@link constructsPlainly}), else what makes it not, in words.
 */
function describeChange(NodeClass: BackpackNodeClass): string | undefined {
  for (const name of ['fromConfig', 'namespaceSegment', 'permissions'] as const) {
    if ((NodeClass as unknown as Record<string, unknown>)[name] !== undefined) return `it has a static '${name}'`;
  }
  if ('permissions' in NodeClass.prototype) return "its nodes have 'permissions'";
  return constructorChange(NodeClass);
}

/**
 * Undefined when `new NodeClass(config, context)` would run none of the class's own code (see
 * {@link constructsPlainly}; what it says of the class's registration, its static or prototype `permissions`, its
 * `namespaceSegment` and `fromConfig`, is left out), else what would run, in words. The loader asks this again when it
 * builds a node on first use: a class changed since the flow was loaded so that building a node now would run code
 * that building it at load did not is an error naming the change, not a node built differently.
 */
export function constructorChange(NodeClass: BackpackNodeClass): string | undefined {
  // A static is the class's code (a getter): read as no node (see asBuilder).
  if (asBuilder(undefined, () => NodeClass.paramsSchema) !== undefined) return "it has a static 'paramsSchema'";
  for (let C: unknown = NodeClass; C !== BackpackNode; C = Object.getPrototypeOf(C)) {
    if (typeof C !== 'function' || !(C.prototype instanceof BackpackNode)) return 'it does not extend BackpackNode as a class';
    const accessor = accessorOf(C.prototype as object);
    if (accessor !== undefined) return `the prototype of ${C.name || 'a class'} has a getter or setter '${String(accessor)}'`;
    let plain = sourceVerdicts.get(C);
    if (plain === undefined) sourceVerdicts.set(C, (plain = declaresNoInstanceState(C)));
    if (!plain) return `class ${C.name || '(anonymous)'} declares a constructor or an instance field, or its source cannot be read`;
  }
  return undefined;
}

/** The first own property of `prototype` that is a getter or setter, if any. */
function accessorOf(prototype: object): PropertyKey | undefined {
  for (const key of Reflect.ownKeys(prototype)) {
    const descriptor = Reflect.getOwnPropertyDescriptor(prototype, key);
    // (A method of a hardened prototype is kept behind an accessor of the library's: see harden.ts.)
    if (descriptor !== undefined && (descriptor.get !== undefined || descriptor.set !== undefined) && !isHardenedAccessor(descriptor)) return key;
  }
  return undefined;
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
