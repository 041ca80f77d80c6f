// Runs before every test file (vitest setupFiles), also when files share a worker's module cache.
import { afterAll, afterEach } from 'vitest';
import { removeTempDirs } from './temp.js';

afterEach(() => removeTempDirs('test'));
afterAll(() => removeTempDirs('file'));
