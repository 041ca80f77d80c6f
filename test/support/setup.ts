// Runs before every test file (vitest setupFiles), also when files share a worker's module cache.
import { afterAll, afterEach } from 'vitest';
import { preferMemoryTmpdir } from './memory-tmpdir.js';
import { removeTempDirs } from './temp.js';

preferMemoryTmpdir();

afterEach(() => removeTempDirs('test'));
afterAll(() => removeTempDirs('file'));
