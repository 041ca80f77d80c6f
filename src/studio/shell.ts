/** Shell quoting for the commands the studio shows (server and page share it). */

/** `word` as one POSIX shell word: as is when it is plainly safe, else in single quotes. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}
