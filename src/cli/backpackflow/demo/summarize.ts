/** Extractive summaries: the offline stand-in for an LLM summary, deterministic and fast. */

const MAX = 200;

function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const end = flat.search(/[.!?](\s|$)/);
  const sentence = end === -1 ? flat : flat.slice(0, end + 1);
  return sentence.length > MAX ? `${sentence.slice(0, MAX - 1)}…` : sentence;
}

/** The doc comment that opens a source file, or its first non-import line. */
function sourceSummary(text: string): string {
  const doc = /\/\*\*([\s\S]*?)\*\//.exec(text);
  if (doc) return firstSentence(doc[1]!.replace(/^\s*\*\s?/gm, ' ').replace(/\{@link ([^}]+)\}/g, '$1'));
  const suite = /\bdescribe\(\s*(['"`])(.+?)\1/.exec(text)?.[2];
  if (suite) return `tests of ${suite}`;
  const line = text.split('\n').find((l) => /[A-Za-z]+\s+[A-Za-z]+\s+[A-Za-z]+/.test(l) && !/^\s*(import|export \{|#!|\}|\/\/)/.test(l));
  return firstSentence(line ?? '');
}

/** The first heading and first paragraph of a Markdown file. */
function markdownSummary(text: string): string {
  const heading = /^#+\s+(.+)$/m.exec(text)?.[1]?.trim();
  const paragraph = text
    .split(/\n\s*\n/)
    .map((p) => p.trim())
    .find((p) => p !== '' && !p.startsWith('#') && !p.startsWith('```') && !p.startsWith('|') && !p.startsWith('<'));
  const body = paragraph ? firstSentence(paragraph.replace(/[*_`[\]]/g, '')) : '';
  return [heading, body].filter(Boolean).join(': ');
}

/** A one-line extractive summary of a text file, by its kind; '' when there is nothing to say. */
export function summarizeFile(path: string, text: string): string {
  if (path.endsWith('.md')) return markdownSummary(text);
  return sourceSummary(text);
}

/** Files the demo summarizes. */
export function isSummarizable(path: string, size: number): boolean {
  return /\.(ts|md|mjs)$/.test(path) && !path.endsWith('.d.ts') && size <= 256 * 1024;
}
