// The one normalised policy every downstream module consumes (proxy, profiles, platform).
// Settings are discovered, parsed, merged and trust-filtered in src/settings/; this file
// defines the shape they are turned into. Everything here is absolute and already decided:
// consumers never look at scopes again except to report where an entry came from.

import type { DomainRule } from './proxy/domains.js';

export type Scope = 'managed' | 'cli' | 'local' | 'project' | 'user' | 'default';

/** Where an effective entry came from. `file` is absent for CLI flags and built-in defaults. */
export interface Source {
  scope: Scope;
  file?: string;
  /** The CLI flag (`--allow-domain`, ...) for entries given as flags. */
  flag?: string;
  /** A project/local file of a directory between cwd and `/` other than the project root: only
   *  its deny entries apply, and the root's own files cannot re-open them (SPEC §2.4). */
  outsideRoot?: true;
  /** The toolchain preset (`--with npm`, `"presets": ["npm"]`) that added the entry. */
  preset?: string;
}

/** A filesystem entry after `~`/relative resolution against its scope's base. */
export interface PathRule {
  /** Absolute path; contains glob syntax only when `glob` is true. A trailing `/**` is kept here. */
  path: string;
  glob: boolean;
  /** The spelling in the settings file, for messages. */
  original: string;
  source: Source;
  /** A preset's cache directory: created empty on the host when missing, before the run. */
  create?: true;
  /** Where the entry stands in its file (`filesystem.denyWrite[2]`), for messages. */
  key?: string;
}

export interface SourcedDomain {
  rule: DomainRule;
  source: Source;
  /** Where the entry stands in its file (`network.allowedDomains[0]`), for messages. */
  key?: string;
}

export type CredentialMode = 'mask' | 'deny';
export type OnExtractNoMatch = 'warn' | 'deny' | 'error';
export type InjectPlace = 'headers' | 'query' | 'body';

export interface EnvCredential {
  name: string;
  mode: CredentialMode;
  /** Where the real value may be sent, parsed like allowedDomains (canonical hosts, optional
   *  port, wildcards); undefined = every allowedDomains entry that names one host. */
  injectHosts?: DomainRule[];
  /** Default `['headers']`. */
  injectInto: InjectPlace[];
  /** argv whose stdout is the real value (user/cli/managed scope only). */
  sourceCommand?: string[];
  decode?: 'jwt';
  maskClaims?: string[];
  /** Regex; group 1 of each match is masked (never combined with decode). */
  extract?: string;
  onExtractNoMatch: OnExtractNoMatch;
  source: Source;
}

export interface FileCredential {
  /** Absolute path. */
  path: string;
  glob: boolean;
  mode: CredentialMode;
  extract?: string;
  onExtractNoMatch: OnExtractNoMatch;
  maskDuplicates: boolean;
  injectHosts?: DomainRule[];
  injectInto: InjectPlace[];
  decode?: 'jwt';
  maskClaims?: string[];
  source: Source;
}

export interface AwsPair {
  accessKeyIdVar: string;
  secretAccessKeyVar: string;
  sessionTokenVar?: string;
  source: Source;
}

/** The SigV4 forms `credentials.sigv4` can treat differently from the default (re-sign). */
export type SigV4Form = 'presigned' | 'streaming' | 'sigv4a';
/** What becomes of a request of a SigV4 form srt cannot re-sign (every form is re-signed when it can be). */
export type SigV4Handling = 'deny' | 'passthrough';
/** What becomes of the answer of a call that mints credentials when srt recognises none in it. */
export type MintHandling = 'deny' | 'allow';

/** `network.exposePorts`: the host's hostAddress:hostPort reaches the sandbox's 127.0.0.1:sandboxPort. */
export interface ExposedPort {
  /** A loopback address of the host: an entry without one is both 127.0.0.1 and ::1. */
  hostAddress: string;
  /** The ::1 of an entry without an address: bound only where the host has an IPv6 loopback. */
  ifAvailable?: true;
  hostPort: number;
  sandboxPort: number;
  source: Source;
}

export interface TlsTerminate {
  caCertPath?: string;
  caKeyPath?: string;
  /** Parsed like allowedDomains. */
  excludeDomains: DomainRule[];
  extraCaCertPaths: string[];
  maxTunnels: number;
  handshakeTimeoutMs: number;
  source: Source;
}

/** An entry that a trust rule or an unsupported reference key made srt ignore. */
export interface IgnoredEntry {
  /** Dotted key path, e.g. `network.tlsTerminate` or `credentials.envVars[0]`. */
  key: string;
  /** The entry as written, for list entries (`api.example.com`, `~/.ssh`). */
  value?: string;
  source: Source;
  reason: string;
  /** An allow entry that a deny of higher trust overrules: that deny's entry, file and line. */
  overruledBy?: { entry: string; key?: string; source: Source; line?: number };
}

export interface Policy {
  /** The directory the command runs in (absolute, symlinks resolved). */
  cwd: string;
  /** The user's home directory. */
  home: string;
  /** Git work-tree top holding cwd, else cwd. */
  root: string;

  network: {
    allowedDomains: SourcedDomain[];
    deniedDomains: SourcedDomain[];
    /** Keyed by the normalised entry text (`github.com:22`). */
    deniedDomainReasons: Record<string, string>;
    strictAllowlist: boolean;
    allowManagedDomainsOnly: boolean;
    /** CIDR strings, validated. */
    deniedResolvedAddresses: string[];
    allowUnixSockets: string[];
    allowAllUnixSockets: boolean;
    allowLocalBinding: boolean;
    httpProxyPort?: number;
    socksProxyPort?: number;
    tlsTerminate?: TlsTerminate;
    /** Host loopback ports relayed into the sandbox while the run lasts (user/cli/managed only). */
    exposePorts: ExposedPort[];
  };

  filesystem: {
    allowWrite: PathRule[];
    denyWrite: PathRule[];
    denyRead: PathRule[];
    allowRead: PathRule[];
    disabled: boolean;
    allowManagedReadPathsOnly: boolean;
    /** A reference-tool settings file that sets `allowWrite`: its list is every writable path, as
     *  there, so the current directory is writable only where an entry covers it (SPEC §3). */
    wholeWriteList?: Source;
  };

  credentials: {
    envVars: EnvCredential[];
    files: FileCredential[];
    awsPairs: AwsPair[];
    sigv4: Record<SigV4Form, SigV4Handling> & { mint: MintHandling };
    allowPlaintextInject: boolean;
  };

  mandatoryDenySearchDepth: number;
  enableWeakerNestedSandbox: boolean;
  allowNestedUserNamespaces: boolean;
  allowPty: boolean;
  allowAppleEvents: boolean;
  enableWeakerNetworkIsolation: boolean;

  /** Human-readable warnings (each printed once as `srt: warning: ...`). */
  warnings: string[];
  /** Lines worth one mention that are no warning (printed as `srt: ...`). */
  notices?: string[];
  ignored: IgnoredEntry[];
}
