/**
 * What a terminal shows after it receives `output`: a minimal VT100 model, enough for progress bars and colored
 * text (carriage return, newline, cursor save/restore, cursor up and to a column, erase in line; colors and modes
 * are ignored). Returns the screen's lines, trailing blanks trimmed.
 */
export function renderScreen(output: string): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  let saved: [number, number] = [0, 0];
  const line = (): string[] => (lines[row] ??= []);
  for (let i = 0; i < output.length; i++) {
    const ch = output[i]!;
    if (ch === '\x1b') {
      const next = output[i + 1];
      if (next === '7') { saved = [row, col]; i++; continue; }
      if (next === '8') { [row, col] = saved; i++; continue; }
      if (next === '[') {
        const m = /^\[([?\d;]*)([A-Za-z])/.exec(output.slice(i + 1));
        if (!m) continue;
        i += m[0].length;
        const n = Number.parseInt(m[1]!.replace('?', ''), 10);
        switch (m[2]) {
          case 'G': col = (Number.isNaN(n) ? 1 : n) - 1; break;
          case 'A': row = Math.max(0, row - (Number.isNaN(n) ? 1 : n)); break;
          case 'K':
            if (m[1] === '2') lines[row] = [];
            else if (m[1] === '1') for (let c = 0; c <= col; c++) line()[c] = ' ';
            else line().length = Math.min(line().length, col);
            break;
          default: break; // colors, modes
        }
      }
      continue;
    }
    if (ch === '\r') { col = 0; continue; }
    if (ch === '\n') { row++; col = 0; line(); continue; }
    const l = line();
    while (l.length < col) l.push(' ');
    l[col++] = ch;
  }
  const out = lines.map((l) => (l ?? []).join('').trimEnd());
  while (out.length > 0 && out.at(-1) === '') out.pop();
  return out;
}
