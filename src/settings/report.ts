// `srt config`: the effective policy, every value with the scope and file it came from, and
// every ignored entry with why. The JSON form is a stable, documented shape (version 1):
//
// {
//   "version": 1, "cwd": "...", "home": "...", "root": "...",
//   "files": [ { "scope": "managed", "path": "/etc/srt/managed-settings.json" }, ... ],
//   "settings": {                        // same key layout as the settings file
//     "network": {
//       "allowedDomains": [ { "value": "github.com", "source": SOURCE }, ... ],
//       "strictAllowlist": { "value": true, "source": SOURCE },
//       "deniedDomainReasons": { "github.com:22": { "value": "use https", "source": SOURCE } },
//       "tlsTerminate": null | { "value": { ...fields, paths absolute }, "source": SOURCE },
//       ...
//     },
//     "filesystem": { "allowWrite": [ { "value": "/abs", "glob": false, "original": ".", "source": SOURCE } ], ... },
//     "credentials": { "envVars": [ { "value": "GH_TOKEN", "mode": "mask", ..., "source": SOURCE } ], ... },
//     "mandatoryDenySearchDepth": { "value": 3, "source": SOURCE }, ...
//   },
//   "forwardedPorts": [ { "value": "localhost:5432", "listen": ["127.0.0.1:5432", "[::1]:5432"], "source": SOURCE } ],
//   "ignored": [ { "key": "network.tlsTerminate", "source": SOURCE, "reason": "..." },
//                { "key": "filesystem.allowRead[0]", "value": "~/.ssh", "source": SOURCE, "reason": "overruled by ...",
//                  "overruledBy": { "entry": "~/.ssh", "key": "filesystem.denyRead[0]", "source": SOURCE, "line": 3 } } ],
//   "warnings": [ "..." ]
// }
// settings.network.exposePorts: [ { "value": "127.0.0.1:3000:3000", "hostAddress", "hostPort", "sandboxPort", "source" } ];
// forwardedPorts: derived from allowedDomains (every loopback entry with a port).
// SOURCE = { "scope": "managed"|"cli"|"local"|"project"|"user"|"default", "file"?: abs path, "flag"?: "--allow-domain", "preset"?: "npm" }
// Lists hold only effective entries; a scalar nobody set has source { "scope": "default" }.

import { relative, sep } from 'node:path';
import type { ExposedPort, PathRule, Policy, Source, SourcedDomain } from '../policy.js';
import { describeExpose, describeForward, forwardedPorts } from '../proxy/local-services.js';
import { printable } from '../shell.js';
import type { SettingsReport } from './index.js';
import type { CredentialPlan } from '../credentials/plan.js';
import { describeCredentialPlan } from '../credentials/describe.js';
import { hostPort } from '../host-port.js';

type Sourced<T> = { value: T; source: Source };

function scalar<T>(report: SettingsReport, key: string, value: T): Sourced<T> {
  return { value, source: report.sources[key] ?? { scope: 'default' } };
}

/** `127.0.0.1:3000:3000`, `[::1]:8080:80`: the full spelling of an exposePorts entry. */
function exposeValue(e: ExposedPort): string {
  return `${hostPort(e.hostAddress, e.hostPort)}:${e.sandboxPort}`;
}

function withoutSource<T extends { source: Source }>(entry: T): Omit<T, 'source'> {
  const { source: _source, ...rest } = entry;
  return rest;
}

/** `credentials`: the credential plan a run would follow (built by the caller, which reads the files). */
export function configJson(report: SettingsReport, credentials?: CredentialPlan): object {
  const { policy: p } = report;
  const s = <T>(key: string, value: T) => scalar(report, key, value);
  const domain = (d: SourcedDomain) => ({ value: d.rule.text, source: d.source });
  const path = (r: PathRule) => ({ value: r.path, glob: r.glob, original: r.original, ...(r.create ? { create: true } : {}), source: r.source });
  const reasons: Record<string, Sourced<string>> = {};
  for (const [entry, reason] of Object.entries(p.network.deniedDomainReasons)) {
    reasons[entry] = s(`network.deniedDomainReasons[${JSON.stringify(entry)}]`, reason);
  }
  const tls = p.network.tlsTerminate;
  return {
    version: 1,
    cwd: p.cwd,
    home: p.home,
    root: p.root,
    files: report.files.map((f) => ({ scope: f.scope, path: f.path })),
    settings: {
      network: {
        allowedDomains: p.network.allowedDomains.map(domain),
        deniedDomains: p.network.deniedDomains.map(domain),
        deniedDomainReasons: reasons,
        strictAllowlist: s('network.strictAllowlist', p.network.strictAllowlist),
        allowManagedDomainsOnly: s('network.allowManagedDomainsOnly', p.network.allowManagedDomainsOnly),
        deniedResolvedAddresses: p.network.deniedResolvedAddresses,
        allowUnixSockets: p.network.allowUnixSockets,
        allowAllUnixSockets: s('network.allowAllUnixSockets', p.network.allowAllUnixSockets),
        allowLocalBinding: s('network.allowLocalBinding', p.network.allowLocalBinding),
        httpProxyPort: s('network.httpProxyPort', p.network.httpProxyPort ?? null),
        socksProxyPort: s('network.socksProxyPort', p.network.socksProxyPort ?? null),
        tlsTerminate: tls
          ? { value: { ...withoutSource(tls), excludeDomains: tls.excludeDomains.map((r) => r.text) }, source: tls.source }
          : null,
        exposePorts: p.network.exposePorts.map((e) => ({ value: exposeValue(e), ...withoutSource(e), source: e.source })),
      },
      filesystem: {
        allowWrite: p.filesystem.allowWrite.map(path),
        denyWrite: p.filesystem.denyWrite.map(path),
        denyRead: p.filesystem.denyRead.map(path),
        allowRead: p.filesystem.allowRead.map(path),
        disabled: s('filesystem.disabled', p.filesystem.disabled),
        allowManagedReadPathsOnly: s('filesystem.allowManagedReadPathsOnly', p.filesystem.allowManagedReadPathsOnly),
        currentDirectoryWritable: p.filesystem.wholeWriteList
          ? { value: 'only where allowWrite covers it', source: p.filesystem.wholeWriteList }
          : { value: true, source: { scope: 'default' } },
      },
      credentials: {
        envVars: p.credentials.envVars.map((e) => ({ value: e.name, ...withoutSource(e), ...hostTexts(e), source: e.source })),
        files: p.credentials.files.map((f) => ({ value: f.path, ...withoutSource(f), ...hostTexts(f), source: f.source })),
        awsPairs: p.credentials.awsPairs.map((a) => ({ value: withoutSource(a), source: a.source })),
        sigv4: {
          presigned: s('credentials.sigv4.presigned', p.credentials.sigv4.presigned),
          streaming: s('credentials.sigv4.streaming', p.credentials.sigv4.streaming),
          sigv4a: s('credentials.sigv4.sigv4a', p.credentials.sigv4.sigv4a),
          mint: s('credentials.sigv4.mint', p.credentials.sigv4.mint),
        },
        allowPlaintextInject: s('credentials.allowPlaintextInject', p.credentials.allowPlaintextInject),
      },
      mandatoryDenySearchDepth: s('mandatoryDenySearchDepth', p.mandatoryDenySearchDepth),
      enableWeakerNestedSandbox: s('enableWeakerNestedSandbox', p.enableWeakerNestedSandbox),
      allowNestedUserNamespaces: s('allowNestedUserNamespaces', p.allowNestedUserNamespaces),
      allowPty: s('allowPty', p.allowPty),
      allowAppleEvents: s('allowAppleEvents', p.allowAppleEvents),
      enableWeakerNetworkIsolation: s('enableWeakerNetworkIsolation', p.enableWeakerNetworkIsolation),
    },
    forwardedPorts: forwardedPorts(p.network).map((f) => ({
      value: f.rule,
      listen: f.listen.map((a) => hostPort(a, f.port)),
      source: f.source,
    })),
    ignored: p.ignored,
    warnings: [...p.warnings, ...(credentials?.warnings ?? [])],
    ...(credentials ? { credentialPlan: credentialPlanJson(credentials) } : {}),
  };
}

/** injectHosts as their canonical entries (`api.github.com`, `[::1]`, `*.example.com:8443`). */
function hostTexts(e: { injectHosts?: Array<{ text: string }> }): { injectHosts?: string[] } {
  return e.injectHosts ? { injectHosts: e.injectHosts.map((r) => r.text) } : {};
}

/** What a run would do with credentials, without a single real value or sentinel. */
function credentialPlanJson(plan: CredentialPlan): object {
  return {
    unsetEnv: plan.unsetEnv,
    setEnv: plan.setEnv.map((c) => ({ name: c.name, ...(c.pending ? { fromCommand: c.pending } : { sentinelLength: c.value!.length }) })),
    denyFiles: plan.denyFiles.map((d) => ({ path: d.rule.path, glob: d.rule.glob, ...(d.why ? { maskFallback: d.why } : {}) })),
    maskFiles: plan.maskFiles.map((m) => ({ path: m.path, masked: m.masked })),
    errors: plan.errors,
    secrets: plan.secrets.map((s) => ({
      from: s.label, inject: s.inject, injectInto: s.injectInto,
      injectHosts: s.injectHosts.map((r) => r.text),
    })),
  };
}

/** `managed /etc/srt/managed-settings.json`, `project .srt/settings.json`, `cli --allow-domain`, `default`. */
export function describeSource(source: Source, policy: Pick<Policy, 'root' | 'home'>): string {
  if (source.preset !== undefined) {
    const { preset, ...named } = source;
    return `preset ${preset} (${describeSource(named, policy)})`;
  }
  if (source.flag) return `${source.scope} ${source.flag}`;
  if (!source.file) return source.scope;
  let file = source.file;
  if ((source.scope === 'project' || source.scope === 'local') && file.startsWith(policy.root + sep)) {
    file = relative(policy.root, file);
  } else if (source.scope === 'user' && file.startsWith(policy.home + sep)) {
    file = `~/${relative(policy.home, file)}`;
  }
  return `${source.scope} ${file}`;
}

export function configText(report: SettingsReport, credentials?: CredentialPlan): string {
  const p = report.policy;
  const src = (source: Source) => describeSource(source, p);
  const rows: Array<[string, string, string]> = [];
  const scalarRow = (key: string, value: unknown) =>
    rows.push([key, value === undefined ? '(not set)' : String(value), src(report.sources[key] ?? { scope: 'default' })]);
  const list = (key: string, entries: Array<[string, Source | undefined]>) => {
    if (entries.length === 0) rows.push([key, '(none)', '']);
    entries.forEach(([value, source], i) => rows.push([i === 0 ? key : '', value, source ? src(source) : '']));
  };
  const pathValue = (r: PathRule) => `${r.path}${r.glob ? ' (glob)' : ''}${r.create ? ' (created empty when missing)' : ''}`;

  list('network.allowedDomains', p.network.allowedDomains.map((d) => [d.rule.text, d.source]));
  list('network.deniedDomains', p.network.deniedDomains.map((d) => [d.rule.text, d.source]));
  for (const [entry, reason] of Object.entries(p.network.deniedDomainReasons)) {
    const key = `network.deniedDomainReasons[${JSON.stringify(entry)}]`;
    rows.push([`network.deniedDomainReasons ${entry}`, reason, src(report.sources[key] ?? { scope: 'default' })]);
  }
  scalarRow('network.strictAllowlist', p.network.strictAllowlist);
  scalarRow('network.allowManagedDomainsOnly', p.network.allowManagedDomainsOnly);
  list('network.deniedResolvedAddresses', p.network.deniedResolvedAddresses.map((c) => [c, undefined]));
  list('network.allowUnixSockets', p.network.allowUnixSockets.map((c) => [c, undefined]));
  scalarRow('network.allowAllUnixSockets', p.network.allowAllUnixSockets);
  scalarRow('network.allowLocalBinding', p.network.allowLocalBinding);
  scalarRow('network.httpProxyPort', p.network.httpProxyPort);
  scalarRow('network.socksProxyPort', p.network.socksProxyPort);
  list('network.exposePorts', p.network.exposePorts.map((e) => [`${describeExpose(e)}${e.ifAvailable ? ' (where the host has an IPv6 loopback)' : ''}`, e.source]));
  const tls = p.network.tlsTerminate;
  if (!tls) rows.push(['network.tlsTerminate', 'off', src(report.sources['network.tlsTerminate'] ?? { scope: 'default' })]);
  else {
    rows.push(['network.tlsTerminate', tls.caCertPath ? `CA ${tls.caCertPath}` : 'on, ephemeral CA per run (key in memory only)', src(tls.source)]);
    if (tls.caKeyPath) rows.push(['network.tlsTerminate.caKeyPath', `${tls.caKeyPath} (unreadable inside the sandbox)`, src(report.sources['network.tlsTerminate.caCertPath'] ?? tls.source)]);
    list('network.tlsTerminate.extraCaCertPaths', tls.extraCaCertPaths.map((p) => [p, tls.source]));
    scalarRow('network.tlsTerminate.maxTunnels', tls.maxTunnels);
    scalarRow('network.tlsTerminate.handshakeTimeoutMs', tls.handshakeTimeoutMs);
    list('network.tlsTerminate.excludeDomains', tls.excludeDomains.map((r) => [r.text, tls.source]));
  }
  for (const key of ['allowWrite', 'denyWrite', 'denyRead', 'allowRead'] as const) {
    list(`filesystem.${key}`, p.filesystem[key].map((r) => [pathValue(r), r.source]));
  }
  scalarRow('filesystem.disabled', p.filesystem.disabled);
  scalarRow('filesystem.allowManagedReadPathsOnly', p.filesystem.allowManagedReadPathsOnly);
  const injection = (e: { mode: string; injectHosts?: Array<{ text: string }>; injectInto: string[] }) =>
    e.mode === 'mask' ? ` → ${e.injectHosts ? e.injectHosts.map((r) => r.text).join(', ') : 'every allowed single host'} (${e.injectInto.join(', ')})` : '';
  list(
    'credentials.envVars',
    p.credentials.envVars.map((e) => [`${e.name} ${e.mode}${injection(e)}${e.sourceCommand ? ` from \`${e.sourceCommand.join(' ')}\`` : ''}`, e.source]),
  );
  list('credentials.files', p.credentials.files.map((f) => [`${f.path} ${f.mode}${injection(f)}`, f.source]));
  list(
    'credentials.awsPairs',
    p.credentials.awsPairs.map((a) => [`${a.accessKeyIdVar} ${a.secretAccessKeyVar}${a.sessionTokenVar ? ` ${a.sessionTokenVar}` : ''}`, a.source]),
  );
  for (const k of ['presigned', 'streaming', 'sigv4a', 'mint'] as const) scalarRow(`credentials.sigv4.${k}`, p.credentials.sigv4[k]);
  scalarRow('credentials.allowPlaintextInject', p.credentials.allowPlaintextInject);
  for (const key of [
    'mandatoryDenySearchDepth',
    'enableWeakerNestedSandbox',
    'allowNestedUserNamespaces',
    'allowPty',
    'allowAppleEvents',
    'enableWeakerNetworkIsolation',
  ] as const) {
    scalarRow(key, p[key]);
  }

  // Values come from settings files: every cell is shown escaped, so none can forge or hide a line.
  for (const r of rows) for (let i = 0; i < 3; i++) r[i] = printable(r[i]!);
  const width0 = Math.max(...rows.map((r) => r[0].length));
  const width1 = Math.min(48, Math.max(...rows.map((r) => r[1].length)));
  const lines: string[] = [];
  lines.push('Settings files (scopes from highest precedence; within a scope the last file wins):');
  if (report.files.length === 0) lines.push('  (none; built-in defaults only)');
  for (const f of report.files) lines.push(`  ${f.scope.padEnd(8)} ${f.path}`);
  lines.push('', 'Effective policy (value, then where it came from):');
  for (const [k, v, s] of rows) lines.push(`  ${k.padEnd(width0)}  ${v.padEnd(width1)}  ${s}`.trimEnd());
  lines.push('', 'Host loopback ports forwarded into the sandbox (allowedDomains entries; each connection is decided by the proxy):');
  const forwards = forwardedPorts(p.network);
  if (forwards.length === 0) lines.push('  (none)');
  for (const f of forwards) lines.push(`  ${describeForward(f)}  (${f.rule}, ${src(f.source)})`);
  const whole = p.filesystem.wholeWriteList;
  lines.push('', whole
    ? `Always writable: a per-run temporary directory (TMPDIR). ${src(whole)} is a reference-tool file whose filesystem.allowWrite lists every writable path: the current directory is writable only where an entry covers it.`
    : 'Always writable: the current directory and a per-run temporary directory (TMPDIR).');
  if (credentials) {
    const described = describeCredentialPlan(credentials);
    lines.push('', 'Credentials in a run (real values are never shown):');
    lines.push(...(described.length ? described : ['(none)']).map((l) => `  ${l}`));
    lines.push(...credentials.warnings.map((w) => `  warning: ${w}`), ...credentials.errors.map((e) => `  error (a run would stop here): ${e}`));
  }
  lines.push('', 'Ignored:');
  if (p.ignored.length === 0) lines.push('  (nothing)');
  for (const i of p.ignored) lines.push(printable(`  ${i.key}${i.value !== undefined ? ` ${i.value}` : ''}  ${src(i.source)}: ${i.reason}`));
  return lines.join('\n') + '\n';
}
