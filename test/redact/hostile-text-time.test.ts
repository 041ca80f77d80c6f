/**
 * Redaction runs on every string a run persists (tool results, fetched pages, model text), and an attacker may
 * choose that text: no pattern of the catalogue may backtrack without bound on it. 1 MB of repeated near-matches of a
 * pattern redacts in a time in proportion to its length (tens of milliseconds here); the bound below is 30 times
 * that, so only a super-linear pattern fails it (review s33, finding 1: the Authorization pattern took 35-49 s on
 * 1 MB of `authorization:`, which stalls the process and, on Postgres, lets a worker's lease run out).
 */
import { describe, expect, it } from 'vitest';
import { redactorFor } from '../../src/redact/index.js';

const MB = 1 << 20;
const fill = (unit: string): string => unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);

describe('redaction of 1 MB of repeated near-matches', () => {
  const redactor = redactorFor();
  it.each([
    'authorization:',
    'Authorization=',
    'proxy-authorization:x',
    'authorization: a ',
    'authorization: a b="',
    'authorization: a b=c,',
    `Authorization: x ${'a'.repeat(30)} `,
    '"authorization","',
    'password=',
    'Bearer ',
    'postgres://a:',
    'eyJ',
  ])('%j takes time in proportion to its length', (unit) => {
    const text = fill(unit);
    const started = performance.now();
    redactor.redactText(text);
    const ms = performance.now() - started;
    expect(ms, `took ${ms.toFixed(0)} ms`).toBeLessThan(3000);
  }, 120_000);
});
