/**
 * A `fetch` whose responses cannot be larger than a bound: what the MCP client's HTTP transport reads a remote
 * server's answers with, so that a server cannot make the process buffer an answer of any size (a tool list of
 * hundreds of MB, an endless event stream).
 *
 * @module
 */

/** Statuses a Response is constructed without a body for. */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** The `fetch` signature the MCP SDK's transports take. */
export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * `base` (default: the global `fetch`) with each response's body cut off past `maxBytes`: reading further fails with
 * the error `tooLarge()` makes, and the connection is closed. `onTooLarge` is told that error as the bound is passed,
 * so that the caller can stop waiting for an answer that will not come (an event stream's failure does not fail the
 * request it answers). The bound is on the body as received, an event stream as a whole.
 */
export function boundedFetch(maxBytes: number, tooLarge: () => Error, onTooLarge: (error: Error) => void, base: FetchLike = fetch): FetchLike {
  return async (url, init) => {
    const response = await base(url, init);
    // (A response that can have no body, such as a 204 or a redirect not followed, is given as it is.)
    if (response.body === null || NULL_BODY_STATUSES.has(response.status)) return response;
    let received = 0;
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          received += chunk.byteLength;
          if (received > maxBytes) {
            const error = tooLarge();
            onTooLarge(error);
            // Errors the reader's side and cancels the response body (the connection is closed).
            controller.error(error);
            return;
          }
          controller.enqueue(chunk);
        },
      }),
    );
    const bounded = new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
    // What a constructed Response cannot be given, and the SDK reads to judge a redirect.
    for (const key of ['url', 'redirected', 'type'] as const) Object.defineProperty(bounded, key, { value: response[key] });
    return bounded;
  };
}
