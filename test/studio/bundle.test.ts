/** The built page's JavaScript stays small: at most 150 KB gzipped (issue 16). The size is printed on every run. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

const PAGE = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'studio', 'page');
const LIMIT = 150 * 1024;

describe('studio page bundle', () => {
  it('loads its JavaScript from index.html, at most 150 KB gzipped in all', () => {
    const html = readFileSync(join(PAGE, 'index.html'), 'utf8');
    const scripts = [...html.matchAll(/<script[^>]*\ssrc="\.\/([^"]+\.js)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/); // no inline script: the page's CSP forbids them
    let raw = 0;
    let gzipped = 0;
    for (const script of scripts) {
      const bytes = readFileSync(join(PAGE, script));
      raw += bytes.length;
      gzipped += gzipSync(bytes, { level: 9 }).length;
    }
    console.log(`studio page JavaScript: ${(raw / 1024).toFixed(1)} KB, ${(gzipped / 1024).toFixed(1)} KB gzipped (limit ${LIMIT / 1024} KB)`);
    expect(gzipped).toBeLessThanOrEqual(LIMIT);
  });
});
