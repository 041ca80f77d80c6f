/**
 * Tamper-proofing of classes (README: threat model): node code reaches every class through the objects it holds
 * (`Object.getPrototypeOf(node)`, `handle.constructor`) and must not change what the library or another node runs.
 * A plain `Object.freeze(prototype)` stops that, but also ordinary JavaScript: an instance can then no longer get an
 * own property named like a method (`this.onEvent = this.onEvent.bind(this)` in a constructor throws, the "override
 * mistake"). So a hardened prototype keeps each method behind an accessor whose getter returns it and whose setter,
 * called on an instance, defines the instance's own property (on the prototype itself it throws, as a frozen one
 * does); the prototype is then frozen, and so is every function on it (no own `call` or `apply` can be put on a method
 * the library calls). This is SES's answer to the same problem.
 *
 * A ground-floor module: every layer may import it (the one exception to "backpack/ and flow/ import nothing else of
 * ours" in DESIGN.md section 3), and it imports nothing.
 */

/** The getters {@link hardenPrototype} put in place of methods (see {@link isHardenedAccessor}). */
const getters = new WeakSet<object>();

/**
 * Hardens `prototype` (see the module comment): each data property but `constructor` becomes an accessor as
 * described, every function on it (but its class) is frozen, and the prototype is frozen. Already frozen: only its functions are
 * frozen.
 */
export function hardenPrototype(prototype: object): void {
  const frozen = Object.isFrozen(prototype);
  for (const key of Reflect.ownKeys(prototype)) {
    // (The class itself is not frozen here: see hardenClass, and lockNodeClass for a node's own classes.)
    if (key === 'constructor') continue;
    const own = Object.getOwnPropertyDescriptor(prototype, key)!;
    for (const part of [own.value, own.get, own.set]) if (typeof part === 'function' && !getters.has(part)) Object.freeze(part);
    if (frozen || !own.configurable || !('value' in own)) continue;
    const value: unknown = own.value;
    const get = function (): unknown {
      return value;
    };
    const set = function (this: unknown, next: unknown): void {
      if (this === prototype) throw new TypeError(`Cannot assign to read only property '${String(key)}' of a frozen prototype`);
      Object.defineProperty(this, key, { value: next, writable: true, enumerable: true, configurable: true });
    };
    getters.add(get);
    getters.add(set);
    Object.defineProperty(prototype, key, { get: Object.freeze(get), set: Object.freeze(set), enumerable: own.enumerable, configurable: false });
  }
  Object.freeze(prototype);
}

/**
 * Hardens class `C`: its prototype (see {@link hardenPrototype}), and the class itself frozen with every function among
 * its statics.
 */
export function hardenClass(C: abstract new (...args: never[]) => unknown): void {
  hardenPrototype(C.prototype as object);
  for (const key of Reflect.ownKeys(C)) {
    const own = Object.getOwnPropertyDescriptor(C, key)!;
    for (const part of [own.value, own.get, own.set]) if (typeof part === 'function' && part !== C) Object.freeze(part);
  }
  Object.freeze(C);
}

/** Whether `descriptor` is an accessor {@link hardenPrototype} made for a method (a method, not a getter of the class's). */
export function isHardenedAccessor(descriptor: PropertyDescriptor): boolean {
  return descriptor.get !== undefined && getters.has(descriptor.get);
}
