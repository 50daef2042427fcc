// Trust for TLS termination (SPEC §7): what srt verifies upstream servers against (the system
// roots + extraCaCertPaths), and what the sandboxed command is given to trust srt's leaves (the
// same plus srt's CA): one PEM bundle for every client that reads a CA file, and a PKCS#12
// trust store for Java. Certificates only: nothing but CERTIFICATE blocks is ever copied, so a
// key that happens to sit in one of these files never reaches the sandbox.

import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import asn1 from 'node-forge/lib/asn1.js';
import type { asn1 as Asn1Types } from 'node-forge';
import { prepareCacheDir, readCacheFile, writeCacheFile } from '../platform/private-cache.js';
import { CaError, CertificateAuthority } from './ca.js';
import type { TlsTerminate } from '../policy.js';
import type { UpstreamTrust } from './tls-upstream.js';

type Asn1 = Asn1Types.Asn1;

/** Where Linux distributions (and macOS) keep the system's bundle of trusted roots. */
export const SYSTEM_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/ca-bundle.pem', '/etc/ssl/cert.pem'];

const BLOCK = /-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/g;

/** Every PEM CERTIFICATE block in `text`, normalised to `\n` line ends (nothing else survives). */
export function certificateBlocks(text: string): string[] {
  return (text.match(BLOCK) ?? []).map((b) => `${b.replace(/\r\n/g, '\n')}\n`);
}

/** The system roots: the first system bundle that exists, else Node's own copy of Mozilla's list. */
export function systemRoots(bundles: readonly string[] = SYSTEM_BUNDLES): { source: string; certs: string[] } {
  for (const path of bundles) {
    if (!existsSync(path)) continue;
    try {
      const certs = certificateBlocks(readFileSync(path, 'utf8'));
      if (certs.length > 0) return { source: path, certs };
    } catch {
      /* unreadable: try the next */
    }
  }
  return { source: "Node's bundled root certificates", certs: rootCertificates.map((c) => `${c.trim()}\n`) };
}

/** The certificates of every extraCaCertPaths file; a file that cannot be used is an error. */
export function extraCaCerts(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const path of paths) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (e) {
      throw new CaError(`network.tlsTerminate.extraCaCertPaths: ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    const certs = certificateBlocks(text);
    if (certs.length === 0) throw new CaError(`network.tlsTerminate.extraCaCertPaths: ${path}: no PEM certificate in it`);
    out.push(...certs);
  }
  return out;
}

/** Upstream verification roots, parsed into a TLS context on the first terminated connection. */
export class UpstreamTrustStore implements UpstreamTrust {
  private ctx: SecureContext | undefined;
  constructor(readonly certs: readonly string[]) {}
  context(): SecureContext {
    this.ctx ??= createSecureContext({ ca: this.certs as string[] });
    return this.ctx;
  }
}

// --- PKCS#12 trust store (RFC 7292) for Java: one unencrypted SafeContents of certBags, each
// with the attribute Java requires to treat a certificate as a trusted entry. No MAC: there is
// no password and nothing secret in it (Java loads such a store with no password set).
const { Class, Type } = asn1;
const seq = (v: Asn1[]) => asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, v);
const set = (v: Asn1[]) => asn1.create(Class.UNIVERSAL, Type.SET, true, v);
const oid = (o: string) => asn1.create(Class.UNIVERSAL, Type.OID, false, asn1.oidToDer(o).getBytes());
const explicit0 = (v: Asn1) => asn1.create(Class.CONTEXT_SPECIFIC, 0, true, [v]);
const octets = (bytes: string) => asn1.create(Class.UNIVERSAL, Type.OCTETSTRING, false, bytes);
const P12 = {
  data: '1.2.840.113549.1.7.1',
  certBag: '1.2.840.113549.1.12.10.1.3',
  x509Certificate: '1.2.840.113549.1.9.22.1',
  friendlyName: '1.2.840.113549.1.9.20',
  oracleTrustedKeyUsage: '2.16.840.1.113894.746875.1.1',
  anyExtendedKeyUsage: '2.5.29.37.0',
};

/** forge encodes a BMPString's value (a JS string) as UTF-16BE itself. */
const bmpString = (s: string) => asn1.create(Class.UNIVERSAL, Type.BMPSTRING, false, s);

/** A ContentInfo (data) holding one SafeContents with a trusted-certificate bag per PEM block. */
function certBags(certs: readonly string[], label: string): Buffer {
  const bags = certs.map((pem, i) => {
    const derCert = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64').toString('binary');
    return seq([
      oid(P12.certBag),
      explicit0(seq([oid(P12.x509Certificate), explicit0(octets(derCert))])),
      set([
        seq([oid(P12.friendlyName), set([bmpString(`${label}-${i}`)])]),
        seq([oid(P12.oracleTrustedKeyUsage), set([oid(P12.anyExtendedKeyUsage)])]),
      ]),
    ]);
  });
  const safeContents = asn1.toDer(seq(bags)).getBytes();
  return Buffer.from(asn1.toDer(seq([oid(P12.data), explicit0(octets(safeContents))])).getBytes(), 'binary');
}

/** A DER element around content that is already encoded (to compose cached parts). */
function derElement(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const len: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) len.unshift(v & 255);
  const head = n < 0x80 ? [tag, n] : [tag, 0x80 | len.length, ...len];
  return Buffer.concat([Buffer.from(head), content]);
}

/** PFX { version 3, authSafe: data ContentInfo { AuthenticatedSafe of the given ContentInfos } }. */
function pfx(contentInfos: Buffer[]): Buffer {
  const authSafe = derElement(0x30, Buffer.concat(contentInfos));
  const dataOid = Buffer.from(asn1.toDer(oid(P12.data)).getBytes(), 'binary');
  const authSafeInfo = derElement(0x30, Buffer.concat([dataOid, derElement(0xa0, derElement(0x04, authSafe))]));
  return derElement(0x30, Buffer.concat([Buffer.from([0x02, 0x01, 0x03]), authSafeInfo]));
}

/** A PKCS#12 file of trusted certificates (PEM blocks in, DER out). */
export function javaTrustStore(certs: readonly string[]): Buffer {
  return pfx([certBags(certs, 'srt-trust')]);
}

/**
 * The same with srt's CA first and the rest (system roots, extra CAs: the same from run to run)
 * encoded once and kept in ~/.srt/cache of `home` (platform/private-cache.ts: only this user's,
 * never the sandbox's), keyed by their content, so a run pays only for its own CA.
 */
function javaTrustStoreCached(ca: string, rest: readonly string[], home: string | undefined): Buffer {
  if (!home) return pfx([certBags([ca], 'srt-ca'), certBags(rest, 'srt-trust')]);
  const dir = join(home, '.srt', 'cache');
  const name = `java-trust-${createHash('sha256').update(rest.join('')).digest('hex').slice(0, 32)}.der`;
  let encoded = readCacheFile(home, join(dir, name));
  if (!encoded) {
    encoded = certBags(rest, 'srt-trust');
    if (prepareCacheDir(home, dir)) {
      try {
        for (const old of readdirSync(dir)) if (old.startsWith('java-trust-') && old !== name) rmSync(join(dir, old), { force: true });
      } catch { /* unlistable: the old ones stay */ }
      writeCacheFile(home, join(dir, name), encoded);
    }
  }
  return pfx([certBags([ca], 'srt-ca'), encoded]);
}

/** Everything termination needs, made before the command starts (an error here stops the run). */
export interface Termination {
  ca: CertificateAuthority;
  upstream: UpstreamTrustStore;
  /** Where the upstream roots came from (a system bundle path, or Node's list). */
  rootsSource: string;
  /** The command's trust: srt's CA, the system roots, the extra CAs (PEM). */
  bundle(): string;
  /** The same as a Java PKCS#12 trust store. */
  javaTrustStore(): Buffer;
}

/** `home`: whose ~/.srt/cache may keep the encoded Java trust store roots between runs. */
export function prepareTermination(t: TlsTerminate, opts: { now?: Date; home?: string } = {}): Termination {
  const now = opts.now ?? new Date();
  const ca = t.caCertPath && t.caKeyPath ? CertificateAuthority.load(t.caCertPath, t.caKeyPath, now) : CertificateAuthority.ephemeral(now);
  const roots = systemRoots();
  const extra = extraCaCerts(t.extraCaCertPaths);
  const upstreamCerts = [...roots.certs, ...extra];
  const all = () => [ca.certPem, ...upstreamCerts];
  return {
    ca,
    upstream: new UpstreamTrustStore(upstreamCerts),
    rootsSource: roots.source,
    bundle: () => all().join(''),
    javaTrustStore: () => javaTrustStoreCached(ca.certPem, upstreamCerts, opts.home),
  };
}
