/**
 * Secret values that YAML (and YAML-like config text: Kubernetes manifests, compose files, Ansible vars) writes on
 * the lines after their key, where the one-line `name: value` rule of the redactor sees an empty value:
 *
 *     password:                 api_key: |            tokens:
 *       hunter2-Correct-Horse     sk-live-...           - first
 *                                                       - second
 *
 * A secret-named key (the redactor's key rule) whose value is empty, a block scalar indicator (`|`, `>`, with their
 * chomping and indentation marks) or a value an earlier pass replaced already, followed by lines indented deeper:
 * a plain or block scalar has every such line replaced, a list of scalars has each item's value replaced (a list may
 * also be written at the key's own indentation, `password:` then `- first`). A nested
 * mapping (`password:` then `  nested: 1`) is left to the rules that see its own keys, so that its keys stay readable.
 */
/**
 * `name:` ending its line, with an optional block scalar indicator or an already replaced value (`[REDACTED]`, the
 * redactor's marker), and a comment.
 */
const KEY_LINE = /^([ \t]*)(?:- +)?(["']?)([A-Za-z_$][\w$.-]*)\2[ \t]*:[ \t]*([|>][+-]?[1-9]?[+-]?|\[REDACTED\])?[ \t]*(?:#.*)?$/;
/** A line that starts a mapping entry (`key: value`, `key:`), possibly as a list item: not a scalar. */
const MAPPING_LINE = /^[ \t]*(?:- +)?(?:"[^"]*"|'[^']*'|[^\s#'"][^:#]*?)[ \t]*:(?:[ \t]|$)/;
/** A list item and its value. */
const LIST_ITEM = /^([ \t]*- +)(.*)$/;

function indentOf(line: string): number {
  let n = 0;
  while (n < line.length && (line[n] === ' ' || line[n] === '\t')) n++;
  return n;
}

/**
 * `text` with the values of secret-named keys written on the lines after them replaced by `marker` (see the module
 * comment); `text` itself when there is none. `isSecretName` is the redactor's key rule.
 */
export function redactYamlBlockValues(text: string, isSecretName: (name: string) => boolean, marker: string): string {
  const lines = text.split('\n');
  let changed = false;
  for (let i = 0; i < lines.length - 1; i++) {
    const key = KEY_LINE.exec(lines[i]!.endsWith('\r') ? lines[i]!.slice(0, -1) : lines[i]!);
    if (key === null || !isSecretName(key[3]!)) continue;
    const indent = indentOf(lines[i]!);
    // The value's lines: the following lines indented deeper than the key (blank lines inside a block included).
    let end = i + 1;
    while (end < lines.length && (lines[end]!.trim() === '' || indentOf(lines[end]!) > indent)) end++;
    while (end > i + 1 && lines[end - 1]!.trim() === '') end--;
    const block = key[4] !== undefined;
    if (end === i + 1 && !block && !/^[ \t]*- /.test(lines[i]!)) {
      // A list may also sit at its key's own indentation (`password:` then `- first`), unless the key is itself a
      // list item (then such a line is its sibling): its scalar items, one after another.
      const bare = (line: string): string => (line.endsWith('\r') ? line.slice(0, -1) : line);
      while (end < lines.length && indentOf(lines[end]!) === indent && LIST_ITEM.test(bare(lines[end]!)) && !MAPPING_LINE.test(lines[end]!)) end++;
    }
    if (end === i + 1) continue;
    if (!block && MAPPING_LINE.test(lines[i + 1]!)) continue;
    for (let j = i + 1; j < end; j++) {
      const line = lines[j]!;
      if (line.trim() === '') continue;
      const cr = line.endsWith('\r') ? '\r' : '';
      const item = block ? null : LIST_ITEM.exec(cr === '' ? line : line.slice(0, -1));
      // A list of scalars: each item's value (an item that is a mapping is left to its own keys); else the whole line.
      const replaced =
        item !== null
          ? item[2] === '' || item[2] === marker || MAPPING_LINE.test(line)
            ? line
            : `${item[1]}${marker}${cr}`
          : `${line.slice(0, indentOf(line))}${marker}${cr}`;
      if (replaced === line) continue;
      lines[j] = replaced;
      changed = true;
    }
    i = end - 1;
  }
  return changed ? lines.join('\n') : text;
}
