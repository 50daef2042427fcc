// Policies built directly (no settings files), for the pure profile generators' tests.
import type { FileCredential, PathRule, Policy, Scope } from '../../src/policy.js';
import type { Landing } from '../../src/profiles/landing.js';
import { parseDomainEntry } from '../../src/proxy/domains.js';
import { isGlob } from '../../src/glob.js';

/** A path rule from `scope`, a glob when it has glob syntax. */
export const at = (scope: Scope) => (path: string, original = path, glob = isGlob(path)): PathRule =>
  ({ path, glob, original, source: scope === 'default' ? { scope } : { scope, file: `/${scope}.json` } });

export const [managed, cli, user, project, local] = (['managed', 'cli', 'user', 'project', 'local'] as const).map(at);

export function credentialFile(path: string, mode: 'deny' | 'mask' = 'deny'): FileCredential {
  return { path, glob: isGlob(path), mode, injectInto: ['headers'], onExtractNoMatch: 'warn', maskDuplicates: false, source: { scope: 'user', file: '/user.json' } };
}

export function allowDomains(...entries: string[]): Policy['network']['allowedDomains'] {
  return entries.flatMap((e) => {
    const parsed = parseDomainEntry(e, 'allow');
    if (!parsed.ok) throw new Error(parsed.error);
    return parsed.rules.map((rule) => ({ rule, source: { scope: 'cli' as const } }));
  });
}

export function policy(fs: Partial<Policy['filesystem']> = {}, extra: Partial<Policy> = {}, network: Partial<Policy['network']> = {}): Policy {
  return {
    cwd: '/Users/ann/proj', home: '/Users/ann', root: '/Users/ann/proj',
    network: {
      allowedDomains: [], deniedDomains: [], deniedDomainReasons: {}, strictAllowlist: true, allowManagedDomainsOnly: false,
      deniedResolvedAddresses: [], allowUnixSockets: [], allowAllUnixSockets: false, allowLocalBinding: false, exposePorts: [],
      ...network,
    },
    filesystem: { allowWrite: [], denyWrite: [], denyRead: [], allowRead: [], disabled: false, allowManagedReadPathsOnly: false, ...fs },
    credentials: { envVars: [], files: [], awsPairs: [], sigv4: { presigned: 'deny', streaming: 'deny', sigv4a: 'deny', mint: 'deny' }, allowPlaintextInject: false },
    mandatoryDenySearchDepth: 3, enableWeakerNestedSandbox: false, allowNestedUserNamespaces: false,
    allowPty: false, allowAppleEvents: false, enableWeakerNetworkIsolation: false, warnings: [], ignored: [],
    ...extra,
  };
}

/** Landings for a pure generator's facts: every path named in `known` as given, every other path
 *  an existing directory where it is written (as if srt had resolved it on a plain tree). */
export class Landings extends Map<string, Landing> {
  constructor(known: Iterable<readonly [string, Landing]> = []) {
    super(known);
  }

  override get(path: string): Landing {
    return super.get(path) ?? { real: path, kind: 'dir' };
  }
}
