// git config files (pure): enough of git's syntax to read a value (core.hooksPath) and to judge
// a repository the command created during the run (SPEC §3): every entry that is not one git
// itself writes for a plain repository is disabled until the user reviews it, because git config
// runs programs in many places (core.fsmonitor, core.pager, filters, diff drivers, aliases, …).

export interface GitConfigEntry {
  /** Lowercased section, `.`, the subsection as written, `.`, lowercased key: `remote.origin.url`. */
  name: string;
  section: string;
  subsection?: string;
  key: string;
  /** The value, unquoted; `true` for a key with no `=`. */
  value: string;
}

export class GitConfigError extends Error {}

/**
 * Parse a config file as git does: `[section]`, `[section "sub"]` (and the old `[section.sub]`),
 * `key = value` (also after a header on the same line), quotes, backslash escapes, line
 * continuations, `#`/`;` comments. Throws GitConfigError where git would refuse the file too.
 */
export function parseGitConfig(text: string): GitConfigEntry[] {
  const out: GitConfigEntry[] = [];
  let i = 0;
  let section: string | undefined;
  let subsection: string | undefined;
  const n = text.length;
  const fail = (what: string) => { throw new GitConfigError(`${what} at offset ${i}`); };
  if (text.startsWith('\ufeff')) i = 1;
  while (i < n) {
    const c = text[i]!;
    if (c === '\n' || c === ' ' || c === '\t' || c === '\r') { i++; continue; }
    if (c === '#' || c === ';') { while (i < n && text[i] !== '\n') i++; continue; }
    if (c === '[') {
      i++;
      let name = '';
      while (i < n && /[A-Za-z0-9.-]/.test(text[i]!)) name += text[i++];
      subsection = undefined;
      if (text[i] === ' ' || text[i] === '\t') {
        while (text[i] === ' ' || text[i] === '\t') i++;
        if (text[i] !== '"') fail('bad section header');
        i++;
        let sub = '';
        while (i < n && text[i] !== '"') {
          if (text[i] === '\n') fail('newline in subsection');
          if (text[i] === '\\') i++;
          sub += text[i++] ?? '';
        }
        if (text[i] !== '"') fail('unterminated subsection');
        i++;
        subsection = sub;
      } else if (name.includes('.')) {
        // Deprecated `[section.sub]`: the subsection is lowercased.
        const dot = name.indexOf('.');
        subsection = name.slice(dot + 1).toLowerCase();
        name = name.slice(0, dot);
      }
      if (text[i] !== ']' || name === '') fail('bad section header');
      i++;
      section = name.toLowerCase();
      continue;
    }
    if (!/[A-Za-z]/.test(c)) fail('bad key');
    let key = '';
    while (i < n && /[A-Za-z0-9-]/.test(text[i]!)) key += text[i++];
    while (text[i] === ' ' || text[i] === '\t') i++;
    let value = 'true';
    if (text[i] === '=') {
      i++;
      value = '';
      let quoted = false;
      let pendingSpace = '';
      while (text[i] === ' ' || text[i] === '\t') i++;
      for (; i < n; i++) {
        const ch = text[i]!;
        if (ch === '\n' && !quoted) break;
        if (ch === '\n') fail('newline in quoted value');
        if (!quoted && (ch === '#' || ch === ';')) { while (i < n && text[i] !== '\n') i++; break; }
        if (!quoted && (ch === ' ' || ch === '\t')) { pendingSpace += ch; continue; }
        if (pendingSpace) { value += pendingSpace; pendingSpace = ''; }
        if (ch === '"') { quoted = !quoted; continue; }
        if (ch === '\\') {
          const e = text[++i];
          if (e === '\n') continue;
          if (e === '\r' && text[i + 1] === '\n') { i++; continue; }
          const map: Record<string, string> = { n: '\n', t: '\t', b: '\b', '"': '"', '\\': '\\' };
          if (e === undefined || !(e in map)) fail('bad escape');
          value += map[e!];
          continue;
        }
        if (ch === '\r' && text[i + 1] === '\n' && !quoted) continue;
        value += ch;
      }
      if (quoted) fail('unterminated quote');
    } else if (text[i] !== '\n' && text[i] !== '\r' && text[i] !== '#' && text[i] !== ';' && i < n) {
      fail('bad key');
    }
    if (section === undefined) fail('key outside a section');
    const k = key.toLowerCase();
    out.push({
      name: subsection === undefined ? `${section}.${k}` : `${section}.${subsection}.${k}`,
      section: section!, ...(subsection !== undefined ? { subsection } : {}), key: k, value,
    });
  }
  return out;
}

/** The last value of `name` (git's rule for single-valued keys), if set. */
export function gitConfigValue(entries: GitConfigEntry[], name: string): string | undefined {
  const want = name.toLowerCase();
  let v: string | undefined;
  for (const e of entries) if (e.subsection === undefined && e.name === want) v = e.value;
  return v;
}

// What git itself writes for a repository (init, clone, fetch, branch, remote, submodule) and that
// runs nothing. Everything else in a config the command wrote is disabled.
const SAFE_KEYS: Record<string, { sub: 'none' | 'any'; keys: readonly string[] | '*' }> = {
  core: { sub: 'none', keys: ['repositoryformatversion', 'filemode', 'bare', 'logallrefupdates', 'ignorecase',
    'precomposeunicode', 'symlinks', 'autocrlf', 'eol', 'safecrlf', 'sparsecheckout', 'sparsecheckoutcone',
    'untrackedcache', 'quotepath', 'abbrev', 'compression', 'commitgraph', 'multipackindex', 'checkstat', 'trustctime'] },
  extensions: { sub: 'none', keys: '*' },
  remote: { sub: 'any', keys: ['url', 'pushurl', 'fetch', 'push', 'tagopt', 'mirror', 'prune', 'prunetags', 'promisor', 'partialclonefilter'] },
  branch: { sub: 'any', keys: ['remote', 'merge', 'rebase', 'pushremote', 'description'] },
  submodule: { sub: 'any', keys: ['url', 'active', 'branch'] },
  user: { sub: 'none', keys: ['name', 'email', 'signingkey'] },
  init: { sub: 'none', keys: ['defaultbranch'] },
  pull: { sub: 'none', keys: ['rebase', 'ff'] },
  push: { sub: 'none', keys: ['default', 'autosetupremote'] },
  fetch: { sub: 'none', keys: ['prune', 'prunetags'] },
  gc: { sub: 'none', keys: ['auto', 'autodetach'] },
};

/** Is this entry one git writes for a plain repository, running nothing? */
export function isSafeGitConfigEntry(e: GitConfigEntry): boolean {
  if (e.section === 'submodule' && e.subsection === undefined) return e.key === 'active';
  const rule = SAFE_KEYS[e.section];
  if (!rule) return false;
  if ((rule.sub === 'none') !== (e.subsection === undefined)) return false;
  return rule.keys === '*' || rule.keys.includes(e.key);
}

function quote(v: string): string {
  return `"${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n').replace(/\t/g, '\\t').replace(/\x08/g, '\\b')}"`;
}

/** A config with only the safe entries, written afresh (so nothing of the original's syntax survives). */
export function serializeGitConfig(entries: GitConfigEntry[]): string {
  const lines: string[] = [];
  let current: string | undefined;
  for (const e of entries) {
    const header = e.subsection === undefined ? `[${e.section}]` : `[${e.section} ${quote(e.subsection)}]`;
    if (header !== current) { lines.push(header); current = header; }
    lines.push(`\t${e.key} = ${quote(e.value)}`);
  }
  return lines.length ? lines.join('\n') + '\n' : '';
}

export interface ConfigReview {
  /** Names of the disabled entries, deduplicated, in file order (`*` when the file cannot be read as git config). */
  disabled: string[];
  /** The config to keep in its place. */
  kept: string;
}

/** Judge a config the command wrote: null when every entry is safe. */
export function reviewGitConfig(text: string): ConfigReview | null {
  let entries: GitConfigEntry[];
  try {
    entries = parseGitConfig(text);
  } catch {
    return { disabled: ['(unreadable config)'], kept: '' };
  }
  const bad = entries.filter((e) => !isSafeGitConfigEntry(e));
  if (bad.length === 0) return null;
  return { disabled: [...new Set(bad.map((e) => e.name))], kept: serializeGitConfig(entries.filter(isSafeGitConfigEntry)) };
}
