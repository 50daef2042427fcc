// Text for the user's shell: commands srt prints for the user to run or review.

/** `s` as one shell word (quoted only when it needs to be). */
export function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
