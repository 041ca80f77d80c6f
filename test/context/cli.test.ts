import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { json, runMerkle, runMerkleProcess, snapshotStore, tempDir, workspace } from './helpers.js';

describe('merkle CLI (spec §6, end to end through the built command line; errors and exit codes through the binary too)', () => {
  it('runs the whole workflow with the documented JSON documents', async () => {
    const root = await workspace(true);
    const frameFile = join(tempDir(), 'frame.json');
    writeFileSync(frameFile, JSON.stringify({ type: 'summary', content: 'the entry point', metadata: { lines: 1 } }));
    const textFile = join(tempDir(), 'note.txt');
    writeFileSync(textFile, 'plain text note');

    const status0 = await json(['status'], root);
    expect(status0).toEqual({ root: expect.stringMatching(/^[0-9a-f]{64}$/), nodes: 10, frames: 0, heads: 0, stale: 0 });
    const { frameId } = await json(['put-frame', 'src/main.ts', frameFile, '--agent', 'w'], root);
    const { frameId: noteId } = await json(['put-frame', 'src/main.ts', textFile, '--agent', 'w', '--type', 'note'], root);
    expect(await json(['get-head', 'src/main.ts', '--type', 'summary'], root)).toEqual({ frameId });
    expect(await json(['get-head', 'README.md', '--type', 'summary'], root)).toEqual({ frameId: null });
    expect(await json(['list-frames', 'src/main.ts'], root)).toEqual([
      { frameId, type: 'summary', agentId: 'w' },
      { frameId: noteId, type: 'note', agentId: 'w' },
    ]);
    expect(await json(['list-frames', 'src/main.ts', '--type', 'note'], root)).toEqual([{ frameId: noteId, type: 'note', agentId: 'w' }]);
    const node = await json(['get-node', 'src/main.ts', '--max-frames', '1'], root);
    expect(node).toEqual({
      nodeId: expect.stringMatching(/^[0-9a-f]{64}$/),
      path: 'src/main.ts',
      type: 'file',
      frames: [{ frameId: noteId, type: 'note', agentId: 'w', content: 'plain text note' }],
      frameCount: 2,
    });
    expect((await json(['get-node', node.nodeId], root)).frameCount).toBe(2);
    const viewed = await json(['get-node', 'src/main.ts', '--view', '{"maxFrames":5,"types":["summary"]}'], root);
    expect(viewed.frames.map((f: { frameId: string }) => f.frameId)).toEqual([frameId]);

    const synth = await json(['synthesize', 'src', '--type', 'summary', '--agent', 's', '--policy', 'summarization'], root);
    expect(synth.frameId).toMatch(/^[0-9a-f]{64}$/);
    expect((await json(['get-node', 'src'], root)).frames[0].content).toBe(
      'src: 2 child frame(s) of type summary\n- main.ts: the entry point\n- util/: src/util: 0 child frame(s) of type summary\n',
    );
    expect(await json(['regenerate', 'src', '--recursive'], root)).toEqual({ regenerated: [] });
    expect(await json(['invalidate', 'src'], root)).toEqual({ invalidated: [{ path: 'src', type: 'summary', frameId: synth.frameId }] });
    expect((await json(['status'], root)).stale).toBe(1);
    expect(await json(['regenerate', 'src'], root)).toEqual({ regenerated: [] }); // same basis: same frame, stale mark cleared
    expect((await json(['status'], root)).stale).toBe(0);

    const composed = await json(['compose', 'src/main.ts', '--max-frames', '2', '--source', 'current', '--source', 'parent', '--ordering', 'type'], root);
    expect(composed.frames.map((f: { type: string; source: string }) => `${f.type}/${f.source}`)).toEqual(['note/current', 'summary/parent']);
    expect(await json(['validate'], root)).toEqual({ ok: true, errors: [], warnings: [] });
    expect((await json(['agent', 'list'], root)).map((a: { agentId: string }) => a.agentId)).toEqual(['s', 'w']);

    const human = await runMerkle(['status'], root);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('frames 4'); // two put, two synthesized (src and src/util)
  });

  it('is reproducible and idempotent: re-running a command gives the same output and leaves the store byte-identical', async () => {
    const root = await workspace();
    const frameFile = join(tempDir(), 'f.json');
    writeFileSync(frameFile, JSON.stringify({ type: 'summary', content: 'x' }));
    const commands = [
      ['scan'],
      ['put-frame', 'README.md', frameFile, '--agent', 'w'],
      ['synthesize', '.', '--type', 'summary', '--agent', 's'],
      ['regenerate', '.', '--recursive'],
      ['invalidate', 'docs'],
      ['agent', 'add', 'w', '--role', 'writer'],
      ['status'],
      ['get-node', '.'],
      ['validate'],
    ];
    // Each command run twice in a row: the second run prints the same and writes nothing.
    const first: string[] = [];
    for (const c of commands) {
      const once = await runMerkle([...c, '--json'], root);
      first.push(once.stdout);
      const snapshot = snapshotStore(root);
      const twice = await runMerkle([...c, '--json'], root);
      expect(twice.stdout, c.join(' ')).toBe(once.stdout);
      expect(snapshotStore(root), c.join(' ')).toEqual(snapshot);
    }
    // The whole sequence again: the same outputs (regenerate and invalidate do real work in between).
    for (const [i, c] of commands.entries()) expect((await runMerkle([...c, '--json'], root)).stdout, c.join(' ')).toBe(first[i]);
  });

  it('reports errors on stderr with exit 1 and bad usage with exit 2, leaving the store intact', async () => {
    const root = await workspace();
    // Through the binary, and in this process as the other tests run it: the same output and exit code.
    const both = async (args: string[]) => {
      const binary = await runMerkleProcess(args, root);
      expect(await runMerkle(args, root), args.join(' ')).toEqual(binary);
      return binary;
    };
    const before = snapshotStore(root);
    const frameFile = join(tempDir(), 'f.json');
    writeFileSync(frameFile, JSON.stringify({ type: 'summary', content: 'x' }));
    const notText = join(tempDir(), 'n.json');
    writeFileSync(notText, JSON.stringify({ type: 'summary', content: 5 }));

    const usages = [
      ['frobnicate'],
      ['put-frame', 'README.md', frameFile],
      // A frame document whose content is not text: not stored as the file's text (it was, with --type).
      ['put-frame', 'README.md', notText, '--agent', 'w', '--type', 'summary'],
      ['get-node', '.', '--max-frames', 'many'],
      ['get-node', '.', '--view', '{not json'],
      // A list given as a string matched as a substring ('summary' selected frames of type 'sum'); a misspelt field was ignored.
      ['get-node', '.', '--view', '{"types":"summary"}'],
      ['get-node', '.', '--view', '{"maxframes":1}'],
      ['agent', 'add', 'x', '--role', 'boss'],
      ['synthesize', '.', '--type', 't', '--agent', 's', '--policy', 'filtering'],
    ];
    // The processes run side by side (the in-process runs take turns); the two put-frames, which may take the
    // workspace lock, one after the other.
    const [unknown, [ghost, noFile], elsewhere, ...usageResults] = await Promise.all([
      both(['get-node', 'missing/file.ts']),
      (async () => [await both(['put-frame', 'README.md', frameFile, '--agent', 'ghost']), await both(['put-frame', 'README.md', '/nonexistent/frame.json', '--agent', 'w'])] as const)(),
      both(['status', '--workspace', join(root, 'nope')]),
      ...usages.map((usage) => both(usage)),
    ]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no node at 'missing/file.ts'");
    expect(ghost.code).toBe(1);
    expect(ghost.stderr).toContain("agent 'ghost' is not registered");
    expect(noFile.code).toBe(1);
    expect(noFile.stderr).toContain('/nonexistent/frame.json');
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain(`workspace ${join(root, 'nope')} does not exist`);
    for (const [i, r] of usageResults.entries()) {
      expect(r.code, usages[i]!.join(' ')).toBe(2);
      expect(r.stderr.length).toBeGreaterThan(0);
    }
    expect(usageResults[2]!.stderr).toContain('"content" must be a string (the frame\'s text), got number');
    expect(usageResults[5]!.stderr).toContain('--view.types must be a list of frame types, got a string');
    expect(usageResults[6]!.stderr).toContain('--view has unknown field(s) "maxframes"');
    expect(snapshotStore(root)).toEqual(before);
  });

  it('validate reports a corrupted frame with exit 1', async () => {
    const root = await workspace();
    const frameFile = join(tempDir(), 'f.json');
    writeFileSync(frameFile, JSON.stringify({ type: 'summary', content: 'original' }));
    const { frameId } = await json(['put-frame', 'README.md', frameFile, '--agent', 'w'], root);
    const file = join(root, '.merkle', 'frames', frameId.slice(0, 2), `${frameId}.json`);
    chmodSync(file, 0o644);
    writeFileSync(file, readFileSync(file, 'utf8').replace('original', 'tampered'));
    const r = await runMerkle(['validate', '--json'], root);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.ok).toBe(false);
    expect(report.errors.join('\n')).toContain(frameId);
  });

});
