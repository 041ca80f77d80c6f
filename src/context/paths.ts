import { isAbsolute, relative, resolve, sep } from 'node:path';
import { ContextError } from './errors.js';

/**
 * Turns a user-supplied path (relative to the workspace, or absolute inside it) into the canonical
 * workspace-relative form: POSIX separators, NFC, no `.` segments, no trailing slash; the root is `''`.
 * A path that leaves the workspace is rejected with an error naming it.
 */
export function toWorkspacePath(workspaceRoot: string, input: string): string {
  const raw = input.normalize('NFC');
  const rel = isAbsolute(raw) ? relative(workspaceRoot, raw) : relative(workspaceRoot, resolve(workspaceRoot, raw));
  const posix = rel.split(sep).join('/');
  if (posix === '..' || posix.startsWith('../') || isAbsolute(posix)) {
    throw new ContextError('INVALID_ARGUMENT', `path '${input}' is outside the workspace ${workspaceRoot}`, {
      path: input,
      workspace: workspaceRoot,
    });
  }
  return posix;
}

/** The parent of a workspace path (`'a/b'` → `'a'`, `'a'` → `''`); undefined for the root. */
export function parentPath(path: string): string | undefined {
  if (path === '') return undefined;
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

/** The last component of a workspace path; `''` for the root. */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** Joins a directory path and a child name. */
export function joinPath(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}

/** How a workspace path is shown to people: the root as `.`. */
export function displayPath(path: string): string {
  return path === '' ? '.' : path;
}
