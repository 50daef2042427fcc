// Where settings live (SPEC §2.1) and how a file becomes a plain object. No spawning, no env
// lookups for locations: the managed location is fixed so an unprivileged user cannot redirect it.

import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve } from 'node:path';
import type { Scope } from '../policy.js';
import { SettingsError } from './errors.js';
import { JsonSyntaxError, parseJson } from './json.js';

export type FileScope = Exclude<Scope, 'default'>;

/** One settings file found on disk, with the directory its relative paths resolve against. */
export interface SettingsFile {
  scope: FileScope;
  path: string;
  base: string;
}

/** Managed locations in load order: a `.json` path is a file location (`.yaml`/`.yml` siblings
 *  accepted), any other path a drop-in directory read in lexical order. */
export function defaultManagedPaths(platform: NodeJS.Platform = process.platform): string[] {
  const dir = platform === 'darwin' ? '/Library/Application Support/srt' : '/etc/srt';
  return [join(dir, 'managed-settings.json'), join(dir, 'managed-settings.d')];
}

/** Top of the git work tree holding `cwd` (a `.git` directory or file), else `cwd`. */
export function findRoot(cwd: string): string {
  let dir = cwd;
  for (;;) {
    if (existsSync(join(dir, '.git'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return cwd;
    dir = parent;
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

/** True for anything at the path, including a broken symlink (which must error, not vanish). */
function existsOrDangling(path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return true; // exists but cannot be inspected: the read reports why
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

export interface DiscoverOptions {
  cwd: string;
  home: string;
  root: string;
  settingsFiles?: string[];
  managedPaths?: string[];
}

/** Every settings file that applies, in scope order managed, cli, local, project, user; within a
 *  scope in load order (a later file wins for scalars). */
export function discoverSettingsFiles(opts: DiscoverOptions): SettingsFile[] {
  const found: SettingsFile[] = [];
  const add = (scope: FileScope, jsonPath: string, base: string): void => {
    const path = findAtLocation(jsonPath);
    if (path) found.push({ scope, path, base });
  };

  for (const location of opts.managedPaths ?? defaultManagedPaths()) {
    if (location.endsWith('.json')) add('managed', location, opts.cwd);
    else for (const path of dropInFiles(location)) found.push({ scope: 'managed', path, base: opts.cwd });
  }
  for (const file of opts.settingsFiles ?? []) {
    const path = resolve(opts.cwd, file);
    if (!existsOrDangling(path)) throw new SettingsError(`${path}: no such settings file (given with --settings)`);
    found.push({ scope: 'cli', path, base: opts.cwd });
  }
  add('local', join(opts.root, '.srt', 'settings.local.json'), opts.root);
  add('project', join(opts.root, '.srt', 'settings.json'), opts.root);
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

/**
 * Read and parse one settings file and unwrap the `{ "sandbox": {...} }` form. Returns the
 * settings object, not yet validated. Empty, unreadable and malformed files are errors.
 */
export function readSettingsFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SettingsError(`${path}: cannot read: ${describeErrno(err)}`);
  }
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
        throw new SettingsError(`${path}:${err.line}:${err.column}: invalid JSON: ${err.message}`);
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

export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}
