/**
 * A form generated from a JSON Schema (the one a waiting run recorded for its answer). Supported shapes: an object
 * with properties (nested objects as fieldsets), string, number, integer, boolean, enum, arrays of scalars, with
 * `required`, `default` and `description`. Anything else (or no schema at all) is a JSON text area, parsed before
 * the answer is sent. The server checks the answer against the schema and its problems (JSON pointers) are shown
 * next to the field they name, or the nearest field above it.
 */
import { useState } from 'preact/hooks';
import { buildAnswer, initialRaws, isSecretField, keyOfPointer, kindOf, pointerOf, problemsByField, propertiesOf, requiredOf, type FieldProblem, type Raw, type Schema } from './schema-answer.js';

export type { FieldProblem, Schema };

function fieldId(pointer: string): string {
  return `answer${pointer.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`)}`;
}

interface FieldProps {
  schema: Schema;
  pointer: string;
  label: string;
  required: boolean;
  raws: Map<string, Raw>;
  set: (pointer: string, raw: Raw) => void;
  errors: Map<string, string[]>;
}

function Errors({ id, list }: { id: string; list: string[] | undefined }) {
  if (!list?.length) return null;
  return (
    <ul class="field-errors" id={id}>
      {list.map((m) => (
        <li>{m}</li>
      ))}
    </ul>
  );
}

function Field(props: FieldProps) {
  const { schema, pointer, label, required, raws, set, errors } = props;
  const kind = kindOf(schema);
  const id = fieldId(pointer);
  const list = errors.get(pointer);
  const description = typeof schema.description === 'string' ? schema.description : undefined;
  const describedBy = [description ? `${id}-help` : '', list?.length ? `${id}-errors` : ''].filter(Boolean).join(' ') || undefined;
  const common = { id, 'aria-invalid': list?.length ? true : undefined, 'aria-describedby': describedBy, 'data-pointer': pointer };
  const raw = raws.get(pointer);
  const title = (
    <>
      {label}
      {required ? <span class="required" aria-hidden="true"> *</span> : <span class="muted small"> (optional)</span>}
    </>
  );
  const help = description && (
    <span class="field-help muted small" id={`${id}-help`}>
      {description}
    </span>
  );
  if (kind === 'object') {
    const needed = requiredOf(schema);
    return (
      <fieldset class="field-group">
        {label && <legend>{title}</legend>}
        {help}
        <Errors id={`${id}-errors`} list={list} />
        {propertiesOf(schema).map(([key, child]) => (
          <Field {...props} schema={child} pointer={pointerOf(pointer, key)} label={typeof child.title === 'string' ? child.title : key} required={needed.has(key)} />
        ))}
      </fieldset>
    );
  }
  let control;
  if (kind === 'boolean' && required) {
    control = <input type="checkbox" {...common} checked={raw === true} onChange={(e) => set(pointer, e.currentTarget.checked)} />;
  } else if (kind === 'boolean' || kind === 'enum') {
    const options = kind === 'boolean' ? ['true', 'false'] : (schema.enum as unknown[]).map(String);
    const value = typeof raw === 'boolean' ? String(raw) : (raw as string | undefined) ?? '';
    control = (
      <select {...common} value={value} onChange={(e) => set(pointer, kind === 'boolean' ? (e.currentTarget.value === '' ? undefined : e.currentTarget.value === 'true') : e.currentTarget.value)}>
        {(!required || value === '') && <option value="">{required ? 'choose…' : '(none)'}</option>}
        {options.map((o) => (
          <option value={o}>{o}</option>
        ))}
      </select>
    );
  } else if (kind === 'array') {
    const items = Array.isArray(raw) ? raw : [];
    const itemSchema = schema.items as Schema;
    const itemKind = kindOf(itemSchema);
    control = (
      <div class="array-field" {...common} role="group" aria-label={label}>
        {items.map((text, i) => (
          <div class="array-item">
            {itemKind === 'enum' ? (
              <select aria-label={`${label} item ${i + 1}`} value={text} onChange={(e) => set(pointer, items.map((t, j) => (j === i ? e.currentTarget.value : t)))}>
                {(itemSchema.enum as unknown[]).map((o) => (
                  <option value={String(o)}>{String(o)}</option>
                ))}
              </select>
            ) : itemKind === 'string' ? (
              <input aria-label={`${label} item ${i + 1}`} type="text" value={text} onInput={(e) => set(pointer, items.map((t, j) => (j === i ? e.currentTarget.value : t)))} />
            ) : (
              <input aria-label={`${label} item ${i + 1}`} type="number" value={text} onInput={(e) => set(pointer, items.map((t, j) => (j === i ? e.currentTarget.value : t)))} />
            )}
            <button type="button" onClick={() => set(pointer, items.filter((_, j) => j !== i))} aria-label={`remove ${label} item ${i + 1}`}>
              Remove
            </button>
          </div>
        ))}
        <button
          type="button"
          onClick={() => set(pointer, [...items, itemKind === 'enum' ? String((itemSchema.enum as unknown[])[0]) : ''])}
          aria-label={`add ${label} item`}
        >
          Add
        </button>
      </div>
    );
  } else if (kind === 'json') {
    control = <textarea {...common} rows={6} spellcheck={false} value={(raw as string) ?? ''} onInput={(e) => set(pointer, e.currentTarget.value)} placeholder="JSON" />;
  } else if (kind === 'string') {
    // A secret (a password the node asks for) is masked as it is typed, and not offered to the browser's autofill.
    const secret = isSecretField(schema, keyOfPointer(pointer));
    control = secret ? (
      <input {...common} type="password" autocomplete="off" value={(raw as string) ?? ''} onInput={(e) => set(pointer, e.currentTarget.value)} />
    ) : (
      <input {...common} type="text" value={(raw as string) ?? ''} onInput={(e) => set(pointer, e.currentTarget.value)} />
    );
  } else {
    control = (
      <input
        {...common}
        type="number"
        step={kind === 'integer' ? 1 : 'any'}
        min={typeof schema.minimum === 'number' ? schema.minimum : undefined}
        max={typeof schema.maximum === 'number' ? schema.maximum : undefined}
        value={(raw as string) ?? ''}
        onInput={(e) => set(pointer, e.currentTarget.value)}
      />
    );
  }
  return (
    <div class={`field field-${kind}`}>
      <label for={id}>{title}</label>
      {control}
      {help}
      <Errors id={`${id}-errors`} list={list} />
    </div>
  );
}

/** What submitting gave back: problems at JSON pointers (shown at their fields) or an error. */
export interface SubmitOutcome {
  problems?: FieldProblem[];
  error?: string;
}

/** The form; `onSubmit` gets the answer once the fields make one. */
export function SchemaForm(props: { schema: Schema | undefined; submitLabel: string; disabled?: boolean; onSubmit: (answer: unknown) => Promise<SubmitOutcome>; onAnswer?: (answer: unknown) => void }) {
  // Without a schema any JSON is an answer: one JSON field.
  const schema: Schema = props.schema ?? { description: 'This question recorded no schema: any JSON value is an answer.' };
  const [raws, setRaws] = useState(() => initialRaws(schema, '', new Map()));
  const [problems, setProblems] = useState<FieldProblem[]>([]);
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const errors = problemsByField(schema, problems);
  const set = (pointer: string, raw: Raw): void => {
    const next = new Map(raws).set(pointer, raw);
    setRaws(next);
    if (props.onAnswer) props.onAnswer(buildAnswer(schema, '', next, true, []));
  };
  const top = kindOf(schema) === 'object';
  return (
    <form
      class="schema-form"
      aria-label="answer"
      noValidate
      onSubmit={async (e) => {
        e.preventDefault();
        const found: FieldProblem[] = [];
        const answer = buildAnswer(schema, '', raws, true, found);
        setProblems(found);
        setError(undefined);
        if (found.length > 0) {
          document.getElementById(fieldId(found[0]!.path))?.focus();
          return;
        }
        setBusy(true);
        try {
          const outcome = await props.onSubmit(answer);
          setProblems(outcome.problems ?? []);
          setError(outcome.error);
        } finally {
          setBusy(false);
        }
      }}
    >
      {top ? (
        <Field schema={schema} pointer="" label="" required raws={raws} set={set} errors={errors} />
      ) : (
        <Field schema={schema} pointer="" label="Answer" required raws={raws} set={set} errors={errors} />
      )}
      {error && (
        <p class="problem" role="alert">
          {error}
        </p>
      )}
      {problems.length > 0 && (
        <p class="problem" role="alert">
          {problems.length} problem{problems.length === 1 ? '' : 's'} in the answer: see the fields marked.
        </p>
      )}
      <button type="submit" class="primary" disabled={busy || props.disabled}>
        {busy ? 'Sending…' : props.submitLabel}
      </button>
    </form>
  );
}
