/**
 * Maps `items` through `fn` with at most `limit` calls in flight, keeping the results in input order.
 * The first rejection rejects the whole map, and no call starts after it (a failed batch does not go on running
 * items and writing state after its run has failed); calls already started are left to settle.
 */
export async function mapConcurrent<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  if (limit >= items.length) {
    await Promise.all(items.map(async (item, i) => (results[i] = await fn(item, i))));
    return results;
  }
  let nextIndex = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && nextIndex < items.length) {
      const i = nextIndex++;
      try {
        results[i] = await fn(items[i] as T, i);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  return results;
}

/** Validates a concurrency limit option: undefined means unlimited. */
export function checkConcurrency(owner: string, limit: number | undefined): number {
  if (limit === undefined) return Infinity;
  if (!Number.isInteger(limit) || limit < 1) {
    throw new RangeError(`${owner}: concurrency must be a positive integer, got ${String(limit)}`);
  }
  return limit;
}
