/**
 * Builds of the library that the benchmarks compare, interleaved in one process. Each is compiled with tsc as
 * `npm run build` compiles the package (this repository's compiler options, without type checking or declarations)
 * and loaded from its own folder under .bench-builds/: what users of the package run. The source run through tsx
 * measured 5-13 µs per durable step slower than the same code compiled (paired runs of 1,000 steps; tsx keeps
 * function names with a helper called wherever a closure is made).
 *
 * - {@link thisBuild}: this working tree's `src/`.
 * - {@link noIntegrityBuild}: this working tree's `src/`, copied under .bench-builds/ and edited so that it
 *   neither hashes (no chain hashes in the event log, no checksums of keyframes and projections) nor redacts. The
 *   difference to this build is exactly the cost of hashing and redaction (issue 13). A copy rather than a switch
 *   in the library: a switch that turns redaction off would ship with it and could be reached by a caller; the
 *   copy exists only where the benchmark makes it. Each edit replaces one exact piece of source; when the source
 *   changed and a piece is not found, the build fails with an error naming it, rather than measuring something else.
 * - {@link copyBuild}: the same copy, unedited: the control that shows how far two builds of the same code differ.
 * - {@link refBuild}: `src/` of a git ref (`git archive`), e.g. main, for before/after tables.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as current from '../src/index.js';

/** What the benchmark rows need of a build of the library. */
export interface Build {
  name: string;
  api: Pick<typeof current, 'BackpackNode' | 'Flow' | 'runFlow' | 'EventStore'>;
}

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
/**
 * Where the copies are made: inside the repository, so that they resolve its dependencies as src/ does. Not under
 * node_modules: a copy there ran 4-14 µs per step slower than this build in all 12 of the control's comparisons of two
 * runs, though tsx emits the same code for both places (cause not found); here the control stays within a few µs.
 */
const cache = join(repo, '.bench-builds');

/** Source edits of the no-integrity build: file, the exact text to find, its replacement. */
export const NO_INTEGRITY_EDITS: [file: string, find: string, replace: string][] = [
  // A batch of small lines (sealText): hashed nowhere, and its lines written as they were, closing brace and newline
  // included, where the seal would replace them: the same code writes the same lines, without the chain fields.
  ['store/chain.ts', 'function sealInPlace(backend: HashBackend, previous: Buffer, position: ChainPosition, out: Buffer, start: number, at: number): { head: Buffer; seal: string } {', "$&\n  return { head: previous, seal: '}\\n' };"],
  ['store/chain.ts', 'function sealAfterPrefix(backend: HashBackend, previous: Buffer, position: ChainPosition, out: Buffer, start: number, at: number): { head: Buffer; seal: string } {', "$&\n  return { head: previous, seal: '}\\n' };"],
  [
    'store/chain.ts',
    '  if (chars >= 0) return sealText(backend, start, lines as readonly string[], sealFirst, at, chars, scratch);',
    // A batch with a large line, as written, unsealed: each line and its newline, small lines joined into one text.
    `$&
  {
    const pieces: (string | Buffer)[] = [];
    let text = '';
    for (const line of lines) {
      if (typeof line === 'string') text += \`\${line}\\n\`;
      else {
        if (text !== '') pieces.push(text);
        pieces.push(...line);
        text = '\\n';
      }
    }
    pieces.push(text);
    const kept = lines.slice();
    const sizes = pieces.map((piece) => (typeof piece === 'string' ? Buffer.byteLength(piece) : piece.length));
    return { head: start, pieces, bytes: sizes.reduce((sum, n) => sum + n, 0), seals: new Array(lines.length), lineBytes: () => kept.map((line) => (typeof line === 'string' ? Buffer.byteLength(line) : line.reduce((sum, piece) => sum + piece.length, 0)) + 1) };
  }`,
  ],
  ['hash/sealed.ts', "return `{\"checksum\":\"${backend.digest(Buffer.from(body)).toString('hex')}\",\"data\":${body}}\\n`;", 'return `{"checksum":"","data":${body}}\\n`;'],
  ['hash/sealed.ts', "const checksum = backend.digest(out.subarray(DATA_AT, DATA_AT + length)).toString('hex');", "const checksum = '0'.repeat(64);"],
  ['redact/redactor.ts', "  redact<T>(value: T, key = ''): RedactionResult<T> {", '$&\n    return { value, redacted: false };'],
  // The check that names and ids hold no secret (store/envelope.ts) is part of redaction's cost too.
  ['store/envelope.ts', 'export function secretPlainName(plain: PlainEnvelope, redactor: Redactor): NameField | undefined {', '$&\n  return undefined;'],
  // The event log's quick path asks only whether a payload holds a secret (store/event-encode.ts).
  ['redact/redactor.ts', '  containsSecrets(value: unknown): boolean {', '$&\n    return false;'],
];

/** This working tree without hashing and redaction (see the module comment). */
export function noIntegrityBuild(): Promise<Build> {
  return editedCopy('bench-no-integrity', 'no hashing, no redaction', NO_INTEGRITY_EDITS);
}

/** This working tree, compiled (see the module comment). */
export function thisBuild(): Promise<Build> {
  return editedCopy('bench-this', 'this build', []);
}

/**
 * An unedited copy of this working tree, made and loaded like {@link thisBuild}: compared with it, it shows the
 * measurement's own error (two copies of the same code differ only by where and when they were loaded).
 */
export function copyBuild(): Promise<Build> {
  return editedCopy('bench-copy', 'an unedited copy of this build', []);
}

async function editedCopy(folder: string, name: string, edits: readonly [file: string, find: string, replace: string][]): Promise<Build> {
  const dir = join(cache, folder);
  rmSync(dir, { recursive: true, force: true });
  cpSync(join(repo, 'src'), join(dir, 'src'), { recursive: true });
  for (const [file, find, replace] of edits) {
    const path = join(dir, 'src', file);
    const text = readFileSync(path, 'utf8');
    if (!text.includes(find)) throw new Error(`bench/builds.ts: src/${file} no longer holds ${JSON.stringify(find)}; update NO_INTEGRITY_EDITS`);
    writeFileSync(path, text.replace(find, () => replace.replace('$&', find)));
  }
  return { name, api: await compiled(dir) };
}

/** Compiles `dir/src` into `dir/dist` (see the module comment) and loads it. */
async function compiled(dir: string): Promise<Build['api']> {
  const config = {
    extends: join(repo, 'tsconfig.build.json'),
    compilerOptions: { rootDir: 'src', outDir: 'dist', declaration: false, declarationMap: false, sourceMap: false },
    include: ['src'],
    exclude: ['src/studio/page'],
  };
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(config));
  rmSync(join(dir, 'dist'), { recursive: true, force: true });
  execFileSync(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.json'), '--noCheck'], { stdio: 'inherit' });
  return (await import(pathToFileURL(join(dir, 'dist', 'index.js')).href)) as Build['api'];
}

/** `src/` of git ref `ref` of this repository. */
export async function refBuild(ref: string): Promise<Build> {
  const commit = execFileSync('git', ['-C', repo, 'rev-parse', '--verify', `${ref}^{commit}`], { encoding: 'utf8' }).trim();
  const dir = join(cache, 'bench-ref', commit);
  mkdirSync(dir, { recursive: true });
  const tar = execFileSync('git', ['-C', repo, 'archive', '--format=tar', commit, 'src'], { maxBuffer: 1 << 28 });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  return { name: `${ref} (${commit.slice(0, 7)})`, api: await compiled(dir) };
}
