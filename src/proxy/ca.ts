// The certificate authority TLS termination shows clients (SPEC §7). Keys and signatures are
// node:crypto's; certificates are DER built with node-forge's ASN.1 encoder (forge's X.509 layer
// only knows RSA keys, and loading it costs more than everything else here).
//
// - Ephemeral CA (the default): an EC P-256 key made at start, kept in this process's memory
//   only — never written to a file, never in the environment.
// - caCertPath/caKeyPath: loaded and checked (a CA certificate, not expired, the key matches it).
//   The key path is unreadable inside the sandbox (the policy denies it).
// - Leaves: one EC P-256 key per CA (made on the first mint), a certificate per host name or IP
//   address, valid from an hour ago (clock skew) for three days, with the extensions strict
//   verifiers require (Python ≥ 3.13 / OpenSSL's X509_STRICT: AKI, SKI, critical key usage);
//   the most recent ones are cached as ready TLS contexts.

import { createHash, createPrivateKey, generateKeyPairSync, randomBytes, sign, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContext } from 'node:tls';
import asn1 from 'node-forge/lib/asn1.js';
import type { asn1 as Asn1Types } from 'node-forge';
import { ipBytes } from './ip.js';
import { namedLoopback, type NormalizedHost } from './domains.js';

type Asn1 = Asn1Types.Asn1;

/** A CA problem the user must fix (bad path, not a CA, key mismatch, expired). */
export class CaError extends Error {}

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const LEAF_LIFETIME_MS = 3 * DAY;
/** A cached leaf closer than this to its expiry is minted again. */
const REMINT_BEFORE_MS = DAY;
const EPHEMERAL_CA_LIFETIME_MS = 365 * DAY;
const CACHE_SIZE = 512;

// --- DER helpers (forge represents bytes as binary strings)
const { Class, Type } = asn1;
const bin = (b: Buffer | Uint8Array) => Buffer.from(b).toString('binary');
const der = (a: Asn1): Buffer => Buffer.from(asn1.toDer(a).getBytes(), 'binary');
const seq = (v: Asn1[]) => asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, v);
const set = (v: Asn1[]) => asn1.create(Class.UNIVERSAL, Type.SET, true, v);
const oid = (o: string) => asn1.create(Class.UNIVERSAL, Type.OID, false, asn1.oidToDer(o).getBytes());
const int = (b: Buffer) => asn1.create(Class.UNIVERSAL, Type.INTEGER, false, bin(b));
const octets = (b: Buffer) => asn1.create(Class.UNIVERSAL, Type.OCTETSTRING, false, bin(b));
const bool = (v: boolean) => asn1.create(Class.UNIVERSAL, Type.BOOLEAN, false, v ? '\xff' : '\x00');
const utf8 = (s: string) => asn1.create(Class.UNIVERSAL, Type.UTF8, false, Buffer.from(s, 'utf8').toString('binary'));
/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime after. */
const time = (d: Date) =>
  d.getUTCFullYear() < 2050
    ? asn1.create(Class.UNIVERSAL, Type.UTCTIME, false, asn1.dateToUtcTime(d))
    : asn1.create(Class.UNIVERSAL, Type.GENERALIZEDTIME, false, asn1.dateToGeneralizedTime(d));

function name(attrs: Array<[string, string]>): Asn1 {
  return seq(attrs.map(([o, v]) => set([seq([oid(o), utf8(v)])])));
}

function extension(id: string, critical: boolean, value: Asn1): Asn1 {
  return seq([oid(id), ...(critical ? [bool(true)] : []), octets(der(value))]);
}

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  subjectAltName: '2.5.29.17',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
};

// keyUsage BIT STRINGs: first byte = unused bits. digitalSignature = bit 0; keyCertSign = 5, cRLSign = 6.
const KU_DIGITAL_SIGNATURE = asn1.create(Class.UNIVERSAL, Type.BITSTRING, false, '\x07\x80');
const KU_CERT_SIGN = asn1.create(Class.UNIVERSAL, Type.BITSTRING, false, '\x01\x86');

/** How a key signs a TBSCertificate: the AlgorithmIdentifier to name and the signature itself. */
function signerFor(key: KeyObject): { algorithm: () => Asn1; sign: (tbs: Buffer) => Buffer } {
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      const [hash, alg] =
        curve === 'secp384r1' ? ['sha384', '1.2.840.10045.4.3.3'] : curve === 'secp521r1' ? ['sha512', '1.2.840.10045.4.3.4'] : ['sha256', '1.2.840.10045.4.3.2'];
      return { algorithm: () => seq([oid(alg!)]), sign: (tbs) => sign(hash!, tbs, key) };
    }
    case 'rsa':
      return {
        algorithm: () => seq([oid('1.2.840.113549.1.1.11'), asn1.create(Class.UNIVERSAL, Type.NULL, false, '')]),
        sign: (tbs) => sign('sha256', tbs, key),
      };
    case 'ed25519':
      return { algorithm: () => seq([oid('1.3.101.112')]), sign: (tbs) => sign(null, tbs, key) };
    default:
      throw new CaError(`unsupported CA key type ${key.asymmetricKeyType} (use an EC, RSA or Ed25519 key)`);
  }
}

/** SubjectKeyIdentifier, RFC 5280 §4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits. */
function keyIdOf(spkiDer: Buffer): Buffer {
  const spki = asn1.fromDer(bin(spkiDer));
  const bits = (spki.value as Asn1[])[1]!.value as string;
  return createHash('sha1').update(Buffer.from(bits.slice(1), 'binary')).digest();
}

/** A positive 128-bit serial number with no leading zero byte. */
function serial(): Buffer {
  const b = randomBytes(16);
  b[0] = (b[0]! & 0x7f) | 0x40;
  return b;
}

interface CertSpec {
  issuer: Asn1;
  subject: Asn1;
  notBefore: Date;
  notAfter: Date;
  spki: Buffer;
  extensions: Asn1[];
}

function buildCertificate(spec: CertSpec, signer: ReturnType<typeof signerFor>): Buffer {
  const tbs = seq([
    asn1.create(Class.CONTEXT_SPECIFIC, 0, true, [int(Buffer.from([2]))]), // v3
    int(serial()),
    signer.algorithm(),
    spec.issuer,
    seq([time(spec.notBefore), time(spec.notAfter)]),
    spec.subject,
    asn1.fromDer(bin(spec.spki)),
    asn1.create(Class.CONTEXT_SPECIFIC, 3, true, [seq(spec.extensions)]),
  ]);
  const tbsDer = der(tbs);
  const signature = signer.sign(tbsDer);
  return der(seq([asn1.fromDer(bin(tbsDer)), signer.algorithm(), asn1.create(Class.UNIVERSAL, Type.BITSTRING, false, `\x00${bin(signature)}`)]));
}

function pem(derBytes: Buffer): string {
  const b64 = derBytes.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

/** Subject Name and SubjectKeyIdentifier of a parsed certificate (the issuer side of a leaf). */
function issuerFields(certDer: Buffer): { subject: Asn1; keyId: Buffer | undefined } {
  const cert = asn1.fromDer(bin(certDer));
  const tbs = (cert.value as Asn1[])[0]!.value as Asn1[];
  const hasVersion = tbs[0]!.tagClass === Class.CONTEXT_SPECIFIC && tbs[0]!.type === 0;
  const subject = tbs[hasVersion ? 5 : 4]!;
  let keyId: Buffer | undefined;
  const extsWrap = tbs.find((n) => n.tagClass === Class.CONTEXT_SPECIFIC && n.type === 3);
  for (const ext of ((extsWrap?.value as Asn1[] | undefined)?.[0]?.value as Asn1[] | undefined) ?? []) {
    const parts = ext.value as Asn1[];
    if (asn1.derToOid(parts[0]!.value as string) !== OID.subjectKeyId) continue;
    const inner = asn1.fromDer(parts[parts.length - 1]!.value as string);
    keyId = Buffer.from(inner.value as string, 'binary');
  }
  return { subject, keyId };
}

interface CachedLeaf {
  context: SecureContext;
  certPem: string;
  refreshAt: number;
}

export class CertificateAuthority {
  /** The CA certificate (public): what the trust bundle adds. */
  readonly certPem: string;
  readonly ephemeral: boolean;
  readonly subject: string;
  readonly fingerprint256: string;
  private readonly notAfter: number;
  private readonly issuer: { subject: Asn1; keyId: Buffer };
  private readonly signer: ReturnType<typeof signerFor>;
  private leafKey: { pem: string; spki: Buffer; keyId: Buffer } | undefined;
  private readonly cache = new Map<string, CachedLeaf>();

  private constructor(certDer: Buffer, key: KeyObject, ephemeral: boolean) {
    const x509 = new X509Certificate(certDer);
    this.certPem = pem(certDer);
    this.ephemeral = ephemeral;
    this.subject = x509.subject.replace(/\n/g, ', ');
    this.fingerprint256 = x509.fingerprint256;
    this.notAfter = Date.parse(x509.validTo);
    const fields = issuerFields(certDer);
    const spki = x509.publicKey.export({ type: 'spki', format: 'der' });
    this.issuer = { subject: fields.subject, keyId: fields.keyId ?? keyIdOf(spki) };
    this.signer = signerFor(key);
  }

  /** A fresh CA whose key exists only in this process. */
  static ephemeral(now = new Date()): CertificateAuthority {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const spki = publicKey.export({ type: 'spki', format: 'der' });
    const keyId = keyIdOf(spki);
    const subject = name([
      [OID.organization, 'srt'],
      [OID.commonName, `srt ephemeral CA ${randomBytes(4).toString('hex')}`],
    ]);
    const certDer = buildCertificate(
      {
        issuer: subject,
        subject,
        notBefore: new Date(now.getTime() - HOUR),
        notAfter: new Date(now.getTime() + EPHEMERAL_CA_LIFETIME_MS),
        spki,
        extensions: [
          extension(OID.basicConstraints, true, seq([bool(true), int(Buffer.from([0]))])),
          extension(OID.keyUsage, true, KU_CERT_SIGN),
          extension(OID.subjectKeyId, false, octets(keyId)),
          extension(OID.authorityKeyId, false, seq([asn1.create(Class.CONTEXT_SPECIFIC, 0, false, bin(keyId))])),
        ],
      },
      signerFor(privateKey),
    );
    return new CertificateAuthority(certDer, privateKey, true);
  }

  /** The user's CA (`caCertPath`/`caKeyPath`), checked before anything runs. */
  static load(certPath: string, keyPath: string, now = new Date()): CertificateAuthority {
    const read = (path: string, what: string) => {
      try {
        return readFileSync(path, 'utf8');
      } catch (e) {
        throw new CaError(`network.tlsTerminate.${what}: ${path}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
      }
    };
    const certText = read(certPath, 'caCertPath');
    const block = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/.exec(certText)?.[0];
    let x509: X509Certificate;
    try {
      x509 = new X509Certificate(block ?? certText);
    } catch {
      throw new CaError(`network.tlsTerminate.caCertPath: ${certPath}: not a PEM or DER certificate`);
    }
    const keyText = read(keyPath, 'caKeyPath');
    if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(keyText)) {
      throw new CaError(`network.tlsTerminate.caKeyPath: ${keyPath}: an encrypted key is not supported (store it decrypted where only you can read it)`);
    }
    let key: KeyObject;
    try {
      key = createPrivateKey({ key: keyText });
    } catch {
      throw new CaError(`network.tlsTerminate.caKeyPath: ${keyPath}: not a PEM private key`);
    }
    if (!x509.ca) throw new CaError(`network.tlsTerminate.caCertPath: ${certPath}: not a CA certificate (basicConstraints CA:TRUE is missing)`);
    if (!x509.checkPrivateKey(key)) throw new CaError(`network.tlsTerminate.caKeyPath: ${keyPath}: this key does not belong to ${certPath}`);
    if (Date.parse(x509.validTo) <= now.getTime()) throw new CaError(`network.tlsTerminate.caCertPath: ${certPath}: expired on ${x509.validTo}`);
    if (Date.parse(x509.validFrom) > now.getTime()) throw new CaError(`network.tlsTerminate.caCertPath: ${certPath}: not valid before ${x509.validFrom}`);
    signerFor(key); // an unsupported key type is an error now, not at the first connection
    return new CertificateAuthority(x509.raw, key, false);
  }

  /** A leaf certificate for `host` (PEM, public), minted now. */
  mint(host: NormalizedHost, now = new Date()): { certPem: string; keyPem: string; notAfter: Date } {
    if (!this.leafKey) {
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const spki = publicKey.export({ type: 'spki', format: 'der' });
      this.leafKey = { pem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, spki, keyId: keyIdOf(spki) };
    }
    const notAfter = new Date(Math.min(now.getTime() + LEAF_LIFETIME_MS, this.notAfter));
    const ip = (addr: string) => asn1.create(Class.CONTEXT_SPECIFIC, 7, false, bin(ipBytes(addr)!));
    // `localhost` is also the addresses it stands for: a client of a forwarded `localhost:PORT`
    // may name it https://127.0.0.1:PORT (no SNI) as well.
    const san: Asn1[] = host.ip !== undefined ? [ip(host.host)] : [asn1.create(Class.CONTEXT_SPECIFIC, 2, false, host.host), ...(namedLoopback(host.host) ?? []).map(ip)];
    const subject: Array<[string, string]> = [[OID.organization, 'srt']];
    if (host.host.length <= 64) subject.push([OID.commonName, host.host]);
    const certDer = buildCertificate(
      {
        issuer: this.issuer.subject,
        subject: name(subject),
        notBefore: new Date(now.getTime() - HOUR),
        notAfter,
        spki: this.leafKey.spki,
        extensions: [
          extension(OID.basicConstraints, true, seq([])),
          extension(OID.keyUsage, true, KU_DIGITAL_SIGNATURE),
          extension(OID.extKeyUsage, false, seq([oid(OID.serverAuth)])),
          extension(OID.subjectAltName, false, seq(san)),
          extension(OID.subjectKeyId, false, octets(this.leafKey.keyId)),
          extension(OID.authorityKeyId, false, seq([asn1.create(Class.CONTEXT_SPECIFIC, 0, false, bin(this.issuer.keyId))])),
        ],
      },
      this.signer,
    );
    return { certPem: pem(certDer), keyPem: this.leafKey.pem, notAfter };
  }

  /** A TLS server context presenting a leaf for `host` (and the CA), from the cache when fresh. */
  contextFor(host: NormalizedHost, now = new Date()): SecureContext {
    const cached = this.cache.get(host.host);
    if (cached && cached.refreshAt > now.getTime()) {
      this.cache.delete(host.host); // re-insert: most recently used last
      this.cache.set(host.host, cached);
      return cached.context;
    }
    const leaf = this.mint(host, now);
    const context = createSecureContext({ key: leaf.keyPem, cert: `${leaf.certPem}${this.certPem}` });
    this.cache.delete(host.host);
    this.cache.set(host.host, { context, certPem: leaf.certPem, refreshAt: leaf.notAfter.getTime() - REMINT_BEFORE_MS });
    if (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
    return context;
  }

  /** How many leaves are cached (benchmarks and tests). */
  get cachedLeaves(): number {
    return this.cache.size;
  }
}
