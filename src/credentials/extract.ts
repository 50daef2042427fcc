// `extract` for masked files (SPEC §7): capture group 1 of every match of the entry's regex is
// the secret; only those characters are replaced, so the rest of the file still parses.
// With `maskDuplicates`, verbatim copies of each value elsewhere in the file are replaced too.

/** One masked span of the text. */
export interface Span {
  start: number;
  end: number;
  value: string;
}

/** `text` with each span (in order, not overlapping) replaced by `replacement(value)`. */
export function replaceSpans(text: string, spans: readonly Span[], replacement: (value: string) => string): string {
  let out = '';
  let at = 0;
  for (const s of spans) {
    out += text.slice(at, s.start) + replacement(s.value);
    at = s.end;
  }
  return out + text.slice(at);
}

/** The group-1 spans of every match, in order (empty or missing groups are skipped). */
export function extractSpans(text: string, pattern: string): Span[] {
  const re = new RegExp(pattern, 'gd');
  const spans: Span[] = [];
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[0] === '') re.lastIndex++; // a pattern that can match empty must still advance
    const at = m.indices?.[1];
    if (at && at[1] > at[0]) spans.push({ start: at[0], end: at[1], value: m[1]! });
  }
  return spans;
}

/** Every occurrence of `values` outside `spans` (longest value first, no overlaps). */
function duplicateSpans(text: string, spans: Span[], values: string[]): Span[] {
  const taken = [...spans];
  const overlaps = (s: number, e: number) => taken.some((t) => s < t.end && t.start < e);
  const extra: Span[] = [];
  for (const value of [...values].sort((a, b) => b.length - a.length)) {
    for (let i = text.indexOf(value); i !== -1; i = text.indexOf(value, i + 1)) {
      if (overlaps(i, i + value.length)) continue;
      const span = { start: i, end: i + value.length, value };
      taken.push(span);
      extra.push(span);
    }
  }
  return extra;
}

export interface Extraction {
  /** Distinct secret values, in order of first appearance. */
  values: string[];
  /** The text with every masked span replaced by `replacement(value)`. */
  render(replacement: (value: string) => string): string;
}

/**
 * Find the secrets of a file's text. `pattern` undefined = the whole content is the secret
 * (surrounding whitespace kept). Null when nothing matches.
 */
export function extract(text: string, pattern: string | undefined, maskDuplicates: boolean): Extraction | null {
  let spans: Span[];
  if (pattern === undefined) {
    const start = text.length - text.trimStart().length;
    const end = text.trimEnd().length;
    spans = end > start ? [{ start, end, value: text.slice(start, end) }] : [];
  } else {
    spans = extractSpans(text, pattern);
  }
  if (spans.length === 0) return null;
  const values = [...new Set(spans.map((s) => s.value))];
  if (maskDuplicates) spans = [...spans, ...duplicateSpans(text, spans, values)];
  spans.sort((a, b) => a.start - b.start);
  return {
    values,
    render: (replacement) => replaceSpans(text, spans, replacement),
  };
}
