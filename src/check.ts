// `srt check read|write PATH` and `srt check net HOST[:PORT]`: the verdict a run would reach,
// from the same policy and the same access model, without running anything. Paths are judged where
// they land (symlinks followed); protected paths by name and location, as the supervisor judges
// them in directories that existed before the run. Library code: the CLI prints.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { PathRule, Policy, Source } from './policy.js';
import { accessPaths, buildAccessRules, mayRead, mayWrite, type AccessRule } from './profiles/access.js';
import { protectedPatterns } from './profiles/protected.js';
import { resolveLanding } from './platform/landing.js';
import { decide, displayHostPort } from './proxy/decide.js';
import { networkAdvice } from './settings/advice.js';
import { defaultManagedPaths, lineOfKey } from './settings/files.js';

export interface CheckResult {
  version: 1;
  kind: 'read' | 'write' | 'net';
  /** As given, then as judged: the absolute path, or host:port. */
  target: string;
  allowed: boolean;
  /** What decided, in words: `write-denied by denyWrite .env (project /r/.srt/settings.json)`. */
  why: string;
  /** The entry that decided, when a settings entry did. */
  rule?: { entry: string; key?: string; source: Source; line?: number };
  /** Paths: where the path lands (symlinks followed), and whether it exists. */
  landing?: { path: string; exists: boolean };
  /** Refusals: what would allow it, when anything the user may set would. */
  advice?: string;
}

/** `host`, `host:port`, `[v6]:port`: port 443 when none is given. */
export function parseNetTarget(text: string): { host: string; port: number } | null {
  const m = /^(?:\[([^\]]+)\]|([^:[\]\s]+))(?::(\d{1,5}))?$/.exec(text);
  if (!m) return null;
  const port = m[3] === undefined ? 443 : Number(m[3]);
  return port >= 1 && port <= 65535 ? { host: m[1] ?? m[2]!, port } : null;
}

function located(entry: string, source: Source, at: string | undefined): NonNullable<CheckResult['rule']> {
  // A preset's entries stand in the preset, not at an index of the file that named it.
  const key = source.preset === undefined ? at : undefined;
  const line = key !== undefined && source.file !== undefined && source.preset === undefined ? lineOfKey(source.file, key) : undefined;
  return { entry, ...(key !== undefined ? { key } : {}), source, ...(line !== undefined ? { line } : {}) };
}

export function checkNet(policy: Policy, host: string, port: number): CheckResult {
  const d = decide(policy.network, host, port);
  const target = displayHostPort(d.allow ? d.host.host : d.host, port);
  const keyOf = (list: Policy['network']['allowedDomains'], text: string) => list.find((x) => x.rule.text === text)?.key;
  if (d.allow) {
    return {
      version: 1, kind: 'net', target, allowed: true, why: `allowed by network.allowedDomains ${d.rule.text}`,
      rule: located(d.rule.text, d.source, keyOf(policy.network.allowedDomains, d.rule.text)),
    };
  }
  const result: CheckResult = { version: 1, kind: 'net', target, allowed: false, why: d.reason };
  if (d.rule && d.source) result.rule = located(d.rule.text, d.source, keyOf(policy.network.deniedDomains, d.rule.text));
  else if (!/invalid/.test(d.reason)) result.advice = networkAdvice(policy, d.host, port);
  return result;
}

/** The access rules a run would build, with srt's own per-run directories as placeholders.
 *  `made`: paths judged as directories that exist (what `mkdir -p` before the run would make). */
export function rulesFor(policy: Policy, made: readonly string[] = []) {
  const landings = new Map(accessPaths(policy).map((p) => {
    const l = resolveLanding(p);
    return [p, made.includes(p) && l.kind === 'missing' ? { real: l.real, kind: 'dir' as const } : l] as const;
  }));
  const runRoot = join(policy.home, '.srt', 'run');
  const runDir = join(runRoot, `${process.pid}-check`);
  const cwd = landings.get(policy.cwd)!.real;
  const gitFile = resolveLanding(join(cwd, '.git'));
  return buildAccessRules(policy, {
    landings, tmpDir: join(runDir, 'tmp'), runDir, runRoot,
    protect: (roots) => protectedPatterns({
      roots, cwd, home: resolveLanding(policy.home).real, root: resolveLanding(policy.root).real,
      managedDir: defaultManagedPaths()[0]!.replace(/\/[^/]+$/, ''),
      cwdIsRepository: gitFile.kind === 'file' || existsSync(join(cwd, '.git', 'HEAD')),
      cwdGitFile: gitFile.kind === 'file',
    }),
  });
}

/** The settings entry behind an access rule, found by its origin among the policy's path rules. */
export function ruleEntry(policy: Policy, rule: AccessRule): CheckResult['rule'] {
  const found = settingsRuleOf(policy, rule);
  return found ? located(found.original, found.source, found.key) : undefined;
}

const ruleIndex = new WeakMap<Policy, Map<string, PathRule>>();

/** The policy's path rule an access rule came from: its origin is `KIND ORIGINAL (SOURCE)`
 *  (indexed once per policy: the end-of-run report asks this for every refused path). */
export function settingsRuleOf(policy: Policy, rule: AccessRule): PathRule | undefined {
  let index = ruleIndex.get(policy);
  if (!index) {
    const fs = policy.filesystem;
    index = new Map();
    for (const [kind, list] of Object.entries({ denyRead: fs.denyRead, allowRead: fs.allowRead, allowWrite: fs.allowWrite, denyWrite: fs.denyWrite })) {
      for (const r of list) if (!index.has(`${kind} ${r.original}`)) index.set(`${kind} ${r.original}`, r);
    }
    ruleIndex.set(policy, index);
  }
  // The original may hold " (" itself: try each place the source could begin.
  for (let at = rule.origin.indexOf(' ('); at !== -1; at = rule.origin.indexOf(' (', at + 1)) {
    const found = index.get(rule.origin.slice(0, at));
    if (found) return found;
  }
  return undefined;
}

export function checkPath(policy: Policy, kind: 'read' | 'write', path: string): CheckResult {
  const landing = resolveLanding(path);
  const rules = rulesFor(policy);
  const v = kind === 'read' ? mayRead(rules, landing.real) : mayWrite(rules, landing.real);
  const result: CheckResult = {
    version: 1, kind, target: path, allowed: v.allowed, why: v.why,
    landing: { path: landing.real, exists: landing.kind === 'file' || landing.kind === 'dir' },
  };
  const entry = v.rule ? ruleEntry(policy, v.rule) : undefined;
  if (entry) result.rule = entry;
  if (!v.allowed && kind === 'write' && !v.rule) {
    result.advice = `run with --allow-write ${landing.real}, or add "${landing.real}" to filesystem.allowWrite in ~/.srt/settings.json`;
  }
  return result;
}

/** The human form: the verdict line, then what decided, where it stands, and what would allow it. */
export function checkText(r: CheckResult, describe: (s: Source) => string): string {
  const lines = [`${r.kind} ${r.target}: ${r.allowed ? 'allowed' : 'refused'}`];
  if (r.landing && r.landing.path !== r.target) lines.push(`  lands at: ${r.landing.path}${r.landing.exists ? '' : ' (does not exist yet)'}`);
  else if (r.landing && !r.landing.exists) lines.push('  (does not exist yet)');
  lines.push(`  why: ${r.why}`);
  if (r.rule) {
    const where = r.rule.source.file && r.rule.source.preset === undefined ? `${r.rule.source.file}${r.rule.line !== undefined ? `:${r.rule.line}` : ''}` : describe(r.rule.source);
    lines.push(`  entry: ${r.rule.key ?? ''}${r.rule.key ? ' ' : ''}"${r.rule.entry}" in ${where}${r.rule.source.preset !== undefined ? '' : ` (${r.rule.source.scope})`}`);
  }
  if (r.advice) lines.push(`  to allow: ${r.advice}`);
  return `${lines.join('\n')}\n`;
}
