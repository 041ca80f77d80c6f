/**
 * Vendor tokens with a distinctive prefix, beyond the formats of {@link DEFAULT_SECRET_PATTERNS}' own entries:
 * ported from gitleaks' default rule set (`config/gitleaks.toml`, MIT; rule ids as `gitleaks:<id>`), plus the
 * published key formats of LLM and agent-tool vendors gitleaks does not list yet (Groq, xAI, Replicate, Tavily,
 * LangSmith, Pinecone, Firecrawl, Google OAuth access tokens).
 *
 * They are one pattern, scanned only in text holding a run of 22 or more token characters (its shortest token). Every match holds one of the characters the redactor's pre-check looks for (an upper-case
 * letter, `_`, `:`, `=`, `~` or `-`): where a vendor's format does not guarantee one, the pattern asks for it with a
 * lookahead (a token of 40 random base-62 characters without an upper-case letter has a chance below 1e-9).
 * test/redact/catalogue.test.ts checks both properties for every string each pattern matches.
 *
 * Left out: gitleaks' `databricks-api-token` (`dapi` and 32 lower-case hex digits) holds none of those characters,
 * and adding `dapi` to the pre-check costs about 60 ns for every string of a run (95 → 158 ns per 100-character
 * string, measured); a Databricks token under a secret-named key or in an assignment (`DATABRICKS_TOKEN=...`) is
 * still redacted.
 */

import { END, START, standsApart } from './boundary.js';
import type { SecretPattern } from './patterns.js';

/** One vendor's format: the gitleaks rule or vendor it comes from, and the regex source of a whole token. */
interface VendorFormat {
  readonly source: string;
  readonly token: string;
}

/** Lookahead: the token (made of `chars`) holds an upper-case letter, `_` or `-`. */
const MIXED = (chars: string): string => String.raw`(?=${chars}*[A-Z_-])`;

const FORMATS: readonly VendorFormat[] = [
  { source: 'gitleaks:1password-service-account-token', token: String.raw`ops_eyJ[A-Za-z0-9+/]{250,}={0,3}` },
  { source: 'gitleaks:adobe-client-secret', token: String.raw`p8e-[A-Za-z0-9]{32}` },
  { source: 'gitleaks:age-secret-key', token: String.raw`AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}` },
  { source: 'gitleaks:airtable-personnal-access-token', token: String.raw`pat${MIXED(String.raw`[A-Za-z0-9.]`)}[A-Za-z0-9]{14}\.[a-f0-9]{64}` },
  { source: 'gitleaks:alibaba-access-key-id', token: String.raw`LTAI[A-Za-z0-9]{20}` },
  { source: 'gitleaks:artifactory-api-key', token: String.raw`AKCp[A-Za-z0-9]{69}` },
  { source: 'gitleaks:aws-amazon-bedrock-api-key-long-lived', token: String.raw`ABSK[A-Za-z0-9+/]{109,269}={0,2}` },
  { source: 'gitleaks:clojars-api-token', token: String.raw`CLOJARS_[A-Za-z0-9]{60}` },
  { source: 'gitleaks:digitalocean-pat, digitalocean-access-token, digitalocean-refresh-token', token: String.raw`do[opr]_v1_[a-f0-9]{64}` },
  { source: 'gitleaks:doppler-api-token', token: String.raw`dp\.pt\.${MIXED('[A-Za-z0-9]')}[A-Za-z0-9]{43}` },
  { source: 'gitleaks:duffel-api-token', token: String.raw`duffel_(?:test|live)_[A-Za-z0-9_=-]{43}` },
  { source: 'gitleaks:dynatrace-api-token', token: String.raw`dt0c01\.[A-Za-z0-9]{24}\.${MIXED('[A-Za-z0-9]')}[A-Za-z0-9]{64}` },
  { source: 'gitleaks:easypost-api-token, easypost-test-api-token', token: String.raw`EZ[AT]K[A-Za-z0-9]{54}` },
  { source: 'gitleaks:flyio-access-token', token: String.raw`fo1_[\w-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}` },
  { source: 'gitleaks:frameio-api-token', token: String.raw`fio-u-[A-Za-z0-9_=-]{64}` },
  { source: 'gitleaks:gitlab-feed-token, gitlab-incoming-mail-token, gitlab-kubernetes-agent-token, gitlab-feature-flag-client-token', token: String.raw`gl(?:ft|imt|agent|ffct)-[\w-]{20,}` },
  { source: 'gitleaks:gitlab-rrt', token: String.raw`GR1348941[\w-]{20}` },
  { source: 'gitleaks:grafana-cloud-api-token, grafana-service-account-token', token: String.raw`glc_[A-Za-z0-9+/]{32,400}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}` },
  { source: 'gitleaks:grafana-api-key', token: String.raw`eyJrIjoi[A-Za-z0-9]{70,400}={0,3}` },
  { source: 'gitleaks:hashicorp-tf-api-token', token: String.raw`[A-Za-z0-9]{14}\.atlasv1\.${MIXED(String.raw`[\w=-]`)}[\w=-]{60,70}` },
  { source: 'gitleaks:heroku-api-key-v2', token: String.raw`HRKU-AA[\w-]{58}` },
  { source: 'gitleaks:huggingface-organization-api-token', token: String.raw`api_org_[A-Za-z]{34}` },
  { source: 'gitleaks:infracost-api-token', token: String.raw`ico-[A-Za-z0-9]{32}` },
  { source: 'gitleaks:linear-api-key', token: String.raw`lin_api_[A-Za-z0-9]{40}` },
  { source: 'gitleaks:new-relic-user-api-key, new-relic-insert-key, new-relic-browser-api-token', token: String.raw`NRAK-[A-Za-z0-9]{27}|NRII-[A-Za-z0-9-]{32}|NRJS-[a-f0-9]{19}` },
  { source: 'gitleaks:notion-api-token', token: String.raw`ntn_[0-9]{11}[A-Za-z0-9]{35}` },
  { source: 'gitleaks:openshift-user-token', token: String.raw`sha256~${MIXED(String.raw`[\w-]`)}[\w-]{43}` },
  { source: 'gitleaks:perplexity-api-key', token: String.raw`pplx-[A-Za-z0-9]{48}` },
  { source: 'gitleaks:planetscale-api-token, planetscale-oauth-token, planetscale-password', token: String.raw`pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}` },
  { source: 'gitleaks:postman-api-token', token: String.raw`PMAK-[A-Fa-f0-9]{24}-[A-Fa-f0-9]{34}` },
  { source: 'gitleaks:prefect-api-token', token: String.raw`pnu_[A-Za-z0-9]{36}` },
  { source: 'gitleaks:pulumi-api-token', token: String.raw`pul-[a-f0-9]{40}` },
  { source: 'gitleaks:pypi-upload-token', token: String.raw`pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}` },
  { source: 'gitleaks:readme-api-token', token: String.raw`rdme_[a-z0-9]{70}` },
  { source: 'gitleaks:rubygems-api-token', token: String.raw`rubygems_[a-f0-9]{48}` },
  { source: 'gitleaks:scalingo-api-token', token: String.raw`tk-us-[\w-]{48}` },
  { source: 'gitleaks:sendgrid-api-token', token: String.raw`SG\.[A-Za-z0-9_=.-]{66}` },
  { source: 'gitleaks:sendinblue-api-token', token: String.raw`xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}` },
  { source: 'gitleaks:sentry-user-token, sentry-org-token', token: String.raw`sntryu_[a-f0-9]{64}|sntrys_eyJpYXQiO[A-Za-z0-9+/=_]{50,}` },
  { source: 'gitleaks:settlemint-*-access-token', token: String.raw`sm_[aps]at_[A-Za-z0-9]{16}` },
  { source: 'gitleaks:shippo-api-token', token: String.raw`shippo_(?:live|test)_[A-Fa-f0-9]{40}` },
  { source: 'gitleaks:shopify-access-token, shopify-custom-access-token, shopify-private-app-access-token, shopify-shared-secret', token: String.raw`shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}` },
  { source: 'gitleaks:square-access-token', token: String.raw`EAAA[\w-]{22,60}|sq0(?:atp|csp)-[\w-]{22,60}` },
  { source: 'gitleaks:twilio-api-key', token: String.raw`SK[0-9a-fA-F]{32}` },
  { source: 'gitleaks:vault-service-token, vault-batch-token', token: String.raw`hv[sb]\.${MIXED(String.raw`[\w-]`)}[\w-]{90,300}` },
  { source: 'Google OAuth 2.0 access token (ya29.)', token: String.raw`ya29\.${MIXED(String.raw`[\w-]`)}[\w-]{20,}` },
  { source: 'Groq API key (gsk_)', token: String.raw`gsk_[A-Za-z0-9]{40,}` },
  { source: 'xAI API key (xai-)', token: String.raw`xai-[A-Za-z0-9]{40,}` },
  { source: 'Replicate API token (r8_)', token: String.raw`r8_[A-Za-z0-9]{30,}` },
  { source: 'Tavily API key (tvly-)', token: String.raw`tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}` },
  { source: 'LangSmith API key (lsv2_)', token: String.raw`lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}` },
  { source: 'Pinecone API key (pcsk_)', token: String.raw`pcsk_[\w-]{40,}` },
  { source: 'Firecrawl API key (fc-)', token: String.raw`fc-[a-f0-9]{32}` },
];

/** The shortest token of {@link FORMATS}. */
const MIN_LENGTH = 22;

/** Every token of {@link FORMATS}, as one pattern (replaced whole). */
export const VENDOR_TOKEN_PATTERN: SecretPattern = {
  id: 'vendor-token',
  source: FORMATS.map((f) => f.source).join('; '),
  regex: new RegExp(`${START}(?:${FORMATS.map((f) => f.token).join('|')})${END}`, 'g'),
  accept: standsApart,
  minLength: MIN_LENGTH,
  minRun: MIN_LENGTH,
};

/** The formats one by one (for tests that generate a token of each). */
export const VENDOR_TOKEN_FORMATS: readonly { readonly source: string; readonly regex: RegExp }[] = FORMATS.map((f) => ({
  source: f.source,
  regex: new RegExp(`^(?:${f.token})$`),
}));

/**
 * Keys in connection strings and signed URLs: Azure storage and service bus keys (`AccountKey=...`,
 * `SharedAccessKey=...`) and SAS signatures (`sig=...`). The name stays readable.
 */
export const CONNECTION_KEY_PATTERN: SecretPattern = {
  id: 'connection-string-key',
  source: 'Azure storage and service bus connection strings, SAS tokens',
  regex: new RegExp(String.raw`${START}(?:AccountKey|SharedAccessKey|sig)=(?<secret>[A-Za-z0-9%+/=]{16,})`, 'g'),
  minLength: 20,
  minRun: 20,
};

/** The token of a Discord webhook URL (`https://discord.com/api/webhooks/<id>/<token>`); the URL stays readable. */
export const DISCORD_WEBHOOK_PATTERN: SecretPattern = {
  id: 'discord-webhook',
  source: 'gitleaks:discord-* (the webhook URL form)',
  regex: new RegExp(String.raw`discord(?:app)?\.com/api/webhooks/\d+/(?<secret>${MIXED(String.raw`[\w-]`)}[\w-]{40,})`, 'g'),
  minLength: 60,
  minRun: 40,
};
