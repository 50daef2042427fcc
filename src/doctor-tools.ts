// `srt doctor --tools` (SPEC §8): each common client that is installed is run inside a
// throwaway sandbox with the current policy against a probe server doctor starts on the host's
// loopback and allows for the check (an IP-literal CLI entry, as a user would write it). A tool
// works when the probe saw its request: the sandbox has no route out except srt's proxy, so a
// request that arrived went through it, and with TLS termination on it also trusted srt's CA
// (the probe is only reachable through srt's leaf). The run's audit log says whether a tool that
// failed reached the proxy at all. Loaded only for --tools.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from './audit.js';
import type { Check } from './doctor.js';
import { findOnPath } from './platform/deps.js';
import { PACKAGE_ROOT } from './paths.js';
import { CertificateAuthority } from './proxy/ca.js';
import type { LoadOptions } from './settings/index.js';

/** 127.0.0.1 is in the sandbox's NO_PROXY; the rest of 127/8 is the host's loopback too. */
const PROBE_HOST = '127.0.0.2';
/** Bounds one tool's sandbox run (a JDK compiling its probe takes a few seconds). */
const RUN_TIMEOUT_MS = 60_000;

interface Probe {
  /** Executable looked up on PATH. */
  bin: string;
  name: string;
  /** Shell script run inside; `$URL` is this tool's probe URL, `$SRT_DOCTOR_SSH_PORT` the ssh probe's port. */
  script: string;
  /** Why a tool that ignores the proxy does, and what to change. */
  proxyFix: string;
  /** What a tool that reached the proxy but failed TLS reads its CA from. */
  caFix: string;
  /** The ssh probe (a TCP banner), not the HTTP one. */
  ssh?: true;
  /** Probed by name: npm cannot verify an IP-literal host through a proxy (it checks the
   *  certificate against "localhost"), so its probe is https://localhost:PORT with NO_PROXY cleared. */
  byName?: true;
}

const JAVA_PROBE = 'public class Probe { public static void main(String[] a) throws Exception { try (var in = new java.net.URL(a[0]).openStream()) { in.readAllBytes(); } } }';

const PROBES: Probe[] = [
  {
    bin: 'curl', name: 'curl',
    script: 'curl -sS --max-time 20 -o /dev/null "$SRT_DOCTOR_URL"',
    proxyFix: 'a ~/.curlrc "proxy" or "noproxy" line overrides HTTPS_PROXY: remove it',
    caFix: 'a ~/.curlrc "cacert" or "capath" line overrides CURL_CA_BUNDLE: remove it',
  },
  {
    bin: 'git', name: 'git',
    script: 'GIT_TERMINAL_PROMPT=0 git -c credential.helper= ls-remote "$SRT_DOCTOR_URL/probe.git"',
    proxyFix: 'a git config "http.proxy" or "http.<url>.proxy" in the repository wins over srt\'s: git config --unset http.proxy',
    caFix: 'a git config "http.sslCAInfo"/"http.sslCAPath" overrides GIT_SSL_CAINFO: unset it',
  },
  {
    bin: 'node', name: 'node',
    script: 'node -e \'fetch(process.argv[1]).then((r) => r.text()).catch((e) => { console.error(e.cause ?? e); process.exit(1); })\' "$SRT_DOCTOR_URL"',
    proxyFix: 'NODE_OPTIONS lost srt\'s --require preload (a wrapper resetting NODE_OPTIONS?): keep what srt sets',
    caFix: 'NODE_EXTRA_CA_CERTS carries srt\'s CA: do not unset it (or pass --use-openssl-ca with SSL_CERT_FILE kept)',
  },
  {
    bin: 'python3', name: 'python3',
    script: 'python3 -c \'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=20).read()\' "$SRT_DOCTOR_URL"',
    proxyFix: 'urllib reads HTTPS_PROXY/https_proxy: a program that builds its own opener without ProxyHandler ignores them',
    caFix: 'Python reads SSL_CERT_FILE; certifi-based clients (requests) read REQUESTS_CA_BUNDLE — srt sets both: do not unset them',
  },
  {
    bin: 'pip', name: 'pip',
    script: 'pip download -q --no-deps --no-cache-dir --disable-pip-version-check --retries 0 --timeout 20 -d "${TMPDIR:-/tmp}/srt-doctor-pip" --index-url "$SRT_DOCTOR_URL/simple" srt-doctor-probe',
    proxyFix: 'a pip.conf "proxy" setting overrides HTTPS_PROXY: pip config unset global.proxy',
    caFix: 'a pip.conf "cert" setting overrides PIP_CERT: pip config unset global.cert',
  },
  {
    bin: 'npm', name: 'npm', byName: true,
    script: 'NO_PROXY= no_proxy= npm_config_cache="${TMPDIR:-/tmp}/srt-doctor-npm" npm view --fetch-retries=0 --fetch-timeout=20000 --registry "$SRT_DOCTOR_URL/" srt-doctor-probe',
    proxyFix: 'an .npmrc "proxy", "https-proxy" or "noproxy" setting overrides srt\'s: npm config delete https-proxy',
    caFix: 'an .npmrc "cafile" or "ca" setting replaces the CA list: npm config delete cafile',
  },
  {
    // Java sends every loopback address direct unless http.nonProxyHosts is empty: the probe
    // (on 127.0.0.2) clears it on the command line, which wins over srt's JAVA_TOOL_OPTIONS.
    bin: 'java', name: 'java',
    script: `d="\${TMPDIR:-/tmp}/srt-doctor-java"; mkdir -p "$d" && printf '%s\\n' '${JAVA_PROBE}' > "$d/Probe.java" && java -Dhttp.nonProxyHosts= "$d/Probe.java" "$SRT_DOCTOR_URL"`,
    proxyFix: 'JAVA_TOOL_OPTIONS carries -Dhttps.proxyHost/-Dhttps.proxyPort: a launcher that resets it (or -Djava.net.useSystemProxies) loses them',
    caFix: 'JAVA_TOOL_OPTIONS carries -Djavax.net.ssl.trustStore: a launcher that sets its own trust store loses srt\'s CA',
  },
  {
    bin: 'go', name: 'go',
    script: 'GOPROXY="$SRT_DOCTOR_URL" GOSUMDB=off GOFLAGS=-mod=mod GOPATH="${TMPDIR:-/tmp}/srt-doctor-go" GOCACHE="${TMPDIR:-/tmp}/srt-doctor-go/cache" go mod download -json example.com/srt-doctor-probe@v1.0.0',
    proxyFix: 'Go reads HTTPS_PROXY; a GOPROXY=direct or GOPRIVATE fetch runs git, whose proxy comes from srt\'s git config',
    caFix: 'Go reads SSL_CERT_FILE, which srt sets: do not unset it',
  },
  {
    bin: 'ssh', name: 'ssh (git)', ssh: true,
    // git's ssh transport runs GIT_SSH_COMMAND (srt's ProxyCommand); without git, the recipe in docs/network.md.
    script: 'opts="-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=20"; '
      + 'if command -v git >/dev/null; then GIT_SSH_COMMAND="$GIT_SSH_COMMAND $opts" GIT_TERMINAL_PROMPT=0 git ls-remote "ssh://probe@$SRT_DOCTOR_HOST:$SRT_DOCTOR_SSH_PORT/probe.git"; '
      + 'else eval "$GIT_SSH_COMMAND $opts -p $SRT_DOCTOR_SSH_PORT probe@$SRT_DOCTOR_HOST true"; fi',
    proxyFix: 'plain ssh needs srt\'s ProxyCommand: eval "$GIT_SSH_COMMAND user@host"; a core.sshCommand or GIT_SSH set in the repository replaces it',
    caFix: '',
  },
];

interface ProbeServers {
  /** A tool's probe URL (its name is the first path segment). */
  url: (p: Probe) => string;
  /** `host:port` as srt's audit log names a probe's destination. */
  target: (p: Probe) => string;
  /** The allowedDomains entries that let the probes through. */
  allow: string[];
  /** Tools whose request the probes saw. */
  seen: Set<string>;
  close: () => Promise<void>;
}

type Leaf = { certPem: string; keyPem: string };

async function listen(server: net.Server, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  return (server.address() as net.AddressInfo).port;
}

/** The HTTP(S) probes answer 404 to everything (each client then fails its own way) and record
 *  the first path segment, the tool's name; the ssh probe records a client's SSH banner. */
async function startProbes(leaves: { ip: Leaf; name: Leaf } | null): Promise<ProbeServers> {
  const seen = new Set<string>();
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const tool = /^\/([a-z0-9-]+)/.exec(req.url ?? '')?.[1];
    if (tool) seen.add(tool);
    res.writeHead(404, { 'content-type': 'text/plain' }).end('srt doctor probe\n');
  };
  const web = (leaf: Leaf | undefined) => (leaf ? https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, onRequest) : http.createServer(onRequest));
  const byIp = web(leaves?.ip);
  const byName = web(leaves?.name);
  const sockets = new Set<net.Socket>();
  const ssh = net.createServer((sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => sock.destroy());
    sock.write('SSH-2.0-srt-doctor\r\n');
    let got = '';
    sock.on('data', (d) => {
      got += d.toString('latin1');
      if (got.startsWith('SSH-2.0-')) seen.add('ssh');
      if (got.includes('\n') || got.length > 255) sock.destroy();
    });
  });
  const servers = [byIp, byName, ssh];
  const ipPort = await listen(byIp, PROBE_HOST);
  // `localhost:PORT` names the host's loopback (127.0.0.1) for srt's proxy.
  const namePort = await listen(byName, '127.0.0.1');
  const sshPort = await listen(ssh, PROBE_HOST);
  const scheme = leaves ? 'https' : 'http';
  const target = (p: Probe) => (p.ssh ? `${PROBE_HOST}:${sshPort}` : p.byName ? `localhost:${namePort}` : `${PROBE_HOST}:${ipPort}`);
  return {
    url: (p) => `${scheme}://${target(p)}/${p.bin}`,
    target,
    allow: [`${PROBE_HOST}:${ipPort}`, `localhost:${namePort}`, `${PROBE_HOST}:${sshPort}`],
    seen,
    close: async () => {
      for (const s of sockets) s.destroy();
      byIp.closeAllConnections();
      byName.closeAllConnections();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}

function cliFlags(load: LoadOptions): string[] {
  const flags = load.flags;
  return [
    ...(load.settingsFiles ?? []).flatMap((f) => ['--settings', f]),
    ...(flags?.allowDomain ?? []).flatMap((d) => ['--allow-domain', d]),
    ...(flags?.allowWrite ?? []).flatMap((p) => ['--allow-write', p]),
    ...(flags?.denyRead ?? []).flatMap((p) => ['--deny-read', p]),
  ];
}

interface ToolRun { code: number | null; stderr: string; events: AuditEvent[] }

/** One tool in its own `srt` run (the launcher a user runs), with an audit log to read back. */
async function runTool(flags: string[], script: string, env: NodeJS.ProcessEnv, cwd: string, logPath: string): Promise<ToolRun> {
  const child = spawn(join(PACKAGE_ROOT, 'bin', 'srt'), [...flags, '--log', logPath, '--', 'sh', '-c', script], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr = (stderr + d).slice(-4000); });
  const timer = setTimeout(() => child.kill('SIGTERM'), RUN_TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => {
    child.on('error', (e) => { stderr += String(e); resolve(null); });
    child.on('close', (c) => resolve(c));
  });
  clearTimeout(timer);
  let events: AuditEvent[] = [];
  try {
    events = readFileSync(logPath, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as AuditEvent);
  } catch { /* no log: srt did not get as far as the proxy */ }
  return { code, stderr, events };
}

/** The tool's last words on stderr (srt's own warnings are not about the tool). */
function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('srt: warning:'));
  return (lines.at(-1) ?? '').slice(0, 200);
}

/** Whether the srt run itself failed (125: srt could not build the sandbox) — not the tool. */
function srtFailure(run: ToolRun): string | null {
  if (run.code === 125) return run.stderr.split('\n').find((l) => l.startsWith('srt: ') && !l.startsWith('srt: warning:')) ?? lastLine(run.stderr);
  if (run.code === null) return `the sandbox run did not finish within ${RUN_TIMEOUT_MS / 1000} s`;
  return null;
}

function verdict(p: Probe, target: string, run: ToolRun, worked: boolean, tls: boolean): Check {
  const id = `tools.${p.bin}`;
  const title = `tool ${p.name}`;
  const viaProxy = run.events.some((e) => e.kind === 'network' && e.target === target && e.verdict === 'allow' && e.client !== 'forward');
  if (worked && viaProxy) {
    return { id, title, status: 'ok', detail: `reached the probe through srt's proxy${tls && !p.ssh ? ', trusting srt\'s CA' : ''}` };
  }
  const failure = srtFailure(run);
  if (failure) return { id, title, status: 'error', detail: `srt could not run it: ${failure}`, fix: 'srt doctor (without --tools) shows why sandboxes cannot start' };
  const decisions = run.events.filter((e): e is Extract<AuditEvent, { kind: 'network' }> => e.kind === 'network' && e.target === target);
  const denied = decisions.find((e) => e.verdict === 'deny');
  if (denied) {
    return { id, title, status: 'warn', detail: `the policy refused the probe (${denied.reason ?? 'denied'}), so the tool could not be tried`, fix: 'a managed or deny rule covers 127.0.0.2; the other checks still apply' };
  }
  const why = lastLine(run.stderr);
  if (!decisions.some((e) => e.client !== 'forward')) {
    return {
      id, title, status: 'warn',
      detail: decisions.length
        // An allowed loopback literal is also forwarded as a local port (SPEC §4): a raw connection reaches it, nothing else would.
        ? 'connects directly, not through srt\'s proxy (it reached the probe only as a forwarded local port; any other host is unreachable for it)'
        : `does not use srt's proxy (it never reached it)${why ? `: ${why}` : ''}`,
      fix: p.proxyFix,
    };
  }
  if (tls && !p.ssh) {
    return { id, title, status: 'warn', detail: `reached srt's proxy but not the probe: it does not trust srt's CA${why ? ` (${why})` : ''}`, fix: p.caFix };
  }
  return { id, title, status: 'warn', detail: `reached srt's proxy but not the probe${why ? `: ${why}` : ''}`, fix: 'run the command with srt --debug to see what the proxy did' };
}

/** The `--tools` checks: one per installed client. Never changes anything outside a temp dir. */
export async function toolChecks(load: LoadOptions, terminate: boolean): Promise<Check[]> {
  const installed = PROBES.filter((p) => findOnPath(p.bin, process.env.PATH ?? '') !== null);
  if (installed.length === 0) return [{ id: 'tools', title: 'tools', status: 'ok', detail: 'none of curl, git, node, python3, pip, npm, java, go, ssh is installed' }];

  const dir = mkdtempSync(join(tmpdir(), 'srt-doctor-tools-'));
  let leaves: { ip: Leaf; name: Leaf } | null = null;
  const extraSettings: string[] = [];
  if (terminate) {
    // srt verifies upstreams: the probe's certificate comes from a throwaway CA this run trusts.
    const ca = CertificateAuthority.ephemeral();
    leaves = { ip: ca.mint({ host: PROBE_HOST, ip: 4 }), name: ca.mint({ host: 'localhost' }) };
    const caPath = join(dir, 'probe-ca.pem');
    writeFileSync(caPath, ca.certPem);
    const settings = join(dir, 'probe-settings.json');
    writeFileSync(settings, JSON.stringify({ network: { tlsTerminate: { extraCaCertPaths: [caPath] } } }));
    extraSettings.push('--settings', settings);
  }
  const probes = await startProbes(leaves);
  try {
    const base = [...cliFlags(load), ...extraSettings, ...probes.allow.flatMap((d) => ['--allow-domain', d])];
    const results: Check[] = new Array(installed.length);
    let next = 0;
    // Two at a time: each is a whole sandbox plus a client (a JDK compiling its probe).
    const worker = async () => {
      for (let i = next++; i < installed.length; i = next++) {
        const p = installed[i]!;
        const target = probes.target(p);
        const env = { ...process.env, SRT_DOCTOR_URL: probes.url(p), SRT_DOCTOR_HOST: PROBE_HOST, SRT_DOCTOR_SSH_PORT: target.split(':')[1] };
        const run = await runTool(base, p.script, env, load.cwd, join(dir, `${p.bin}.log`));
        results[i] = verdict(p, target, run, probes.seen.has(p.ssh ? 'ssh' : p.bin), terminate);
      }
    };
    await Promise.all([worker(), worker()]);
    return results;
  } finally {
    await probes.close();
      rmSync(dir, { recursive: true, force: true });
  }
}
