// The settings document (SPEC §2.2) as a zod schema: the single source for validation and for
// `srt schema` (z.toJSONSchema), so the two never drift. zod is loaded on first use so that
// `srt --help` and runs without settings files do not pay for it.

import { createRequire } from 'node:module';
import type * as Zod from 'zod';
import { SettingsError, didYouMean, formatKeyPath } from './errors.js';
import { kindOf } from './files.js';

type ZodModule = typeof Zod;
const require = createRequire(import.meta.url);

/** Keys of Anthropic's sandbox-runtime settings that srt accepts but does not implement. */
export const UNSUPPORTED_REFERENCE_KEYS: Record<string, string> = {
  ignoreViolations: 'srt reports every violation',
  ripgrep: 'srt always runs `rg` from PATH',
  seccomp: 'srt uses its own seccomp helper',
  bwrapPath: 'srt runs `bwrap` from PATH',
  socatPath: 'srt runs `socat` from PATH',
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
  const pathEntry = z
    .union([
      nonEmpty,
      z.strictObject({
        path: nonEmpty.describe('The path, taken literally (no glob expansion) when literal is true.'),
        literal: z.boolean().optional(),
      }),
    ])
    .describe('Absolute, `~`-relative or relative path; may contain globs (*, **, ?, [abc]) unless given as {"path": ..., "literal": true}.');
  const pathList = z.array(pathEntry);
  const domainList = z.array(nonEmpty);
  const hostList = z.array(nonEmpty).min(1);
  const mode = z.enum(['mask', 'deny']);
  const onExtractNoMatch = z
    .enum(['warn', 'deny', 'error'])
    .describe('When extract (or decode) finds nothing: warn and pass unmasked (default), deny, or refuse to start.');
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
    .describe('Regular expression; capture group 1 of each match is masked, the rest is kept.');
  const envName = z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a variable name (letters, digits, underscore; not starting with a digit)');
  const claims = z.array(nonEmpty).min(1).describe('Top-level JWT claims replaced by sentinels; the rest of the payload stays real.');

  const envVar = z
    .strictObject({
      name: envName,
      mode,
      injectHosts: hostList.optional().describe('Hosts the real value may be sent to (default: every allowed domain).'),
      decode: z.literal('jwt').optional(),
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
    });

  const credentialFile = z
    .strictObject({
      path: pathEntry,
      mode,
      extract: extract.optional(),
      onExtractNoMatch: onExtractNoMatch.optional(),
      maskDuplicates: z.boolean().optional().describe('Also replace verbatim copies of each masked value elsewhere in the file.'),
      injectHosts: hostList.optional().describe('Hosts the real value may be sent to (default: every allowed domain).'),
      decode: z.literal('jwt').optional(),
      maskClaims: claims.optional(),
    })
    .superRefine((entry, ctx) => {
      if (entry.maskClaims !== undefined && entry.decode === undefined) {
        ctx.addIssue({ code: 'custom', path: ['maskClaims'], message: 'requires decode: "jwt"' });
      }
    });

  const sigv4Handling = z.enum(['deny', 'passthrough']);

  const tlsTerminate = z
    .strictObject({
      caCertPath: nonEmpty.optional(),
      caKeyPath: nonEmpty.optional(),
      excludeDomains: domainList.optional().describe('Hosts whose TLS is tunnelled untouched (mTLS, pinned certificates).'),
      extraCaCertPaths: z.array(nonEmpty).optional(),
      maxTunnels: z.number().int().min(1).optional().describe('Default 256.'),
      handshakeTimeoutMs: z.number().int().min(1).optional().describe('Default 10000.'),
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
    .describe('Presence turns TLS termination on; {} uses an ephemeral CA per run.');

  const network = z.strictObject({
    allowedDomains: domainList.optional().describe('`example.com`, `*.example.com`, `host:port`, `[::1]:8080`, `1.2.3.4:80`.'),
    deniedDomains: domainList.optional(),
    deniedDomainReasons: z.record(z.string(), nonEmpty).optional().describe('Reason shown when the deniedDomains entry named by the key refuses a connection.'),
    strictAllowlist: z.boolean().optional().describe('Default true: hosts not in allowedDomains are refused.'),
    allowManagedDomainsOnly: z.boolean().optional().describe('Managed scope only: only managed allowedDomains count.'),
    deniedResolvedAddresses: z.array(nonEmpty).optional().describe('CIDRs the proxy never dials.'),
    allowUnixSockets: z.array(nonEmpty).optional(),
    allowAllUnixSockets: z.boolean().optional(),
    allowLocalBinding: z.boolean().optional(),
    httpProxyPort: port.optional().describe("Use the user's own HTTP proxy on this loopback port instead of srt's."),
    socksProxyPort: port.optional().describe("Use the user's own SOCKS proxy on this loopback port instead of srt's."),
    tlsTerminate: tlsTerminate.optional(),
    mitmProxy: unsupported('network.mitmProxy').optional(),
    parentProxy: unsupported('network.parentProxy').optional(),
    allowMachLookup: unsupported('network.allowMachLookup').optional(),
    filterRequest: unsupported('network.filterRequest').optional(),
  });

  const filesystem = z.strictObject({
    allowWrite: pathList.optional(),
    denyWrite: pathList.optional(),
    denyRead: pathList.optional(),
    allowRead: pathList.optional().describe('Re-opens paths inside denyRead regions.'),
    disabled: z.boolean().optional().describe('Skip filesystem isolation; network isolation and credential protection stay.'),
    allowManagedReadPathsOnly: z.boolean().optional().describe('Managed scope only: only managed allowRead entries count.'),
    allowGitConfig: unsupported('filesystem.allowGitConfig').optional(),
  });

  const credentials = z.strictObject({
    envVars: z.array(envVar).optional(),
    files: z.array(credentialFile).optional(),
    awsPairs: z
      .array(
        z.strictObject({
          accessKeyIdVar: envName,
          secretAccessKeyVar: envName,
          sessionTokenVar: envName.optional(),
        }),
      )
      .optional(),
    sigv4: z
      .strictObject({ presigned: sigv4Handling.optional(), streaming: sigv4Handling.optional(), sigv4a: sigv4Handling.optional() })
      .optional()
      .describe('SigV4 forms the proxy cannot re-sign: "deny" (default) or "passthrough".'),
    allowPlaintextInject: z.boolean().optional(),
  });

  const settings = z
    .strictObject({
      $schema: z.string().optional(),
      network: network.optional(),
      filesystem: filesystem.optional(),
      credentials: credentials.optional(),
      mandatoryDenySearchDepth: z.number().int().min(1).max(10).optional().describe('1..10, default 3.'),
      enableWeakerNestedSandbox: z.boolean().optional(),
      allowNestedUserNamespaces: z.boolean().optional(),
      allowPty: z.boolean().optional(),
      allowAppleEvents: z.boolean().optional(),
      enableWeakerNetworkIsolation: z.boolean().optional(),
      ignoreViolations: unsupported('ignoreViolations').optional(),
      ripgrep: unsupported('ripgrep').optional(),
      seccomp: unsupported('seccomp').optional(),
      bwrapPath: unsupported('bwrapPath').optional(),
      socatPath: unsupported('socatPath').optional(),
      javaAgentJarPath: unsupported('javaAgentJarPath').optional(),
      windows: unsupported('windows').optional(),
      git: unsupported('git').optional(),
    })
    .describe('srt settings. The document may also be wrapped as {"sandbox": {...}}.');
  return { z, settings };
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
  const { z, settings } = schema();
  return z.toJSONSchema(settings, { io: 'input', unrepresentable: 'any' });
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
        return [[...path, key], guess ? `unknown key (did you mean ${guess}?)` : 'unknown key'];
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
      return [[path, `expected ${issue.values.map((v) => JSON.stringify(v)).join(' or ')}, got ${JSON.stringify(value) ?? 'nothing'}`]];
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

/** Validate one settings object; every problem becomes a `FILE: key.path: message` line. */
export function validateSettings(doc: unknown, file: string): SettingsDocument {
  const { settings } = schema();
  const result = settings.safeParse(doc);
  if (result.success) return result.data;
  const lines = result.error.issues
    .flatMap((issue) => messagesFor(issue, doc, [], settings))
    .map(([path, message]) => `${file}: ${formatKeyPath(path)}: ${message}`);
  throw new SettingsError([...new Set(lines)]);
}
