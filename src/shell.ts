// Text for the user's shell and terminal: commands srt prints for the user to run or review, and
// every line it prints, which may quote what a settings file, a file name or the network chose.

/** `s` as one shell word (quoted only when it needs to be). */
export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

// C0 and C1 controls (ESC sequences move the cursor, erase lines, set titles; a newline would start
// a line that looks like srt's own), DEL, and the bidirectional overrides that reorder what is shown.
const UNPRINTABLE = /[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/** `text` as one line that shows exactly what it contains: every control character escaped. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** One line of srt's own output on stderr, made printable. */
export function say(line: string): void {
  process.stderr.write(`${printable(line)}\n`);
}
