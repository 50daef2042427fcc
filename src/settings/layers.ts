// The state of one policy build: the settings layers in scope order, and what the build has said
// about them so far (warnings, notices, ignored entries, the source of every scalar). Each step of
// the build (scope rules, network, credentials) reads and writes it through these few methods.

import { globToRegExp, isGlob } from '../glob.js';
import { isAbsolute, join, resolve } from 'node:path';
import type { IgnoredEntry, Source } from '../policy.js';
import { parseDomainEntry, type DomainRule } from '../proxy/domains.js';
import { SettingsError } from './errors.js';
import type { FileScope } from './files.js';
import type { PathEntry, SettingsDocument } from './schema.js';

export interface PolicyContext {
  /** Absolute, symlinks resolved. */
  cwd: string;
  home: string;
  /** Git work-tree top holding cwd, else cwd. */
  root: string;
  /** This host's own addresses, which project/local IP-literal allow entries may not name
   *  (default: the interfaces' addresses). */
  localAddresses?: () => string[];
  /** Default: this host's (`process.platform`). */
  platform?: NodeJS.Platform;
}

export const SCOPE_ORDER: readonly FileScope[] = ['managed', 'cli', 'local', 'project', 'user'];

const DEFAULT: Source = { scope: 'default' };

/** How much of a project or local file applies (SettingsLayer.approval). */
export type LayerApproval = 'approved' | 'unapproved' | 'outside-root';

export interface Layer {
  scope: FileScope;
  source: Source;
  base: string;
  doc: SettingsDocument;
  approval: LayerApproval;
  reference?: true;
}

export function label(source: Source): string {
  return source.file ?? source.flag ?? `${source.scope} settings`;
}

export function where(source: Source, key: string): string {
  // A flag has no key path worth showing: `--allow-domain: invalid domain entry "x"`.
  return source.flag !== undefined ? source.flag : `${label(source)}: ${key}`;
}

export function get(doc: SettingsDocument, path: string[]): unknown {
  let v: unknown = doc;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return v;
}

export function drop(doc: SettingsDocument, path: string[]): void {
  const parent = get(doc, path.slice(0, -1));
  if (parent && typeof parent === 'object') delete (parent as Record<string, unknown>)[path[path.length - 1]!];
}

export class LayerMerge {
  readonly warnings: string[] = [];
  readonly notices: string[] = [];
  readonly ignored: IgnoredEntry[] = [];
  readonly sources: Record<string, Source> = {};

  constructor(
    readonly ctx: PolicyContext,
    /** Scope order: managed first, user last; within a scope in load order. */
    readonly layers: Layer[],
  ) {}

  ignore(layer: Layer, key: string, reason: string, value?: string): void {
    this.ignored.push({ key, ...(value !== undefined ? { value } : {}), source: layer.source, reason });
    this.warnings.push(`${label(layer.source)}: ${key}: ignored — ${reason}`);
  }

  /** Layers from the highest precedence down (managed; within a scope the last loaded first). */
  byPrecedence(): Layer[] {
    return SCOPE_ORDER.flatMap((scope) => this.layers.filter((l) => l.scope === scope).reverse());
  }

  scalar<T>(key: string, read: (doc: SettingsDocument) => T | undefined, fallback: T, layers = this.byPrecedence()): T {
    for (const layer of layers) {
      const v = read(layer.doc);
      if (v !== undefined) {
        this.sources[key] = layer.source;
        return v;
      }
    }
    this.sources[key] = DEFAULT;
    return fallback;
  }

  resolvePath(layer: Layer, key: string, entry: PathEntry): { path: string; glob: boolean; original: string } {
    const original = typeof entry === 'string' ? entry : entry.path;
    const literal = typeof entry !== 'string' && entry.literal === true;
    let p = original;
    if (p === '~' || p.startsWith('~/')) p = join(this.ctx.home, p.slice(1));
    else if (p.startsWith('~')) throw new SettingsError(`${where(layer.source, key)}: "${original}": ~user paths are not supported; write the absolute path`);
    const path = isAbsolute(p) ? resolve(p) : resolve(layer.base, p);
    const glob = !literal && isGlob(original);
    if (glob) {
      try {
        globToRegExp(path);
      } catch (e) {
        throw new SettingsError(`${where(layer.source, key)}: "${original}": invalid glob (${(e as Error).message.replace(/^Invalid regular expression: /, '')})`);
      }
    }
    return { path, glob, original };
  }

  parseDomain(layer: Layer, key: string, entry: string, list: 'allow' | 'deny', quiet = false): DomainRule[] {
    const parsed = parseDomainEntry(entry, list);
    if (!parsed.ok) throw new SettingsError(`${where(layer.source, key)}: ${parsed.error}`);
    if (parsed.warning && !quiet) this.warnings.push(`${where(layer.source, key)}: ${parsed.warning}`);
    return parsed.rules;
  }
}
