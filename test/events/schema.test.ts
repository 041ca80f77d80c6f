import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderSchemaFile, repositoryRoot, schemaFiles, writeSchemaFiles } from '../../scripts/generate-schemas.js';
import { EventStreamer, StreamEventType } from '../../src/events/index.js';

const eventEntry = schemaFiles.find((entry) => entry.file === 'schema/event.schema.json')!;

describe('generated JSON Schema files', () => {
  it.each(schemaFiles.map((entry) => [entry.file, entry] as const))('%s is up to date (regenerate with `npm run schemas`)', (file, entry) => {
    const committed = readFileSync(join(repositoryRoot, file), 'utf8');
    expect(committed, `${file} is stale: run \`npm run schemas\` and commit the result`).toBe(renderSchemaFile(entry));
  });

  it('renders deterministically, pretty-printed, with a trailing newline', () => {
    const text = renderSchemaFile(eventEntry);
    expect(renderSchemaFile(eventEntry)).toBe(text);
    expect(text.endsWith('}\n')).toBe(true);
    expect(text).toContain('\n  "type": "object",\n');
  });

  it('the event schema lists every event type and requires the envelope fields', () => {
    const schema = JSON.parse(renderSchemaFile(eventEntry)) as {
      $schema: string;
      title: string;
      properties: Record<string, { enum?: string[] }>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(schema.title).toBe('backpackflow event');
    expect(schema.properties.type!.enum).toEqual(Object.values(StreamEventType));
    expect(schema.required).toEqual(['v', 'id', 'seq', 'timestamp', 'runId', 'type', 'payload']);
    expect(schema.additionalProperties).toBe(false);
    const emitted = new EventStreamer({ sessionKey: 's' }).emit({ type: StreamEventType.NODE_START, namespace: 'a', nodeId: 'a', nodeName: 'A', spanId: 'x', parentSpanId: 'y' });
    for (const key of Object.keys(emitted)) expect(Object.keys(schema.properties)).toContain(key);
  });

  it('writeSchemaFiles writes every file under the given root, creating folders', () => {
    const root = mkdtempSync(join(tmpdir(), 'backpackflow-schemas-'));
    try {
      const written = writeSchemaFiles(root);
      expect(written).toEqual(schemaFiles.map((entry) => join(root, entry.file)));
      for (const entry of schemaFiles) expect(readFileSync(join(root, entry.file), 'utf8')).toBe(renderSchemaFile(entry));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
