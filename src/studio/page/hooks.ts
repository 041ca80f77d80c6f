/** Small hooks of the page: loading data, the location hash, polling. */
import { useEffect, useState } from 'preact/hooks';
import { ApiError, parseHash, type Route } from './client.js';

/** The state of a request: its data, or the error that stopped it, while `loading` says a newer one is under way. */
export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  /** The HTTP status the API answered {@link error} with (none for a network failure). */
  status?: number;
  loading: boolean;
}

/**
 * Runs `load` whenever `deps` change (an older request is aborted, so a slow answer never replaces a newer one) and
 * every `refreshMs` when given (keeping the last data while a refresh runs).
 */
export function useLoad<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], refreshMs?: number): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ data: undefined, error: undefined, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const controller = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(controller.signal).then(
      (data) => !controller.signal.aborted && setState({ data, error: undefined, loading: false }),
      (error: Error) => !controller.signal.aborted && setState((s) => ({ data: s.data, error: error.message, status: error instanceof ApiError ? error.status : undefined, loading: false })),
    );
    return () => controller.abort();
  }, [...deps, tick]);
  useEffect(() => {
    if (!refreshMs) return;
    const timer = setInterval(() => setTick((t) => t + 1), refreshMs);
    return () => clearInterval(timer);
  }, [refreshMs]);
  return state;
}

/** The route in the location hash, updated on navigation. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const update = (): void => setRoute(parseHash(location.hash));
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

/** Replaces the hash without a new history entry (for slider moves and filters). */
export function replaceHash(hash: string): void {
  history.replaceState(null, '', hash);
  dispatchEvent(new HashChangeEvent('hashchange'));
}
