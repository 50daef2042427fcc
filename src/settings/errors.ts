// Settings errors: one line per problem, `WHERE: key.path: message`, so the CLI can print
// `srt: ` in front of each line and exit 125.

/** A settings problem that stops the run. `lines` are printable without a prefix. */
export class SettingsError extends Error {
  readonly lines: string[];
  constructor(lines: string | string[]) {
    const list = typeof lines === 'string' ? [lines] : lines;
    super(list.join('\n'));
    this.name = 'SettingsError';
    this.lines = list;
  }
}

/** `network.allowedDomains[2]` from `['network', 'allowedDomains', 2]`. */
export function formatKeyPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** The closest known key, if it is close enough to be a plausible typo. */
export function didYouMean(key: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  const lower = key.toLowerCase();
  for (const candidate of known) {
    const d = candidate.toLowerCase() === lower ? 0 : editDistance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  const limit = Math.max(2, Math.floor(key.length / 3));
  return bestDistance <= limit ? best : undefined;
}
