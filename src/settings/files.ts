// Where settings live (SPEC §2.1) and how a file becomes a plain object. No spawning, no env
// lookups for locations: the managed location is fixed so an unprivileged user cannot redirect it.

import { lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { nodeCrypto } from '../node-crypto.js';
import type { Scope } from '../policy.js';
import { SettingsError } from './errors.js';
import { JsonSyntaxError, parseJson } from './json.js';

export type FileScope = Exclude<Scope, 'default'>;

/** One settings file found on disk, with the directory its relative paths resolve against. */
export interface SettingsFile {
  scope: FileScope;
  path: string;
  base: string;
  /** A project/local file of a directory between cwd and `/` other than `<root>` (SPEC §2.4):
   *  only its deny entries apply. */
  outsideRoot?: true;
  /** Written for the reference tool (its file name, `~/.srt-settings.json`): see isReferenceFile. */
  reference?: true;
}

/**
 * A settings file written for the reference tool (@anthropic-ai/sandbox-runtime) is known by its
 * name, `srt-settings.json` with or without the dot (`.yaml`/`.yml` too), wherever it is: at the
 * reference tool's location `~/.srt-settings.json`, or given with `--settings`. srt's own files are
 * `settings.json`, `settings.local.json` and `managed-settings.json`.
 */
export function isReferenceFile(path: string): boolean {
  return /^\.?srt-settings\.(json|ya?ml)$/.test(basename(path));
}

/** Managed locations in load order: a `.json` path is a file location (`.yaml`/`.yml` siblings
 *  accepted), any other path a drop-in directory read in lexical order. */
export function defaultManagedPaths(platform: NodeJS.Platform = process.platform): string[] {
  const dir = platform === 'darwin' ? '/Library/Application Support/srt' : '/etc/srt';
  return [join(dir, 'managed-settings.json'), join(dir, 'managed-settings.d')];
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Is `dir` the top of a real git repository (SPEC §2.4)? A `.git` directory with a `HEAD`, or a
 * `.git` file whose `gitdir:` names a directory with a `HEAD`. An empty `.git` (which a sandboxed
 * command could plant to make a subdirectory look like a project root) does not count.
 */
export function isRepositoryRoot(dir: string): boolean {
  const dotGit = join(dir, '.git');
  let st;
  try {
    st = statSync(dotGit);
  } catch {
    return false;
  }
  if (st.isDirectory()) return isFile(join(dotGit, 'HEAD'));
  if (!st.isFile()) return false;
  try {
    const m = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, 'utf8'));
    return m !== null && isFile(join(resolve(dir, m[1]!), 'HEAD'));
  } catch {
    return false;
  }
}

/** Top of the git repository holding `cwd` (nearest real repository upwards), else `cwd`. */
export function findRoot(cwd: string): string {
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (isRepositoryRoot(dir)) return dir;
    if (dirname(dir) === dir) return cwd;
  }
}

const SETTINGS_EXTENSIONS = ['.json', '.yaml', '.yml'];

/** The one file at a `.json` location, accepting `.yaml`/`.yml` spellings; two of them is an error. */
function findAtLocation(jsonPath: string): string | undefined {
  const stem = jsonPath.slice(0, -'.json'.length);
  const present = SETTINGS_EXTENSIONS.map((ext) => stem + ext).filter((p) => existsOrDangling(p));
  if (present.length > 1) {
    throw new SettingsError(`${present.join(' and ')}: both exist; keep one of them (they would be the same settings file)`);
  }
  return present[0];
}

/** True for anything at the path, including a broken symlink (which must error, not vanish). A
 *  directory that cannot be searched is an error of its own: whether a file is there is unknown. */
function existsOrDangling(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw new SettingsError(`${dirname(path)}: cannot look for settings files there: ${describeErrno(err)}`);
  }
}

function dropInFiles(dir: string): string[] {
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return [];
    if (code === 'ENOTDIR') throw new SettingsError(`${dir}: expected a directory of settings files`);
    throw new SettingsError(`${dir}: cannot read directory: ${describeErrno(err)}`);
  }
  const byStem = new Map<string, string[]>();
  for (const name of entries.sort()) {
    const ext = extname(name);
    if (name.startsWith('.') || !SETTINGS_EXTENSIONS.includes(ext)) continue;
    const stem = name.slice(0, -ext.length);
    byStem.set(stem, [...(byStem.get(stem) ?? []), join(dir, name)]);
  }
  const files: string[] = [];
  for (const [, paths] of [...byStem.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (paths.length > 1) throw new SettingsError(`${paths.join(' and ')}: both exist; keep one of them`);
    files.push(paths[0]!);
  }
  return files;
}

/** The owner of the file or of its `.srt` directory when that is neither this user nor root. */
function foreignOwner(path: string): number | undefined {
  const me = process.geteuid?.();
  if (me === undefined) return undefined;
  for (const p of [dirname(path), path]) {
    let uid: number;
    try {
      uid = statSync(p).uid;
    } catch {
      continue; // unreadable: reading it reports why
    }
    if (uid !== me && uid !== 0) return uid;
  }
  return undefined;
}

export interface DiscoverOptions {
  cwd: string;
  home: string;
  root: string;
  settingsFiles?: string[];
  managedPaths?: string[];
  /** Files skipped with a reason (another user's parent-directory file) are said here. */
  warnings?: string[];
}

/** Every settings file that applies, in scope order managed, cli, local, project, user; within a
 *  scope in load order (a later file wins for scalars). */
export function discoverSettingsFiles(opts: DiscoverOptions, onError?: (err: SettingsError) => void): SettingsFile[] {
  const found: SettingsFile[] = [];
  // Without onError the first problem stops discovery; with it (srt doctor) every location is looked at.
  const attempt = (fn: () => void): void => {
    try {
      fn();
    } catch (err) {
      if (!onError || !(err instanceof SettingsError)) throw err;
      onError(err);
    }
  };
  const add = (scope: FileScope, jsonPath: string, base: string, outsideRoot = false): void => attempt(() => {
    const path = findAtLocation(jsonPath);
    if (!path) return;
    // A parent directory's file written by another user (/tmp/.srt/settings.json) is not this
    // user's project: it could break every run below it, or inject deny reasons to print.
    const stranger = outsideRoot ? foreignOwner(path) : undefined;
    if (stranger !== undefined) {
      opts.warnings?.push(`${path}: ignored — it belongs to another user (uid ${stranger}), not to you or root`);
      return;
    }
    const reference = scope === 'user' && isReferenceFile(path);
    found.push({ scope, path, base, ...(outsideRoot ? { outsideRoot: true as const } : {}), ...(reference ? { reference: true as const } : {}) });
  });

  for (const location of opts.managedPaths ?? defaultManagedPaths()) {
    if (location.endsWith('.json')) add('managed', location, opts.cwd);
    else attempt(() => { for (const path of dropInFiles(location)) found.push({ scope: 'managed', path, base: opts.cwd }); });
  }
  for (const file of opts.settingsFiles ?? []) {
    attempt(() => {
      const path = resolve(opts.cwd, file);
      if (!existsOrDangling(path)) throw new SettingsError(`${path}: no such settings file (given with --settings)`);
      found.push({ scope: 'cli', path, base: opts.cwd, ...(isReferenceFile(path) ? { reference: true as const } : {}) });
    });
  }
  // A home directory that is itself a repository (dotfiles) has the user file there, not a project file.
  if (opts.root !== opts.home) {
    add('local', join(opts.root, '.srt', 'settings.local.json'), opts.root);
    add('project', join(opts.root, '.srt', 'settings.json'), opts.root);
  }
  // Every other directory from cwd up to `/` contributes the deny entries of its project files, so
  // a nested repository (or one planted inside a sandbox) cannot shed its parents' denies. The
  // home directory's `.srt/settings.json` is the user file, not a project file.
  for (let dir = opts.cwd; ; dir = dirname(dir)) {
    if (dir !== opts.root && dir !== opts.home) {
      add('local', join(dir, '.srt', 'settings.local.json'), dir, true);
      add('project', join(dir, '.srt', 'settings.json'), dir, true);
    }
    if (dirname(dir) === dir) break;
  }
  // The reference tool's location first, so srt's own file wins where both set a scalar.
  add('user', join(opts.home, '.srt-settings.json'), opts.cwd);
  add('user', join(opts.home, '.srt', 'settings.json'), join(opts.home, '.srt'));
  return found;
}

function describeErrno(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  switch (e.code) {
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory, expected a settings file';
    case 'ENOENT':
      return 'no such file (a dangling symlink?)';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    default:
      return e.code ?? e.message;
  }
}

const require = createRequire(import.meta.url);

function isYaml(path: string): boolean {
  const ext = extname(path).toLowerCase();
  return ext === '.yaml' || ext === '.yml';
}

function parseYaml(path: string, text: string): unknown {
  // Loaded on demand: most runs have no YAML file and should not pay for the parser.
  const YAML = require('yaml') as typeof import('yaml');
  const doc = YAML.parseDocument(text, { uniqueKeys: true });
  const err = doc.errors[0];
  if (err) {
    const pos = err.linePos?.[0];
    const where = pos ? `:${pos.line}:${pos.col}` : '';
    const message = err.message.split('\n')[0]!.replace(/ at line \d+, column \d+.*$/, '');
    throw new SettingsError(`${path}${where}: invalid YAML: ${message}`);
  }
  return doc.toJS({ maxAliasCount: 100 });
}

/** One settings file as read: the settings object (unwrapped, not yet validated) and the
 *  SHA-256 of the exact bytes it was parsed from (what `srt trust` approves). */
export interface ReadSettings {
  settings: unknown;
  sha256: string;
}

/**
 * Read and parse one settings file and unwrap the `{ "sandbox": {...} }` form. The file is read
 * once: the hash and the settings come from the same bytes. Empty, unreadable and malformed
 * files are errors.
 */
export function readSettingsFile(path: string): ReadSettings {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (err) {
    throw new SettingsError(`${path}: cannot read: ${describeErrno(err)}`);
  }
  const sha256 = nodeCrypto().createHash('sha256').update(bytes).digest('hex');
  return { settings: parseSettingsText(path, bytes.toString('utf8')), sha256 };
}

/** What a JSON error most likely means: comments (JSON has none), or a YAML document in a .json file. */
function jsonHint(text: string, err: JsonSyntaxError): string {
  const at = text.split('\n')[err.line - 1]?.slice(err.column - 1) ?? '';
  if (at.startsWith('//') || at.startsWith('/*')) return ' (JSON allows no comments; name the file .yaml to write comments)';
  // A document that opens like JSON is meant as JSON (YAML would accept its flow style too).
  if (/^\s*[{[]/.test(text)) return '';
  try {
    const YAML = require('yaml') as typeof import('yaml');
    const doc: unknown = YAML.parse(text);
    if (doc !== null && typeof doc === 'object' && !Array.isArray(doc)) return ' (this looks like YAML; name the file .yaml)';
  } catch { /* not YAML either */ }
  return '';
}

function parseSettingsText(path: string, input: string): unknown {
  let text = input;
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  if (text.trim() === '') {
    throw new SettingsError(`${path}: file is empty; write {} for no settings, or remove the file`);
  }
  let doc: unknown;
  if (isYaml(path)) {
    doc = parseYaml(path, text);
  } else {
    try {
      doc = parseJson(text);
    } catch (err) {
      if (err instanceof JsonSyntaxError) {
        throw new SettingsError(`${path}:${err.line}:${err.column}: invalid JSON: ${err.message}${jsonHint(text, err)}`);
      }
      throw err;
    }
  }
  if (doc === null || doc === undefined) {
    throw new SettingsError(`${path}: file has no settings; write {} for no settings, or remove the file`);
  }
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    throw new SettingsError(`${path}: the settings document must be an object, got ${kindOf(doc)}`);
  }
  const wrapped = (doc as Record<string, unknown>).sandbox;
  if (Object.hasOwn(doc, 'sandbox')) {
    if (wrapped === null || typeof wrapped !== 'object' || Array.isArray(wrapped)) {
      throw new SettingsError(`${path}: sandbox: expected an object, got ${kindOf(wrapped)}`);
    }
    return wrapped;
  }
  return doc;
}

let jsonKeys: { file: string; text: string; found: Map<string, number>; wrapped: boolean; mtimeMs: number; size: number } | undefined;

/**
 * The line (1-based) of the entry at `key` (`filesystem.denyWrite[2]`) in a settings file, for
 * messages that point at it; undefined when the file or the entry cannot be found.
 */

export function lineOfKey(file: string, key: string): number | undefined {
  let text: string;
  try {
    // The same file unchanged since the last question: its text is the one already parsed.
    const st = statSync(file);
    text = jsonKeys?.file === file && jsonKeys.mtimeMs === st.mtimeMs && jsonKeys.size === st.size ? jsonKeys.text : readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  // `a.b[2]`, and `a["x.y"]` for an object key (deniedDomainReasons) that may hold dots.
  const want = [...key.matchAll(/\[("(?:[^"\\]|\\.)*")\]|\[(\d+)\]|([^.[\]]+)/g)]
    .map((m) => (m[1] !== undefined ? JSON.parse(m[1]) as string : m[2] !== undefined ? Number(m[2]) : m[3]!));
  const lineAt = (offset: number) => text.slice(0, offset).split('\n').length;
  try {
    if (isYaml(file)) {
      const YAML = require('yaml') as typeof import('yaml');
      const doc = YAML.parseDocument(text);
      const wrapped = YAML.isMap(doc.contents) && doc.has('sandbox');
      const node = doc.getIn(wrapped ? ['sandbox', ...want] : want, true) as { range?: [number, number, number] } | undefined;
      return node?.range ? lineAt(node.range[0]) : undefined;
    }
    // One parse per content: the end-of-run report asks for a line per refused entry of one file.
    if (jsonKeys?.file !== file || jsonKeys.text !== text) {
      const found = new Map<string, number>();
      const doc = parseJson(text.charCodeAt(0) === 0xfeff ? ` ${text.slice(1)}` : text, (path, offset) => found.set(JSON.stringify(path), offset));
      const st = statSync(file);
      jsonKeys = { file, text, found, wrapped: doc !== null && typeof doc === 'object' && Object.hasOwn(doc, 'sandbox'), mtimeMs: st.mtimeMs, size: st.size };
    }
    const { found, wrapped } = jsonKeys;
    const at = found.get(JSON.stringify(wrapped ? ['sandbox', ...want] : want));
    return at === undefined ? undefined : lineAt(at);
  } catch {
    return undefined;
  }
}

/**
 * Problems of one settings file (`FILE: key.path: message`) in file order, each as
 * `FILE:LINE: key.path: message` where its entry is found; lines of another form, or whose entry
 * is not found, keep their form and come after.
 */
export function located(file: string, problems: readonly string[]): string[] {
  const prefix = `${file}: `;
  const at = problems.map((text) => {
    if (!text.startsWith(prefix)) return { text };
    const rest = text.slice(prefix.length);
    const line = lineOfKey(file, rest.slice(0, rest.indexOf(': ')));
    return line === undefined ? { text } : { text: `${file}:${line}: ${rest}`, line };
  });
  return at.map((p, i) => ({ ...p, i }))
    .sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity) || a.i - b.i)
    .map((p) => p.text);
}

export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
