// A Linux run's plan, pure: from the gathered facts (linux-facts.ts) and the command to the bwrap
// plan (profiles/bwrap.ts) and the SpawnPlan srt runs or --dry-run shows. Nothing is made here.

import { join } from 'node:path';
import { describeCredentialPlan } from '../credentials/describe.js';
import { NODE_PRELOAD_PATH } from '../paths.js';
import type { Policy } from '../policy.js';
import { withCommand, type BwrapPlan } from '../profiles/bwrap.js';
import { landedLines } from '../profiles/protected-plan.js';
import { encodeRules } from '../profiles/supervisor.js';
import { gitProxyScript, sandboxProxyEnv } from '../proxy/env.js';
import { describeExpose, describeForward, forwardedPorts, HTTP_RELAY_PORT, SOCKS_RELAY_PORT } from '../proxy/local-services.js';
import { describeSource } from '../settings/report.js';
import { shellQuote } from '../shell.js';
import { SandboxError } from './backend.js';
import type { LinuxFacts } from './linux-facts.js';
import { resolveLanding } from './landing.js';
import { selfWritableWarnings } from './runtime.js';
import type { PlanFile, SpawnPlan } from './spawn-plan.js';

/** What the command's environment gains (values that are not secrets). */
export function linuxEnvChanges(g: LinuxFacts): Record<string, string> {
  const env: Record<string, string> = { TMPDIR: g.facts.tmpDir, SRT_SANDBOX: '1' };
  const seccomp = g.facts.seccomp;
  if (!seccomp) return env;
  return {
    ...env,
    ...sandboxProxyEnv({
      httpPort: HTTP_RELAY_PORT, socksPort: SOCKS_RELAY_PORT, nodePreloadPath: NODE_PRELOAD_PATH, helperPath: seccomp.helperPath, baseEnv: process.env,
      gitProxyCommand: join(g.facts.runDir, 'git-proxy'),
      ...(g.tls ? { trust: { bundlePath: g.tls.bundlePath, javaTrustStorePath: g.tls.javaTrustStorePath } } : {}),
    }),
  };
}

/** What the run makes in its directory before the command starts (the directory itself first). */
function runFiles(g: LinuxFacts, plan: BwrapPlan): PlanFile[] {
  const f = g.facts;
  const files: PlanFile[] = [{ path: f.runDir, mode: 0o700 }];
  // Certificates only (the CA key stays in srt's memory or its own, denied file): the run
  // directory is readable inside the sandbox.
  if (g.tls) {
    files.push({ path: g.tls.bundlePath, mode: 0o444, content: g.tls.termination.bundle() });
    files.push({ path: g.tls.javaTrustStorePath, mode: 0o444, content: g.tls.termination.javaTrustStore() });
  }
  files.push({ path: f.tmpDir, mode: 0o700 });
  // Bound over denied files: mode 000, so reading one fails with EACCES (Permission denied)
  // rather than looking like an empty file. uid 0 inside has no capabilities to override it.
  files.push({ path: f.deniedFile, mode: 0o000, content: '' });
  if (g.helper && f.seccomp) {
    files.push({ path: join(f.runDir, 'git-proxy'), mode: 0o500, content: gitProxyScript(g.helper.path, HTTP_RELAY_PORT) });
    if (f.seccomp.stageDir) files.push({ path: f.seccomp.stageDir, mode: 0o700 });
    files.push({ path: f.seccomp.filterPath, mode: 0o400, content: g.filter! });
    const sup = f.seccomp.supervisor;
    if (sup) files.push({ path: sup.rulesPath, mode: 0o400, content: encodeRules(g.rules, plan.protectedRoots, plan.protectedPaths, [f.tmpDir], plan.gated) });
  }
  return files;
}

/** What --dry-run says about TLS termination: on/off, the CA in use (never its key), trust files. */
function tlsLines(policy: Policy, g: LinuxFacts): string[] {
  const t = policy.network.tlsTerminate;
  if (!t) return ['off: HTTPS tunnels are relayed as they are (network.tlsTerminate turns termination on)'];
  if (!g.tls) return ['configured, but the sandbox has no network'];
  const { ca, rootsSource, upstream } = g.tls.termination;
  const excluded = t.excludeDomains.map((r) => r.text);
  return [
    `on: a CONNECT or SOCKS tunnel whose client starts TLS is terminated by srt${excluded.length ? ` (not for ${excluded.join(', ')})` : ''}`,
    ca.ephemeral
      ? `CA: ephemeral, made for this run (${ca.subject}, SHA-256 ${ca.fingerprint256}); its key exists only in srt's memory`
      : `CA: ${t.caCertPath} (${ca.subject}, SHA-256 ${ca.fingerprint256}); key ${t.caKeyPath}, unreadable inside the sandbox`,
    `upstreams verified against: ${rootsSource}${t.extraCaCertPaths.length ? ` + ${t.extraCaCertPaths.join(', ')}` : ''} (${upstream.certs.length} certificates)`,
    `the command trusts: ${g.tls.bundlePath} (PEM; srt's CA + those roots), ${g.tls.javaTrustStorePath} (Java PKCS#12)`,
    `maxTunnels ${t.maxTunnels}, handshakeTimeoutMs ${t.handshakeTimeoutMs}`,
  ];
}

function networkLines(policy: Policy, g: LinuxFacts): string[] {
  const sockets = g.proxySockets;
  if (!sockets) return ['none: the sandbox has no network interface but loopback'];
  const lines: string[] = [];
  for (const [port, own, kind, socketPath] of [
    [HTTP_RELAY_PORT, policy.network.httpProxyPort, 'HTTP', sockets.http],
    [SOCKS_RELAY_PORT, policy.network.socksProxyPort, 'SOCKS5', sockets.socks],
  ] as const) {
    const target = own === undefined ? `srt's filtering ${kind} proxy` : `your own ${kind} proxy on 127.0.0.1:${own}`;
    lines.push(`sandbox 127.0.0.1:${port}, [::1]:${port} → ${socketPath} → ${target}`);
  }
  for (const f of forwardedPorts(policy.network)) {
    if (!g.forwards.some((x) => x.host === f.host && x.port === f.port)) continue; // not bindable (a warning says why)
    lines.push(`${describeForward(f)}, each connection decided by srt's proxy (network.allowedDomains "${f.rule}")`);
  }
  for (const e of policy.network.exposePorts) lines.push(`${describeExpose(e)} (network.exposePorts${e.ifAvailable ? ', where the host has an IPv6 loopback' : ''}; inside, [::1] when 127.0.0.1 refuses)`);
  return lines;
}

/** The bwrap plan and the SpawnPlan of `argv`; a SandboxError when srt cannot build a sandbox that keeps every deny. */
export function linuxPlan(policy: Policy, g: LinuxFacts, argv: string[]): { bwrap: BwrapPlan; spawn: SpawnPlan } {
  const plan = withCommand(policy, g.facts, g.mounts, argv);
  if (plan.errors.length) throw new SandboxError(plan.errors.join('\n'));
  const env = linuxEnvChanges(g);
  // One option per line with its values; the command after `--` on the last line.
  const spawn = [...(plan.launcher.length ? [plan.launcher] : []), [g.bwrap], ...plan.argGroups];
  const sections: SpawnPlan['sections'] = [{
    title: plan.launcher.length ? 'bubblewrap command (started by srt-init, which first binds the exposed host ports)' : 'bubblewrap command',
    lines: [spawn.map((group) => group.map(shellQuote).join(' ')).join(' \\\n  ')],
  }];
  const helperDenies = plan.ops.filter((m) => m.kind === 'bind' && m.deny).map((m) => m.dest);
  if (helperDenies.length) sections.push({ title: "denied files: srt-init binds srt's empty unreadable file over each, after bubblewrap", lines: helperDenies.map(shellQuote) });
  sections.push({ title: 'network', lines: networkLines(policy, g) });
  sections.push({ title: 'TLS termination', lines: tlsLines(policy, g) });
  sections.push({ title: 'environment changes (everything else inherited)', lines: Object.entries(env).map(([k, v]) => `${k}=${shellQuote(v)}`) });
  const creds = describeCredentialPlan(g.credentials, { fdOf: (i: number) => g.facts.credentials!.masked[i]!.fd });
  if (creds.length) sections.push({ title: 'credentials (real values are never shown; each run mints new sentinels)', lines: creds });
  if (g.facts.seccomp?.supervisor) {
    sections.push({
      title: 'protected paths: the seccomp supervisor refuses creating, replacing or removing them (no placeholders)',
      lines: [
        `protected names at any depth below: ${plan.protectedRoots.join(' ')}`,
        `names: ${[...g.rules.names, ...g.rules.suffixes.map((x) => `*${x}`)].join(' ')}`,
        `in every .git that exists: ${g.rules.gitInternals.join(' ')}`,
        `write-denied paths: ${plan.protectedPaths.length} (denyWrite and protected, as written and where they land)`,
      ],
    });
  }
  if (g.facts.seccomp?.supervisor && plan.gated.length) {
    sections.push({
      title: 'read gate: the supervisor refuses every open of these and of what lies below them (a glob: each path it matches)',
      lines: plan.gated.map((d) => `${d.glob ? 'glob ' : ''}${d.path}${d.reopened.length ? `, but ${d.reopened.join(' ')}` : ''}`),
    });
  }
  const landed = landedLines(g.facts.protectedTargets, (t) => g.facts.landings.get(t.path)?.real ?? t.path);
  if (landed.length) sections.push({ title: 'protected for what they are or where they land (links, git includes, bare repositories)', lines: landed });
  if (plan.placeholders.length) {
    sections.push({ title: 'empty read-only placeholders created for the run (missing protected paths)', lines: plan.placeholders.map((p) => `${p.kind} ${p.path}`) });
  }
  if (policy.ignored.length) {
    sections.push({
      title: 'settings entries ignored (srt config shows them too)',
      lines: policy.ignored.map((i) => `${i.key}${i.value !== undefined ? ` ${i.value}` : ''} (${describeSource(i.source, policy)}): ${i.reason}`),
    });
  }
  const kept = policy.filesystem.disabled ? 'none' : g.facts.seccomp?.supervisor ? 'all' : 'not-links';
  const warnings = [...new Set([...g.warnings, ...g.credentials.warnings, ...selfWritableWarnings(plan.writable, kept, (d) => g.ownDirs.get(d) ?? resolveLanding(d).real), ...plan.warnings])];
  return {
    bwrap: plan,
    spawn: {
      platform: 'linux', command: argv, cwd: policy.cwd, spawn,
      env: { set: env, unset: [...g.credentials.unsetEnv] },
      runDir: g.facts.runDir, files: runFiles(g, plan),
      filesystem: { writable: plan.writable, mounts: plan.ops, placeholders: plan.placeholders.map((p) => ({ path: p.path, kind: p.kind })) },
      sections, warnings, notes: [...plan.notes, ...g.credentials.notes],
      treeSearch: {
        searches: g.search.searches, reused: g.search.reused, watched: g.search.watch?.size ?? 0,
        ...(g.search.stale ? { stale: g.search.stale } : {}), landingsKept: g.kept?.reused ?? 0, listingsKept: g.kept?.listingsReused ?? 0, planKept: g.planKept,
      },
    },
  };
}
