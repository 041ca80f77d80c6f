import { describe, expect, it } from 'vitest';
import { ContextEngine } from '../../src/context/index.js';
import { tempDir, writeTree } from './helpers.js';

describe('default ignores', () => {
  it('leave secret files out of the tree; a .gitignore can re-include one, and defaults: false keeps them', async () => {
    const root = tempDir();
    writeTree(root, {
      '.env': 'OPENAI_API_KEY=x\n',
      '.env.local': 'A=1\n',
      '.env.example': 'OPENAI_API_KEY=\n',
      '.gitignore': '!.env.example\n',
      'deploy/id_rsa': 'key\n',
      'deploy/id_ed25519': 'key\n',
      'certs/server.pem': 'pem\n',
      'certs/server.key': 'key\n',
      'src/app.ts': 'export {};\n',
    });
    const engine = await ContextEngine.open(root);
    await engine.scan();
    const files = (await engine.listNodes()).filter((n) => n.kind === 'file').map((n) => n.path).sort();
    expect(files).toEqual(['.env.example', '.gitignore', 'src/app.ts']);
    await engine.close();
    const all = await ContextEngine.open(root, { defaultIgnores: false });
    await all.scan();
    expect((await all.listNodes()).filter((n) => n.kind === 'file').map((n) => n.path)).toContain('.env');
    await all.close();
  });
});
