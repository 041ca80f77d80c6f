/**
 * The state-only JSON form of a Backpack: its active items and quarantined items with their provenance, without
 * the commit history. Durable runs checkpoint this form (history grows with the work; the state does not), and
 * `Backpack.importState` puts it back.
 */
import { z } from 'zod';
import { ItemAccessControlSchema } from './access.js';

const ItemMetaSchema = z
  .object({
    sourceNodeId: z.string().optional(),
    sourceNodeName: z.string().optional(),
    sourceNamespace: z.string().optional(),
    timestamp: z.number(),
    version: z.number().int().min(1),
    tags: z.array(z.string()),
  })
  .strict();

/** One item of the state form: its value through the value codec, its metadata and item-level rules. */
export const StateItemSchema = z
  .object({
    value: z.json(),
    metadata: ItemMetaSchema,
    accessControl: ItemAccessControlSchema.optional(),
  })
  .strict();

/** A quarantined item of the state form. */
export const QuarantinedStateItemSchema = StateItemSchema.extend({
  quarantine: z.object({ reason: z.string(), nodeId: z.string().optional(), timestamp: z.number() }).strict(),
}).strict();

/** zod schema of {@link BackpackState}. */
export const BackpackStateSchema = z
  .object({
    version: z.literal(1),
    items: z.record(z.string(), StateItemSchema),
    quarantined: z.record(z.string(), QuarantinedStateItemSchema),
  })
  .strict();

/** The state-only JSON form of a Backpack. Keys of `items` are in first-pack order. */
export type BackpackState = z.infer<typeof BackpackStateSchema>;
/** One item of {@link BackpackState}. */
export type StateItem = z.infer<typeof StateItemSchema>;
/** One quarantined item of {@link BackpackState}. */
export type QuarantinedStateItem = z.infer<typeof QuarantinedStateItemSchema>;
