// The environment a sandboxed command needs to reach the network through srt's relays
// (SPEC §4): inside the sandbox srt-init's relay listens on 127.0.0.1:<httpPort> (HTTP
// proxy) and 127.0.0.1:<socksPort> (SOCKS5) and passes connections to the proxy's Unix sockets
// outside.

import { shellQuote } from '../shell.js';

export { NODE_PRELOAD_PATH } from '../paths.js';

export interface SandboxProxyEnvOptions {
  httpPort: number;
  socksPort: number;
  /** Absolute path of node-preload.cjs (NODE_PRELOAD_PATH); must be readable inside the sandbox. */
  nodePreloadPath: string;
  /** srt-init (readable inside): its `--connect` mode is ssh's ProxyCommand. */
  helperPath?: string;
  /** ssh's ProxyCommand instead of the helper's (`%h %p` are ssh's; macOS has no helper: nc). */
  sshProxyCommand?: string;
  /** An executable inside the sandbox that runs `helper --connect` for `HOST PORT` (git runs
   *  GIT_PROXY_COMMAND without a shell, so it must be one program: see gitProxyScript). */
  gitProxyCommand?: string;
  /** The command's environment before srt's additions: NODE_OPTIONS, JAVA_TOOL_OPTIONS and
   *  GIT_CONFIG_* are extended, not replaced. */
  baseEnv?: Record<string, string | undefined>;
  /** TLS termination is on: the files that make the command trust srt's CA (trust.ts). */
  trust?: { bundlePath: string; javaTrustStorePath: string };
}

/** Every variable SPEC §7 names for a CA bundle file (OpenSSL, Node, Python requests, curl, git,
 *  the AWS CLI and SDKs, pip, cargo, deno). */
export const TRUST_BUNDLE_VARS = [
  'SSL_CERT_FILE',
  'NODE_EXTRA_CA_CERTS',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'GIT_SSL_CAINFO',
  'AWS_CA_BUNDLE',
  'PIP_CERT',
  // npm builds its own CA list and ignores NODE_EXTRA_CA_CERTS (found by srt doctor --tools).
  'npm_config_cafile',
  'CARGO_HTTP_CAINFO',
  'DENO_CERT',
] as const;

/** A JVM option value: JAVA_TOOL_OPTIONS splits on whitespace unless the argument is quoted. */
function jvmArg(arg: string): string {
  return /\s/.test(arg) ? `"${arg}"` : arg;
}

/** The GIT_PROXY_COMMAND program: the helper's CONNECT client through the HTTP relay. */
export function gitProxyScript(helperPath: string, httpPort: number): string {
  return `#!/bin/sh\nexec ${shellQuote(helperPath)} --connect 127.0.0.1:${httpPort} "$1" "$2"\n`;
}

/** Quote a value for NODE_OPTIONS (which understands double quotes with backslash escapes). */
function nodeOptionArg(value: string): string {
  return /[\s"\\]/.test(value) ? `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"` : value;
}

/**
 * Variables to set for the sandboxed command (merge over its environment). Every common
 * client is pointed at the relays: curl/wget/pip/npm/git/python (HTTP(S)_PROXY, ALL_PROXY),
 * ssh via git (GIT_SSH_COMMAND with the helper's HTTP CONNECT client as ProxyCommand), gRPC, rsync,
 * docker, gcloud, git's own http.proxy (overrides a user ~/.gitconfig proxy), Node
 * (preload for fetch and http/https; NODE_USE_ENV_PROXY for Node versions that support it) and
 * Java (proxy system properties in JAVA_TOOL_OPTIONS). With TLS termination, every CA-bundle
 * variable and Java's trust store point at the run's trust files.
 */
export function sandboxProxyEnv(opts: SandboxProxyEnvOptions): Record<string, string> {
  const base = opts.baseEnv ?? {};
  const http = `http://127.0.0.1:${opts.httpPort}`;
  const socks = `socks5h://127.0.0.1:${opts.socksPort}`;
  const noProxy = 'localhost,127.0.0.1,::1';
  const proxyCommand = opts.sshProxyCommand ?? (opts.helperPath ? `${shellQuote(opts.helperPath)} --connect 127.0.0.1:${opts.httpPort} %h %p` : undefined);
  const env: Record<string, string> = {
    HTTP_PROXY: http,
    HTTPS_PROXY: http,
    ALL_PROXY: socks,
    NO_PROXY: noProxy,
    http_proxy: http,
    https_proxy: http,
    all_proxy: socks,
    no_proxy: noProxy,
    ...(proxyCommand ? { GIT_SSH_COMMAND: `ssh -o ${shellQuote(`ProxyCommand=${proxyCommand}`)}` } : {}),
    GRPC_PROXY: http,
    grpc_proxy: http,
    RSYNC_PROXY: `127.0.0.1:${opts.httpPort}`,
    DOCKER_HTTP_PROXY: http,
    DOCKER_HTTPS_PROXY: http,
    CLOUDSDK_PROXY_TYPE: 'http',
    CLOUDSDK_PROXY_ADDRESS: '127.0.0.1',
    CLOUDSDK_PROXY_PORT: String(opts.httpPort),
    NODE_USE_ENV_PROXY: '1',
  };
  // git:// URLs: git runs this with the host and port as arguments.
  if (opts.gitProxyCommand) env.GIT_PROXY_COMMAND = opts.gitProxyCommand;

  const existingCount = Number(base.GIT_CONFIG_COUNT ?? 0);
  const n = Number.isInteger(existingCount) && existingCount >= 0 ? existingCount : 0;
  env.GIT_CONFIG_COUNT = String(n + 1);
  env[`GIT_CONFIG_KEY_${n}`] = 'http.proxy';
  env[`GIT_CONFIG_VALUE_${n}`] = http;

  const require = `--require ${nodeOptionArg(opts.nodePreloadPath)}`;
  const existing = base.NODE_OPTIONS?.trim();
  env.NODE_OPTIONS = existing ? `${existing} ${require}` : require;

  // Java reads no proxy variable: system properties, appended so they win over earlier ones.
  // Java's own default keeps loopback (localhost, 127.*, [::1]) direct, as NO_PROXY does.
  const java = [`-Dhttp.proxyHost=127.0.0.1`, `-Dhttp.proxyPort=${opts.httpPort}`, `-Dhttps.proxyHost=127.0.0.1`, `-Dhttps.proxyPort=${opts.httpPort}`];
  if (opts.trust) {
    for (const name of TRUST_BUNDLE_VARS) env[name] = opts.trust.bundlePath;
    java.push(jvmArg(`-Djavax.net.ssl.trustStore=${opts.trust.javaTrustStorePath}`), '-Djavax.net.ssl.trustStoreType=PKCS12');
  }
  const existingJava = base.JAVA_TOOL_OPTIONS?.trim();
  env.JAVA_TOOL_OPTIONS = [...(existingJava ? [existingJava] : []), ...java].join(' ');
  return env;
}
