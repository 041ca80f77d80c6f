/**
 * The redaction of a recorded flow config (`redactConfig`): a secret-named value written only as `${ENV}`
 * references is kept (a resume resolves it again); anything else there is masked as before, and so is a reference
 * whose name itself looks like a secret, or one mixed with literal text.
 */
import { describe, expect, it } from 'vitest';
import { REDACTED, redactConfig, redactorFor } from '../../src/store/index.js';

const redactor = redactorFor();
const TOKEN = `ghp_${'a1B2c3D4e5'.repeat(3)}abcdef`;

describe('redactConfig', () => {
  it('keeps env references under secret-named keys, and masks literal secrets, secret-looking names and mixed text', () => {
    const config = {
      nodes: [
        { id: 'n', params: { apiKey: '${OPENAI_API_KEY}', password: '${USER}${SUFFIX}', token: TOKEN, secret: 'Bearer ${TOKEN}', note: `use ${TOKEN}` } },
        { id: 'm', params: { apiKey: `\${${TOKEN}}`, plain: '${HOME}' } },
      ],
    };
    const recorded = redactConfig(redactor, config) as typeof config;
    expect(recorded.nodes[0]!.params).toEqual({ apiKey: '${OPENAI_API_KEY}', password: '${USER}${SUFFIX}', token: REDACTED, secret: REDACTED, note: `use ${REDACTED}` });
    expect(recorded.nodes[1]!.params.apiKey).not.toContain(TOKEN);
    expect(recorded.nodes[1]!.params.plain).toBe('${HOME}');
    expect(JSON.stringify(recorded)).not.toContain(TOKEN);
    // The input is not changed.
    expect(config.nodes[0]!.params.token).toBe(TOKEN);
  });
});
