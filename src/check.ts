// `srt check read|write PATH` and `srt check net HOST[:PORT]`: the verdict a run would reach,
// from the same policy and the same access model, without running anything. Paths are judged where
// they land (symlinks followed); protected paths by name and location, as the supervisor judges
// them in directories that existed before the run. Library code: the CLI prints.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { IgnoredEntry, PathRule, Policy, Source } from './policy.js';
import { accessPaths, buildAccessRules, type AccessRules } from './profiles/access.js';
import { literalOf, trustOf, type AccessRule } from './profiles/access-rule.js';
import { coverDepth } from './profiles/region.js';
import { mayRead, mayWrite } from './profiles/verdicts.js';
import { globBase } from './glob.js';
import { protectedPatterns } from './profiles/protected-patterns.js';
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
  /** Refused by a read deny: the allow entries covering the path that it overrules (a project
   *  entry never re-opens what managed, cli or user settings deny, nor a credential file), each
   *  with why (`srt config` lists them as ignored). */
  overruled?: Array<NonNullable<CheckResult['rule']> & { why: string }>;
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

/** An allowRead or allowWrite entry that opens nothing: wherever it lands, a read deny it may not
 *  re-open (one of higher trust, SPEC §2.4) hides it. */
export interface OverruledAllow {
  /** `filesystem.allowRead[2]`, or the list's name for a flag's entry. */
  key: string;
  rule: PathRule;
  /** The deny that wins. */
  deny: AccessRule;
  /** That deny's settings entry with its file and line, as `srt check` names a deciding entry
   *  (absent for srt's own secrets and directories). */
  by?: NonNullable<CheckResult['rule']>;
}

/** Every allowRead/allowWrite entry that a deny of higher trust covers where it lands (a glob:
 *  where its literal part lands, which holds every match). Such an entry changes nothing,
 *  whoever approved it. */
export function overruledAllows(policy: Policy, rules: Pick<AccessRules, 'readDenies'> = rulesFor(policy)): OverruledAllow[] {
  const out: OverruledAllow[] = [];
  const lists = { allowRead: policy.filesystem.allowRead, allowWrite: policy.filesystem.allowWrite };
  for (const [list, entries] of Object.entries(lists)) {
    for (const rule of entries) {
      const at = resolveLanding(literalOf(rule) ?? globBase(rule.path)).real;
      const deny = rules.readDenies.find((d) => d.trust > trustOf(rule) && coverDepth(d.region, at) !== null);
      if (!deny) continue;
      const by = ruleEntry(policy, deny);
      out.push({ key: rule.key ?? `filesystem.${list}`, rule, deny, ...(by ? { by } : {}) });
    }
  }
  return out;
}

function scopeName(source: Source): string {
  return source.outsideRoot ? `a parent directory's ${source.scope}` : source.scope;
}

/** `filesystem.denyRead[0] "~/secret" in /h/.srt/settings.json:3 (user)`. */
export function describeEntry(rule: NonNullable<CheckResult['rule']>, describe: (s: Source) => string): string {
  const where = rule.source.file && rule.source.preset === undefined ? `${rule.source.file}${rule.line !== undefined ? `:${rule.line}` : ''}` : describe(rule.source);
  return `${rule.key ?? ''}${rule.key ? ' ' : ''}"${rule.entry}" in ${where}${rule.source.preset !== undefined ? '' : ` (${rule.source.scope})`}`;
}

/** Why an allow entry from `allow` cannot re-open `deny` (whose settings entry is `by`). */
function overruleWhy(allow: Source, deny: AccessRule, by: CheckResult['rule']): string {
  if (deny.kind === 'denyRead' && by) return `${scopeName(allow)} settings never re-open what ${scopeName(by.source)} settings deny`;
  return deny.kind === 'credential' ? 'no allow entry re-opens a credential file or srt\'s own secrets' : 'no allow entry re-opens srt\'s own files';
}

/** An overruled entry as `srt config` and `srt trust` list it among the ignored ones. */
export function overruledEntry(o: OverruledAllow, describe: (s: Source) => string): IgnoredEntry {
  return {
    key: o.key, value: o.rule.original, source: o.rule.source,
    reason: `overruled by ${o.by ? describeEntry(o.by, describe) : o.deny.origin}: ${overruleWhy(o.rule.source, o.deny, o.by)}`,
    ...(o.by ? { overruledBy: o.by } : {}),
  };
}

/** The policy as `srt config` shows it: overruled allow entries moved from their lists to the ignored ones. */
export function withOverruled(policy: Policy, describe: (s: Source) => string): Policy {
  const overruled = overruledAllows(policy);
  if (overruled.length === 0) return policy;
  const gone = new Set(overruled.map((o) => o.rule));
  return {
    ...policy,
    filesystem: {
      ...policy.filesystem,
      allowRead: policy.filesystem.allowRead.filter((r) => !gone.has(r)),
      allowWrite: policy.filesystem.allowWrite.filter((r) => !gone.has(r)),
    },
    ignored: [...policy.ignored, ...overruled.map((o) => overruledEntry(o, describe))],
  };
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
  if (!v.allowed && v.rule && rules.readDenies.includes(v.rule)) {
    // The allow entries that cover the path and lose to the deny that hides it (srt config lists them as ignored).
    const deny = v.rule;
    const overruled = rules.readAllows
      .filter((a) => (a.kind === 'allowRead' || a.kind === 'allowWrite') && a.trust < deny.trust && coverDepth(a.region, landing.real) !== null)
      .flatMap((a) => {
        const entry = ruleEntry(policy, a);
        return entry ? [{ ...entry, why: overruleWhy(entry.source, deny, result.rule) }] : [];
      });
    if (overruled.length) result.overruled = overruled;
  }
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
  if (r.rule) lines.push(`  entry: ${describeEntry(r.rule, describe)}`);
  for (const o of r.overruled ?? []) lines.push(`  overruled: ${describeEntry(o, describe)}: ${o.why}`);
  if (r.advice) lines.push(`  to allow: ${r.advice}`);
  return `${lines.join('\n')}\n`;
}
