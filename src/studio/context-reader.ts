/**
 * The workspace of `--workspace`, read through the context engine's public, read-only calls (`status`,
 * `resolveNode`, `listFrames`, `listAnnotated`, `getFrame`): the tree a directory at a time, each node's frames and
 * heads with their stale markers, and a frame's content. The studio never scans (a scan writes) and never reads a
 * workspace file: only the engine's store, whose frames were redacted before they were written.
 */
import { ContextEngine, ContextError, type Frame, type FrameSummary, type NodeAnnotation, type NodeRecord, type StatusReport } from '../context/index.js';
import { HttpError } from './http.js';

/** A child of a directory in the tree view. */
export interface ContextChild {
  path: string;
  name: string;
  kind: NodeRecord['kind'];
  size: number;
  /** Frames on the child itself. */
  frames: number;
  /** Its heads, with stale markers. */
  heads: NodeAnnotation['heads'];
  /** Stale heads at or under the child (so a collapsed directory says it holds some). */
  staleBelow: number;
}

/** A node of the workspace with its frames, heads and (for a directory) children. */
export interface ContextNodeView {
  node: NodeRecord;
  frames: FrameSummary[];
  heads: NodeAnnotation['heads'];
  children: ContextChild[];
  /** Children left out past {@link MAX_CHILDREN}. */
  moreChildren: number;
}

/** What `/api/context` answers. */
export interface ContextSummary {
  workspace: string;
  status: StatusReport;
}

/** Most children one request lists. */
export const MAX_CHILDREN = 1000;

function statusOf(error: ContextError): number {
  switch (error.code) {
    case 'INVALID_ARGUMENT':
      return 400;
    case 'UNKNOWN_NODE':
    case 'UNKNOWN_FRAME':
      return 404;
    case 'NOT_SCANNED':
      return 409;
    // A damaged store file (the error names it and what is wrong): the store disagrees with what was asked, not a
    // fault of the server's, as the run views answer a damaged log or keyframe.
    case 'CORRUPT_STORE':
      return 409;
    default:
      return 500;
  }
}

/** Runs an engine read, turning its errors into replies with a status (the engine's message names what and where). */
async function read<T>(work: () => Promise<T>, parameter: string): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ContextError) throw new HttpError(statusOf(error), error.message, parameter, { code: error.code });
    throw error;
  }
}

/** Read-only views of one workspace's context store. */
export class ContextReader {
  private constructor(private readonly engine: ContextEngine) {}

  /** The workspace root (absolute). */
  get workspace(): string {
    return this.engine.workspaceRoot;
  }

  /** Opens the engine of `workspace` (nothing is written). */
  static async open(workspace: string): Promise<ContextReader> {
    return new ContextReader(await ContextEngine.open(workspace));
  }

  /** The workspace root and its counts. */
  async summary(): Promise<ContextSummary> {
    return { workspace: this.engine.workspaceRoot, status: await read(() => this.engine.status(), 'workspace') };
  }

  /** A node (by workspace path, `''` the root) with its frames, heads and children. */
  async node(path: string): Promise<ContextNodeView> {
    return read(async () => {
      const node = await this.engine.resolveNode(path);
      const annotations = await this.engine.listAnnotated(node.path);
      const byPath = new Map(annotations.map((a) => [a.path, a]));
      const childPaths = node.children ?? [];
      // Stale heads by the child of this node they are at or under (one pass over the annotated paths).
      const staleByChild = new Map<string, number>();
      const base = node.path === '' ? '' : `${node.path}/`;
      for (const a of annotations) {
        const stale = a.heads.filter((h) => h.stale).length;
        if (stale === 0 || a.path === node.path || !a.path.startsWith(base)) continue;
        const slash = a.path.indexOf('/', base.length);
        const child = slash < 0 ? a.path : a.path.slice(0, slash);
        staleByChild.set(child, (staleByChild.get(child) ?? 0) + stale);
      }
      const children: ContextChild[] = [];
      for (const childPath of childPaths.slice(0, MAX_CHILDREN)) {
        const child = await this.engine.resolveNode(childPath);
        const own = byPath.get(child.path);
        const staleBelow = staleByChild.get(child.path) ?? 0;
        children.push({
          path: child.path,
          name: child.path.slice(child.path.lastIndexOf('/') + 1),
          kind: child.kind,
          size: child.size,
          frames: own?.frames ?? 0,
          heads: own?.heads ?? [],
          staleBelow,
        });
      }
      return {
        node,
        frames: await this.engine.listFrames(node.path),
        heads: byPath.get(node.path)?.heads ?? [],
        children,
        moreChildren: Math.max(0, childPaths.length - MAX_CHILDREN),
      };
    }, 'path');
  }

  /** One frame, verified against its id by the engine. */
  async frame(frameId: string): Promise<Frame> {
    return read(() => this.engine.getFrame(frameId), 'frameId');
  }

  /** Releases the engine's helper thread. */
  async close(): Promise<void> {
    await this.engine.close();
  }
}
