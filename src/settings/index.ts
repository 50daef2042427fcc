// Settings entry points: find every file that applies, read it, and build the one Policy.

import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Policy, Source } from '../policy.js';
import { recordedApprovals, type ApprovalSource } from './approvals.js';
import { SettingsError } from './errors.js';
import { discoverSettingsFiles, findRoot, readSettingsFile, type SettingsFile } from './files.js';
import { validCache } from './valid-cache.js';
import type { PolicyContext } from './layers.js';
import { buildPolicyWithSources, type CliFlags, type SettingsLayer } from './policy-builder.js';

export interface LoadOptions {
  cwd: string;
  home: string;
  /** `--settings` files, in order (CLI scope). */
  settingsFiles?: string[];
  flags?: CliFlags;
  /** Test seam only (not reachable from the CLI or the environment): managed locations in
   *  load order; a `.json` path is a file location, anything else a drop-in directory.
   *  Default: `/etc/srt/managed-settings.json`, `/etc/srt/managed-settings.d` (macOS: under
   *  `/Library/Application Support/srt`). */
  managedPaths?: string[];
  /** Decides whether a project/local file's allow entries apply (SPEC §2.4). Default: the
   *  approvals `srt trust` recorded in `~/.srt/trusted.json`. */
  approvals?: ApprovalSource;
}

export interface SettingsReport {
  /** Every settings file read, scope order (managed first), load order within a scope. */
  files: SettingsFile[];
  policy: Policy;
  /** Source of each scalar, keyed by dotted key (see PolicyBuild.sources). */
  sources: Record<string, Source>;
  /**
   * `--control-fd`: the policy when one document replaces the whole configuration below managed
   * scope (every user, repository and CLI file and flag), as in the reference tool. It is read as
   * CLI scope under the managed files as they were read at start, which it can neither revoke nor
   * widen.
   */
  withControl(control: { label: string; settings: unknown }): Policy;
}

function context(opts: LoadOptions): PolicyContext {
  let cwd: string;
  try {
    cwd = realpathSync(resolve(opts.cwd));
  } catch (err) {
    throw new SettingsError(`cannot use the current directory ${opts.cwd}: ${(err as Error).message}`);
  }
  const home = resolve(opts.home);
  return { cwd, home, root: findRoot(cwd) };
}

/** Everything `srt config` shows: the files, the policy and where each value came from. */
export function loadSettingsReport(opts: LoadOptions): SettingsReport {
  const ctx = context(opts);
  const skipped: string[] = [];
  const discover = { ...ctx, settingsFiles: opts.settingsFiles ?? [], warnings: skipped } as Parameters<typeof discoverSettingsFiles>[0];
  if (opts.managedPaths) discover.managedPaths = opts.managedPaths;
  const files = discoverSettingsFiles(discover);
  const needsApproval = files.some((f) => (f.scope === 'project' || f.scope === 'local') && !f.outsideRoot);
  const recorded = !opts.approvals && needsApproval ? recordedApprovals(ctx.home) : undefined;
  const approvals = opts.approvals ?? recorded;
  const cache = validCache(ctx.home);
  const unchecked: string[] = [];
  const layers: SettingsLayer[] = files.map((f) => {
    const { settings, sha256 } = readSettingsFile(f.path);
    const layer: SettingsLayer = { scope: f.scope, file: f.path, base: f.base, settings, ...(f.reference ? { reference: true as const } : {}) };
    if (cache.has(sha256)) layer.knownValid = true;
    else unchecked.push(sha256);
    if (f.scope === 'project' || f.scope === 'local') {
      layer.approval = f.outsideRoot ? 'outside-root' : approvals?.isApproved({ path: f.path, sha256 }) ? 'approved' : 'unapproved';
    }
    return layer;
  });
  const { policy, sources } = buildPolicyWithSources(ctx, layers, opts.flags ?? {});
  cache.add(unchecked); // every layer passed: the build throws at the first invalid file
  if (recorded?.warning) policy.warnings.unshift(recorded.warning);
  policy.warnings.unshift(...skipped);
  const managed = layers.filter((l) => l.scope === 'managed');
  const withControl = (control: { label: string; settings: unknown }) =>
    buildPolicyWithSources(ctx, [...managed, { scope: 'cli', file: control.label, base: ctx.cwd, settings: control.settings }]).policy;
  return { files, policy, sources, withControl };
}

/** One settings file as `srt doctor` sees it: its problems, and whether its allow entries apply. */
export interface FileInspection extends SettingsFile {
  errors: string[];
  approval?: NonNullable<SettingsLayer['approval']>;
}

export interface SettingsInspection {
  files: FileInspection[];
  /** Problems of a location rather than a file (two spellings at one place, an unreadable directory). */
  errors: string[];
  /** The merged settings, when every file loads. */
  report?: SettingsReport;
}

/** Every settings file judged on its own, without stopping at the first problem (srt doctor). */
export function inspectSettings(opts: LoadOptions): SettingsInspection {
  const ctx = context(opts);
  const errors: string[] = [];
  const discover = { ...ctx, settingsFiles: opts.settingsFiles ?? [] } as Parameters<typeof discoverSettingsFiles>[0];
  if (opts.managedPaths) discover.managedPaths = opts.managedPaths;
  const found = discoverSettingsFiles(discover, (e) => errors.push(...e.lines));
  const approvals = opts.approvals ?? recordedApprovals(ctx.home);
  const files = found.map((f): FileInspection => {
    const out: FileInspection = { ...f, errors: [] };
    try {
      const { settings, sha256 } = readSettingsFile(f.path);
      const layer: SettingsLayer = { scope: f.scope, file: f.path, base: f.base, settings, ...(f.reference ? { reference: true as const } : {}) };
      if (f.scope === 'project' || f.scope === 'local') {
        layer.approval = f.outsideRoot ? 'outside-root' : approvals.isApproved({ path: f.path, sha256 }) ? 'approved' : 'unapproved';
        out.approval = layer.approval;
      }
      buildPolicyWithSources(ctx, [layer]); // the file's own entries: domains, paths, CIDRs
    } catch (err) {
      if (!(err instanceof SettingsError)) throw err;
      out.errors = err.lines;
    }
    return out;
  });
  const inspection: SettingsInspection = { files, errors };
  if (errors.length === 0 && files.every((f) => f.errors.length === 0)) {
    try {
      inspection.report = loadSettingsReport(opts);
    } catch (err) {
      if (!(err instanceof SettingsError)) throw err;
      errors.push(...err.lines);
    }
  }
  return inspection;
}

/** Discover, read, validate, trust-filter and merge every settings scope. Throws SettingsError. */
export function loadPolicy(opts: LoadOptions): Policy {
  return loadSettingsReport(opts).policy;
}

export { SettingsError } from './errors.js';
export { buildPolicy, buildPolicyWithSources } from './policy-builder.js';
export { SCOPE_ORDER, type PolicyContext } from './layers.js';
export type { CliFlags, PolicyBuild, SettingsLayer } from './policy-builder.js';
export { defaultManagedPaths, findRoot, isRepositoryRoot } from './files.js';
export type { Approval, ApprovalSource } from './approvals.js';
export type { SettingsFile } from './files.js';
