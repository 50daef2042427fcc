// The settings document as a zod schema: the single source for validation, for `srt schema`
// (z.toJSONSchema) and for the key tables of docs/settings.md (scripts/docs.mjs), so none of
// them drifts. Defaults are metadata (`.meta({ default })`): the parsed document keeps only what
// a file says, since merging asks which scope set a key. zod is loaded on first use so that
// `srt --help` and runs without settings files do not pay for it.

import { createRequire } from 'node:module';
import type * as Zod from 'zod';
import { SettingsError, didYouMean, formatKeyPath } from './errors.js';
import { kindOf, located } from './files.js';
import { PRESET_NAMES } from './presets.js';

type ZodModule = typeof Zod;
const require = createRequire(import.meta.url);
/** This module's code is the schema: valid-cache.ts keys its entries by a hash of it. */
export const SCHEMA_MODULE_URL = import.meta.url;

/** Keys of Anthropic's sandbox-runtime settings that srt accepts but does not implement. */
export const UNSUPPORTED_REFERENCE_KEYS: Record<string, string> = {
  ignoreViolations: 'srt reports every violation',
  ripgrep: 'srt runs its own tools (rg) only from the system directories, never from a configured path',
  seccomp: 'srt uses its own sandbox helper (srt-init)',
  bwrapPath: 'srt runs its own tools (bwrap) only from the system directories, never from a configured path',
  socatPath: 'srt needs no socat: its relays are built into srt-init',
  javaAgentJarPath: 'srt does not inject a Java agent',
  windows: 'srt does not support Windows',
  git: 'srt does not inject git configuration',
  'network.mitmProxy': 'use network.tlsTerminate instead',
  'network.parentProxy': 'srt chains through its own HTTPS_PROXY/HTTP_PROXY environment instead',
  'network.allowMachLookup': 'srt does not open extra Mach services',
  'network.filterRequest': 'a callback cannot be given in a settings file',
  'filesystem.allowGitConfig': '.git/config stays write-protected',
};

function build(zod: ZodModule) {
  const { z } = zod;
  const unsupported = (key: string) =>
    z.unknown().describe(`Accepted for compatibility with @anthropic-ai/sandbox-runtime and ignored with a warning: ${UNSUPPORTED_REFERENCE_KEYS[key]}.`);

  const port = z.number().int().min(1).max(65535);
  const nonEmpty = z.string().min(1);
  // A NUL ends a path for the kernel: the rest would silently name another path.
  const pathText = nonEmpty.regex(/^[^\0]*$/, 'a path cannot contain a NUL character');
  const pathEntry = z
    .union([
      pathText,
      z.strictObject({
        path: pathText.describe('The path, taken literally (no glob expansion) when literal is true.'),
        literal: z.boolean().optional().describe('true: the path is never a glob.'),
      }),
    ])
    .describe('Absolute, `~`-relative or relative path; may contain globs (`*`, `**`, `?`, `[abc]`) unless given as `{"path": ..., "literal": true}`.');
  const pathList = z.array(pathEntry);
  const domainList = z.array(nonEmpty);
  const hostList = z.array(nonEmpty).min(1);
  const mode = z
    .enum(['mask', 'deny'])
    .describe('mask: the command sees a sentinel and the proxy puts the real value back on the way out; deny: the command never sees it.');
  const decode = z.literal('jwt').describe('Hand out a structurally valid fake JWT instead of the real one (for a variable, not together with extract).');
  const injectHosts = hostList.describe('The only hosts the real value may be sent to (domain entries: a port or `*.` allowed). Default: every allowedDomains entry that names one host (no wildcard).');
  const onExtractNoMatch = z
    .enum(['warn', 'deny', 'error'])
    .describe('When extract (or decode) finds nothing: warn and pass the value unmasked, deny it, or refuse to start.')
    .meta({ default: 'warn' });
  const extract = z
    .string()
    .superRefine((source, ctx) => {
      let re: RegExp;
      try {
        re = new RegExp(source);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `not a valid regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}` });
        return;
      }
      // Matching the empty alternative yields 1 + the number of capture groups.
      const groups = new RegExp(`${re.source}|`).exec('')!.length - 1;
      if (groups < 1) ctx.addIssue({ code: 'custom', message: 'needs at least one capture group; group 1 is the value to mask' });
    })
    .describe('Regular expression; only capture group 1 of each match is masked (at least one group is required), the rest is kept. Default: the whole value.');
  const envName = z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a variable name (letters, digits, underscore; not starting with a digit)')
    .describe('An environment variable name.');
  const claims = z.array(nonEmpty).min(1).describe('Requires decode: the top-level JWT claims replaced by sentinels; the rest of the payload stays real.');
  const injectInto = z
    .array(z.enum(['headers', 'query', 'body']))
    .min(1)
    .describe('Where the proxy puts the real value back: request header values (raw, inside Basic credentials, percent-encoded), the request target (query), the request body (opt-in: an API that stores what it is sent would publish the secret).')
    .meta({ default: ['headers'] });
  const valueSource = z
    .strictObject({
      command: z.array(nonEmpty).min(1).describe('argv of a command (no shell) whose trimmed stdout is the real value; run outside the sandbox before the command, in your home directory, 10 s timeout, never from a directory the sandbox may write; a failure stops the run.'),
    })
    .describe('Variables only: take the real value from a command instead of the environment (user, cli and managed settings only).');

  const envVar = z
    .strictObject({
      name: envName,
      mode,
      injectHosts: injectHosts.optional(),
      injectInto: injectInto.optional(),
      source: valueSource.optional(),
      decode: decode.optional(),
      maskClaims: claims.optional(),
      extract: extract.optional(),
      onExtractNoMatch: onExtractNoMatch.optional(),
    })
    .superRefine((entry, ctx) => {
      if (entry.decode !== undefined && entry.extract !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['decode'], message: 'cannot be combined with extract for an environment variable' });
      }
      if (entry.maskClaims !== undefined && entry.decode === undefined) {
        ctx.addIssue({ code: 'custom', path: ['maskClaims'], message: 'requires decode: "jwt"' });
      }
      if (entry.source !== undefined && entry.mode !== 'mask') {
        ctx.addIssue({ code: 'custom', path: ['source'], message: 'requires mode "mask" (a denied variable has no value to fetch)' });
      }
    })
    .describe('An environment variable to mask or deny.');

  const credentialFile = z
    .strictObject({
      path: pathEntry,
      mode,
      extract: extract.optional(),
      onExtractNoMatch: onExtractNoMatch.optional(),
      maskDuplicates: z.boolean().optional().describe('Also replace verbatim copies of each masked value elsewhere in the file.').meta({ default: false }),
      injectHosts: injectHosts.optional(),
      injectInto: injectInto.optional(),
      decode: decode.optional(),
      maskClaims: claims.optional(),
    })
    .superRefine((entry, ctx) => {
      if (entry.maskClaims !== undefined && entry.decode === undefined) {
        ctx.addIssue({ code: 'custom', path: ['maskClaims'], message: 'requires decode: "jwt"' });
      }
    })
    .describe('A file to mask or deny.');

  const sigv4Handling = z
    .enum(['deny', 'passthrough'])
    .describe('What becomes of a request of this form that srt cannot re-sign (it re-signs every one it can): deny (default): 403 naming the form; passthrough: forward it unchanged (AWS refuses it itself).');

  const tlsTerminate = z
    .strictObject({
      caCertPath: nonEmpty.optional().describe('A persistent CA certificate (PEM path); give caKeyPath too, or neither for an ephemeral CA per run.'),
      caKeyPath: nonEmpty.optional().describe("The persistent CA's private key (PEM path); never readable inside the sandbox."),
      excludeDomains: domainList.optional().describe('Hosts whose TLS is tunnelled untouched (mTLS, pinned certificates).').meta({ default: [] }),
      extraCaCertPaths: z.array(nonEmpty).optional().describe('Extra root certificates (PEM paths) trusted for upstream connections and given to the command.').meta({ default: [] }),
      maxTunnels: z.number().int().min(1).optional().describe('Most terminated connections at once; past it a CONNECT gets 503.').meta({ default: 256 }),
      handshakeTimeoutMs: z.number().int().min(1).optional().describe('Close a tunnel whose TLS handshake has not finished after this many ms.').meta({ default: 10000 }),
    })
    .superRefine((t, ctx) => {
      if ((t.caCertPath === undefined) !== (t.caKeyPath === undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: [t.caCertPath === undefined ? 'caCertPath' : 'caKeyPath'],
          message: 'caCertPath and caKeyPath must be given together (or neither, for an ephemeral CA)',
        });
      }
    })
    .describe('Presence turns TLS termination on (absent: off); {} uses an ephemeral CA per run. User, cli and managed settings only.');

  const network = z.strictObject({
    allowedDomains: domainList.optional().describe('Destinations the proxy lets through: `example.com`, `*.example.com`, `host:port`, `[::1]:8080`, `1.2.3.4:80`. Empty: no network.').meta({ default: [] }),
    deniedDomains: domainList.optional().describe('Always refused; checked before allowedDomains. Same grammar, plus `*` and `*:PORT`.').meta({ default: [] }),
    deniedDomainReasons: z.record(z.string(), nonEmpty).optional().describe('Reason shown when the deniedDomains entry named by the key refuses a connection (a warning when no entry matches the key).').meta({ default: {} }),
    strictAllowlist: z.boolean().optional().describe('Hosts not in allowedDomains are refused. srt has no prompt, so false does not change what it allows.').meta({ default: true }),
    allowManagedDomainsOnly: z.boolean().optional().describe('Managed scope only: only managed allowedDomains count.').meta({ default: false }),
    deniedResolvedAddresses: z.array(nonEmpty).optional().describe('Addresses (CIDR, e.g. 10.0.0.0/8; a bare IP means /32 or /128) the proxy never dials after resolving an allowed hostname.').meta({ default: [] }),
    allowUnixSockets: z.array(nonEmpty).optional().describe('macOS: Unix sockets the command may connect to. Linux has no per-path rule (see allowAllUnixSockets).').meta({ default: [] }),
    allowAllUnixSockets: z.boolean().optional().describe('Allow all Unix sockets (Linux: drops the seccomp refusal of socket(AF_UNIX)).').meta({ default: false }),
    allowLocalBinding: z.boolean().optional().describe('macOS: allow the command to bind local ports.').meta({ default: false }),
    httpProxyPort: port.optional().describe("Send the sandbox's HTTP proxy traffic to your own proxy on 127.0.0.1:PORT instead of srt's filter. Default: unset."),
    socksProxyPort: port.optional().describe("Send the sandbox's SOCKS traffic to your own proxy on 127.0.0.1:PORT instead of srt's filter. Default: unset."),
    tlsTerminate: tlsTerminate.optional(),
    exposePorts: z
      .array(z.union([port, nonEmpty]))
      .optional()
      .describe(
        'Servers the command starts, reachable from the host while the run lasts: 3000 (the host\'s localhost:3000, 127.0.0.1 and [::1] where the host has it → the sandbox\'s 127.0.0.1:3000), "8080:80" (host port 8080 → sandbox port 80), "127.0.0.1:8080:80" or "[::1]:8080:80" (one address). --expose PORT adds one for a run. Host loopback only, not srt\'s own 3128 and 1080; user, CLI and managed scope only.',
      )
      .meta({ default: [] }),
    mitmProxy: unsupported('network.mitmProxy').optional(),
    parentProxy: unsupported('network.parentProxy').optional(),
    allowMachLookup: unsupported('network.allowMachLookup').optional(),
    filterRequest: unsupported('network.filterRequest').optional(),
  }).describe('Network policy: every connection leaves through srt\'s filtering proxy.');

  const filesystem = z.strictObject({
    allowWrite: pathList.optional().describe('Writable in addition to the current directory and the per-run TMPDIR (in a file written for the reference tool, srt-settings.json: the whole writable list). An entry naming a file makes that file writable, not its directory.').meta({ default: [] }),
    denyWrite: pathList.optional().describe('Never writable; wins over allowWrite.').meta({ default: [] }),
    denyRead: pathList.optional().describe('Hidden from the command (reads fail); everything else is readable.').meta({ default: [] }),
    allowRead: pathList.optional().describe('Re-opens paths inside denyRead regions.').meta({ default: [] }),
    disabled: z.boolean().optional().describe('Skip filesystem isolation; network isolation and credential protection stay.').meta({ default: false }),
    allowManagedReadPathsOnly: z.boolean().optional().describe('Managed scope only: only managed allowRead entries count.').meta({ default: false }),
    allowGitConfig: unsupported('filesystem.allowGitConfig').optional(),
  }).describe('Filesystem policy: reads are allowed except denyRead, writes denied except the current directory, TMPDIR and allowWrite.');

  const credentials = z.strictObject({
    envVars: z.array(envVar).optional().describe('Environment variables to mask (replace with a sentinel) or deny (remove).').meta({ default: [] }),
    files: z.array(credentialFile).optional().describe('Files to mask or deny.').meta({ default: [] }),
    awsPairs: z
      .array(
        z.strictObject({
          accessKeyIdVar: envName.describe('The variable holding the access key id.'),
          secretAccessKeyVar: envName.describe('The variable holding the secret access key.'),
          sessionTokenVar: envName.optional().describe('The variable holding the session token, if any.'),
        }),
      )
      .optional()
      .describe('Variable groups whose masked values the proxy re-signs as AWS SigV4 (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN is built in).')
      .meta({ default: [] }),
    sigv4: z
      .strictObject({
        presigned: sigv4Handling.optional().describe('Presigned URLs (X-Amz-Signature in the query).').meta({ default: 'deny' }),
        streaming: sigv4Handling.optional().describe('aws-chunked streaming payloads (x-amz-content-sha256: STREAMING-…).').meta({ default: 'deny' }),
        sigv4a: sigv4Handling.optional().describe('SigV4a (AWS4-ECDSA-P256-SHA256).').meta({ default: 'deny' }),
        mint: z
          .enum(['deny', 'allow'])
          .optional()
          .describe('The answer of a call that mints credentials (sts:AssumeRole*, iam:CreateAccessKey, ecr:GetAuthorizationToken, an OAuth token endpoint, …) to a request srt re-signed or injected into, when srt recognises no credential in it to replace with sentinels: deny (default): 403 naming the call; allow: the command gets it as it is.')
          .meta({ default: 'deny' }),
      })
      .optional()
      .describe('Requests of these SigV4 forms signed with a masked AWS credential are re-signed; where one cannot be: "deny" (default) or "passthrough".'),
    allowPlaintextInject: z.boolean().optional().describe('Allow real values to be substituted into plain-HTTP requests.').meta({ default: false }),
  }).describe('Secrets the command must not see: masked (sentinels swapped back by the proxy) or denied.');

  const settings = z
    .strictObject({
      $schema: z.string().optional().describe('Ignored; for editors.'),
      presets: z
        .array(z.enum(PRESET_NAMES as [string, ...string[]]))
        .optional()
        .describe('Toolchain presets (srt help presets): each adds its registries to allowedDomains and its cache directories to allowWrite. User, CLI and managed settings only.')
        .meta({ default: [] }),
      network: network.optional(),
      filesystem: filesystem.optional(),
      credentials: credentials.optional(),
      mandatoryDenySearchDepth: z.number().int().min(1).max(10).optional().describe('How many directory levels below each writable root are searched for protected files.').meta({ default: 3 }),
      enableWeakerNestedSandbox: z.boolean().optional().describe('Linux, unprivileged containers: bind the existing /proc. Weaker.').meta({ default: false }),
      allowNestedUserNamespaces: z.boolean().optional().describe('Linux: let the command create user and mount namespaces (turns Landlock and the supervisor off).').meta({ default: false }),
      allowPty: z.boolean().optional().describe('macOS: allow new pseudo-terminals (every `/dev/ttys*`).').meta({ default: false }),
      allowAppleEvents: z.boolean().optional().describe('macOS: allow sending Apple Events (they can script other applications).').meta({ default: false }),
      enableWeakerNetworkIsolation: z.boolean().optional().describe('macOS: allow trustd, for Go and Swift certificate checks (which may fetch OCSP/CRL data themselves).').meta({ default: false }),
      ignoreViolations: unsupported('ignoreViolations').optional(),
      ripgrep: unsupported('ripgrep').optional(),
      seccomp: unsupported('seccomp').optional(),
      bwrapPath: unsupported('bwrapPath').optional(),
      socatPath: unsupported('socatPath').optional(),
      javaAgentJarPath: unsupported('javaAgentJarPath').optional(),
      windows: unsupported('windows').optional(),
      git: unsupported('git').optional(),
    })
    .describe('srt settings.');
  // A larger tool's settings file may hold the document under `sandbox`; its other keys are not srt's.
  const named = settings.meta({ id: 'settings' });
  const document = z
    .union([named, z.looseObject({ sandbox: named })])
    .describe('srt settings, either directly or wrapped as {"sandbox": {...}} in a larger settings file.');
  return { z, settings, document };
}

type Built = ReturnType<typeof build>;
export type SettingsDocument = Zod.infer<Built['settings']>;
export type PathEntry = NonNullable<NonNullable<SettingsDocument['filesystem']>['allowWrite']>[number];

let built: Built | undefined;
function schema(): Built {
  built ??= build(require('zod') as ZodModule);
  return built;
}

/** The JSON Schema printed by `srt schema`. */
export function settingsJsonSchema(): object {
  const { z, document } = schema();
  return z.toJSONSchema(document, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12' });
}

type Issue = Zod.core.$ZodIssue;

function valueAt(doc: unknown, path: ReadonlyArray<PropertyKey>): unknown {
  let v: unknown = doc;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

/** Known keys of the object schema reached by `path`, for did-you-mean. */
function knownKeys(root: Zod.ZodType, path: ReadonlyArray<PropertyKey>): string[] {
  let node: unknown = root;
  const unwrap = (n: unknown): unknown => {
    for (let guard = 0; guard < 10; guard++) {
      const def = (n as { _zod: { def: Record<string, unknown> } })._zod.def;
      if (def.type === 'optional' || def.type === 'default' || def.type === 'nullable') n = def.innerType;
      else if (def.type === 'pipe') n = def.in;
      else if (def.type === 'union') n = (def.options as unknown[]).find((o) => (o as { _zod: { def: { type: string } } })._zod.def.type === 'object') ?? n;
      else return n;
    }
    return n;
  };
  for (const part of path) {
    node = unwrap(node);
    const def = (node as { _zod: { def: Record<string, unknown> } })._zod.def;
    if (def.type === 'array' && typeof part === 'number') node = def.element;
    else if (def.type === 'object') node = (def.shape as Record<string, unknown>)[String(part)];
    else return [];
    if (node === undefined) return [];
  }
  node = unwrap(node);
  const def = (node as { _zod: { def: Record<string, unknown> } })._zod.def;
  return def.type === 'object' ? Object.keys(def.shape as object).filter((k) => k !== '$schema') : [];
}

function messagesFor(issue: Issue, doc: unknown, base: PropertyKey[], root: Zod.ZodType): Array<[PropertyKey[], string]> {
  const path = [...base, ...(issue.path as PropertyKey[])];
  const value = valueAt(doc, path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys.map((key) => {
        const guess = didYouMean(key, knownKeys(root, path));
        if (guess) return [[...path, key], `unknown key (did you mean ${guess}?)`];
        // A real key in the wrong place: `allowedDomains` at the top instead of under network.
        const home = [[], ['network'], ['filesystem'], ['credentials'], ['network', 'tlsTerminate']]
          .find((section) => formatKeyPath(section) !== formatKeyPath(path) && knownKeys(root, section).includes(key));
        if (home) return [[...path, key], `unknown key here; ${key} belongs ${home.length ? `under ${formatKeyPath(home)} (${formatKeyPath([...home, key])})` : 'at the top level'}`];
        return [[...path, key], 'unknown key'];
      });
    case 'invalid_type': {
      const expected = issue.expected === 'int' ? 'an integer' : issue.expected === 'object' ? 'an object' : issue.expected === 'array' ? 'a list' : `a ${issue.expected}`;
      const got = issue.expected === 'int' && typeof value === 'number' ? String(value) : kindOf(value);
      return [[path, `expected ${expected}, got ${got}`]];
    }
    case 'too_big':
      return [[path, issue.origin === 'number' ? `must be at most ${issue.maximum}, got ${String(value)}` : issue.message]];
    case 'too_small':
      if (issue.origin === 'number') return [[path, `must be at least ${issue.minimum}, got ${String(value)}`]];
      return [[path, 'must not be empty']];
    case 'invalid_value':
      const names = issue.values.map((v) => JSON.stringify(v));
      const expected = names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names.join('');
      return [[path, `expected ${expected}, got ${JSON.stringify(value) ?? 'nothing'}`]];
    case 'invalid_union': {
      // Report the branch whose type matched (e.g. the object form of a path entry) if any.
      const typed = issue.errors.find((branch) => !branch.every((i) => i.code === 'invalid_type' && i.path.length === 0));
      if (typed) return typed.flatMap((i) => messagesFor(i, doc, path, root));
      return [[path, `expected a path string or {"path": ..., "literal": true}, got ${kindOf(value)}`]];
    }
    default:
      return [[path, issue.message]];
  }
}

/** Validate one settings object; every problem becomes a `FILE:LINE: key.path: message` line, in file order. */
export function validateSettings(doc: unknown, file: string): SettingsDocument {
  const { settings } = schema();
  const result = settings.safeParse(doc);
  if (result.success) return result.data;
  const lines = result.error.issues
    .flatMap((issue) => messagesFor(issue, doc, [], settings))
    .map(([path, message]) => `${file}: ${formatKeyPath(path)}: ${message}`);
  throw new SettingsError(located(file, [...new Set(lines)]));
}
