/**
 * A flow file that repeats a key in one object is refused at the key's JSON pointer, by `validate` and `run` alike:
 * JSON keeps only the last, so the file would read otherwise than it runs (adversarial review of 2026-11-28).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { FlowConfigError, parseFlowConfig, readFlowConfigFile } from '../../src/serialization/index.js';
import { RepeatedKeyScanner, repeatedKeys } from '../../src/serialization/repeated-keys.js';
import { cli, MODULES } from '../cli/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'bpf-repeated-keys-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('repeated keys', () => {
  it('are found at their JSON pointer; equal after unescaping; never across objects or inside strings', () => {
    const paths = (text: string): string[] => repeatedKeys(text).map((p) => p.path);
    expect(paths('{"a":1,"a":2}')).toEqual(['/a']);
    expect(paths('{"nodes":[{"id":"x"},{"params":{"value":"x","value":"y"}}]}')).toEqual(['/nodes/1/params/value']);
    expect(paths('{"a":1,"\\u0061":2}')).toEqual(['/a']);
    expect(paths('{"a/b":{"~k":1,"~k":2}}')).toEqual(['/a~1b/~0k']);
    expect(paths('{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}')).toEqual([]);
    expect(paths('{"a":"{\\"b\\":1,\\"b\\":2}","k":"\\\\","z":1}')).toEqual([]);
  });

  it('for any JSON object: none in its JSON.stringify text, and one found where a member is repeated, however the text is cut into pieces', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue(), { minKeys: 1, maxKeys: 6 }), fc.nat(), fc.array(fc.nat(), { maxLength: 5 }), (object, pick, cuts) => {
        const text = JSON.stringify(object);
        expect(repeatedKeys(text)).toEqual([]);
        const keys = Object.keys(object);
        const key = keys[pick % keys.length]!;
        // The same member again, after the others: `{..., "key": value}`.
        const repeated = `${text.slice(0, -1)},${JSON.stringify(key)}:1}`;
        const pointer = `/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
        const scanner = new RepeatedKeyScanner();
        let at = 0;
        for (const cut of [...cuts.map((c) => c % (repeated.length + 1))].sort((a, b) => a - b)) {
          scanner.push(repeated.slice(at, cut));
          at = cut;
        }
        scanner.push(repeated.slice(at));
        expect(scanner.problems.map((p) => p.path)).toEqual([pointer]);
      }),
      { numRuns: 300 },
    );
  });

  it('are a FlowConfigError of the text and of the file, naming the pointer', () => {
    const text = '{"version":"2.0.0","nodes":[{"type":"Put","id":"put","params":{"value":"harmless","value":"${DB_PASSWORD}"}}],"edges":[]}';
    expect(() => parseFlowConfig(text)).toThrow(FlowConfigError);
    const file = join(dir, 'twice.json');
    writeFileSync(file, `\uFEFF${text}`);
    try {
      readFlowConfigFile(file);
      expect.unreachable('a repeated key was read');
    } catch (error) {
      expect((error as FlowConfigError).errors).toEqual([{ path: '/nodes/0/params/value', message: expect.stringMatching(/^the key "value" appears twice in this object/) }]);
    }
  });

  // The built command line's main, run in this process (test/cli/in-process.ts): the output and exit code of the binary.
  it('make validate and run both refuse the flow file, at the pointer', async () => {
    const file = join(dir, 'flow.json');
    writeFileSync(file, '{"version":"2.0.0","namespace":"d","nodes":[{"type":"Put","id":"put","params":{"key":"note","value":"harmless text","value":"${DB_PASSWORD}"}}],"edges":[]}');
    const validated = await cli(['validate', file, '--modules', MODULES], { env: { DB_PASSWORD: 'x' } });
    expect(validated.code).not.toBe(0);
    expect(`${validated.stdout}${validated.stderr}`).toMatch(/\/nodes\/0\/params\/value.*appears twice/);
    const ran = await cli(['run', file, '--modules', MODULES, '--data-dir', join(dir, 'data')], { env: { DB_PASSWORD: 'x' } });
    expect(ran.code).not.toBe(0);
    expect(`${ran.stdout}${ran.stderr}`).toMatch(/\/nodes\/0\/params\/value.*appears twice/);
  });
});
