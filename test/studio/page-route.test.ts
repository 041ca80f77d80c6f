/** The page's router: every hash gives a route, a hand-made link with a malformed escape the runs table (review s22b, L2). */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseHash, runHash } from '../../src/studio/page/route.js';

describe('parseHash', () => {
  it('a malformed percent-escape shows the runs table instead of throwing (a blank page)', () => {
    expect(parseHash('#/runs/default/%E0%A4%A')).toEqual({ page: 'runs' });
    expect(parseHash('#/runs/%/x')).toEqual({ page: 'runs' });
  });

  it('never throws, whatever the hash (property)', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (hash) => void parseHash(`#${hash}`)));
  });

  it("reads back the run a page's own link names, any ids", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (session, runId) => {
        const route = parseHash(runHash(session, runId, 'state'));
        expect(route).toMatchObject({ page: 'run', session, runId, tab: 'state' });
      }),
    );
  });
});
