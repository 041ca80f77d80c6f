/** Review s51b (2): ordinary data the s50b rules destroy. */
import { describe, expect, it } from 'vitest';
import { redactorFor } from '../../src/redact/index.js';

const redactor = redactorFor();

describe('review s51b: false positives', () => {
  it('M4 a CORS config listing header names keeps them (the name after a secret-named header in a list)', () => {
    const config = { allowedHeaders: ['Content-Type', 'X-Api-Key', 'Authorization'], exposedHeaders: ['content-type', 'x-api-key', 'x-request-id'] };
    expect(redactor.redact(config).value).toEqual(config);
  });

});
