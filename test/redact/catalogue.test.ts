/**
 * Every string a pattern of the catalogue matches is redacted, wherever it sits in a text: the redactor's
 * pre-checks (the characters every secret holds, the combined gate, each pattern's gate and minimum length) never
 * let a match through. Tokens are generated from the patterns themselves, so a pattern added later is covered.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED, redact, redactorFor } from '../../src/redact/index.js';
import { trials } from '../support/soak.js';
import { CATALOGUE_CASES as cases, secretsIn, tokensOf } from './catalogue-boundaries-support.js';

/** The longest run of token characters in `text` (the characters SecretPattern.minRun counts). */
function longestTokenRun(text: string): number {
  let longest = 0;
  for (const run of text.match(/[A-Za-z0-9_+/=.~%-]+/g) ?? []) longest = Math.max(longest, run.length);
  return longest;
}

const redactor = redactorFor();

// The properties below check each generated secret, tens of thousands in all: they call expect() only when a check
// fails (with the message it would give), as an expect() costs many times what its check does.
/** Text around a token: anything, or (more often) the blanks and punctuation secrets are found between. */
const around = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('', ' ', '"', 'key: ', '\n', 'Authorization: ', '(', ','));

describe('the secret catalogue', () => {
  // The redactor skips a pattern for text shorter than its minLength: a minLength above the pattern's shortest match
  // lets that match through (`xapp-1-A-1-a`, 12 characters, had a minLength of 14; `pwd=abc`, 7, one of 8).
  // Likewise a pattern with a minRun runs only on text holding that long a run of token characters.
  it.each(cases)("$name: no match is shorter than the pattern's minLength, or holds a shorter token run than its minRun", ({ generate, pattern }) => {
    fc.assert(
      fc.property(fc.stringMatching(generate, { size: 'xsmall' }), (token) => {
        for (const secret of secretsIn(token, pattern)) {
          if (secret.length < pattern.minLength) expect(secret.length, JSON.stringify(secret)).toBeGreaterThanOrEqual(pattern.minLength);
          if (pattern.minRun !== undefined && longestTokenRun(secret) < pattern.minRun) expect(longestTokenRun(secret), JSON.stringify(secret)).toBeGreaterThanOrEqual(pattern.minRun);
        }
      }),
      // 200 trials find a minLength one above a pattern's shortest match as often as 800 did (98.6% of the cases,
      // 10 seeds each, against 98.8%); `npm run test:soak` runs 5000.
      { numRuns: trials(200, 5000) },
    );
  });

  it.each(cases)('redacts every string $name matches, wherever it sits in a text', (format) => {
    const { pattern } = format;
    // A pattern with the `i` flag matches its tokens in any case: the generated token's letters are flipped at random.
    const anyCase = pattern.regex.flags.includes('i') ? fc.array(fc.boolean(), { maxLength: 64 }) : fc.constant([] as boolean[]);
    fc.assert(
      fc.property(around, tokensOf(format), around, anyCase, (before, generated, after, flips) => {
        const token = [...generated].map((c, i) => (flips[i % Math.max(1, flips.length)] ? (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) : c)).join('');
        const text = `${before}${token}${after}`;
        const secrets = secretsIn(text, pattern);
        fc.pre(secrets.length > 0);
        const out = redactor.redactText(text);
        const unmarked = out.replaceAll(REDACTED, '');
        for (const secret of secrets) if (unmarked.includes(secret)) expect(unmarked.includes(secret), `${JSON.stringify(secret)} survived in ${JSON.stringify(out)}`).toBe(false);
        if (!out.includes(REDACTED)) expect(out).toContain(REDACTED);
      }),
      { numRuns: trials(40, 400) },
    );
  });

  // Short text without an upper-case letter, `_`, `:` or `=` (ids such as `ev-4f0c2a9b1d3e-1a`) is cleared by a
  // cheaper pre-check than other text: a lower-case match with none of these characters (`sk-…`, `glpat-…`, `xoxb-…`,
  // `fc-…`) must still be redacted, whatever its length.
  it.each(cases)('redacts every lower-case string $name matches that holds no _, : or =', (format) => {
    const { pattern } = format;
    fc.assert(
      fc.property(tokensOf(format), (generated) => {
        const token = generated.toLowerCase();
        if (/[_:=]/.test(token)) return;
        for (const secret of secretsIn(token, pattern)) {
          for (const text of [secret, `id ${secret}`]) {
            // Outside the marks: a one-character netrc password (`[`) is part of the mark that replaced it.
            const survived = redactor.redactText(text).replaceAll(REDACTED, '').includes(secret);
            if (survived) expect(survived, JSON.stringify(secret)).toBe(false);
          }
        }
      }),
      { numRuns: trials(200, 2000) },
    );
  });

  it('redacts the vendor tokens gitleaks lists and LLM vendors publish, in values, keys and Map keys', () => {
    const tokens = {
      sendgrid: `SG.${'aB3dE5fG7hJ9kL1mN3pQ5r'}.${'Zx8Cv6Bn4Mq2Wr0Ty8Ui6Op4As2Df0Gh8Jk6Lz4Xc2V'}`,
      twilio: 'SK0123456789abcdef0123456789abcdef',
      groq: `gsk_${'Ab12Cd34Ef56'.repeat(4)}`,
      xai: `xai-${'Ab12Cd34Ef56'.repeat(6)}`,
      googleOauth: `ya29.a0AfB_${'byC3dE5fG7hJ9k'.repeat(5)}`,
      linear: `lin_api_${'Ab12Cd34Ef56Gh78Ij90'.repeat(2)}`,
      shopify: `shpat_${'0123456789abcdef'.repeat(2)}`,
      perplexity: `pplx-${'Ab12Cd34Ef56'.repeat(4)}`,
      tavily: `tvly-dev-${'Ab12Cd34Ef56'.repeat(3)}`,
      langsmith: `lsv2_pt_${'0123456789abcdef'.repeat(2)}_0123456789`,
    };
    const azure = `DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${'Qk9Lx2Rz7Wm4Tn'.repeat(6)}==;EndpointSuffix=core.windows.net`;
    const discord = `https://discord.com/api/webhooks/123456789012345678/${'Xk3Lq9Zr7Wm2Tn5Bv8Yc1Hd4Jf6Gs0Pa'.repeat(2)}`;
    for (const [name, token] of Object.entries(tokens)) {
      const { value } = redact({ note: `found ${token} in the logs`, [token]: 1, map: new Map([[token, 'x']]) });
      const text = JSON.stringify({ ...value, map: [...(value.map as Map<string, string>).keys()] });
      expect(text.includes(token), `${name}: ${text}`).toBe(false);
    }
    const { value } = redact([azure, discord]);
    expect(value[0]).toBe(`DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=${REDACTED};EndpointSuffix=core.windows.net`);
    expect(value[1]).toBe(`https://discord.com/api/webhooks/123456789012345678/${REDACTED}`);
  });

  it('keeps ordinary text that shares a prefix with a vendor token', () => {
    const text = 'task: skim the ticket; fc-5 passed; sig=ok; pat.com; the ya29 route; dapi docs; api_org_ name';
    expect(redactor.redactText(text)).toBe(text);
  });
});
