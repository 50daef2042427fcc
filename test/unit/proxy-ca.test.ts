// srt's certificate authority and trust files, checked by independent verifiers: openssl's
// strict mode (what Python ≥ 3.13 enforces) for every leaf shape, and openssl/keytool for the
// Java trust store.
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CaError, CertificateAuthority } from '../../src/proxy/ca.js';
import { certificateBlocks, extraCaCerts, javaTrustStore, prepareTermination, systemRoots } from '../../src/proxy/trust.js';

const dir = mkdtempSync(join(tmpdir(), 'srt-ca-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const file = (content: string | Buffer, name = `f${++n}.pem`) => {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
};
const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe', encoding: 'utf8' });

/** `openssl verify -x509_strict` of `leafPem` against `caPem` (throws with openssl's reason). */
function verifyStrict(caPem: string, leafPem: string, extra: string[] = []): string {
  return openssl('verify', '-x509_strict', ...extra, '-CAfile', file(caPem), file(leafPem)).trim();
}

function ext(cert: string, name: string): string {
  return openssl('x509', '-in', file(cert), '-noout', '-ext', name).trim();
}

describe('ephemeral CA', () => {
  const ca = CertificateAuthority.ephemeral();

  it('is a CA certificate with critical basicConstraints/keyUsage, a subject key id, valid from an hour ago', () => {
    const x = new X509Certificate(ca.certPem);
    expect(x.ca).toBe(true);
    expect(x.checkIssued(x)).toBe(true);
    expect(ca.ephemeral).toBe(true);
    expect(ca.subject).toMatch(/^O=srt, CN=srt ephemeral CA [0-9a-f]{8}$/);
    expect(ext(ca.certPem, 'basicConstraints')).toMatch(/critical\s+CA:TRUE, pathlen:0/);
    expect(ext(ca.certPem, 'keyUsage')).toMatch(/critical\s+Digital Signature, Certificate Sign, CRL Sign/);
    expect(ext(ca.certPem, 'subjectKeyIdentifier')).toMatch(/[0-9A-F]{2}(:[0-9A-F]{2}){19}/);
    const from = Date.parse(x.validFrom);
    expect(Date.now() - from).toBeGreaterThan(55 * 60_000);
    expect(Date.now() - from).toBeLessThan(65 * 60_000);
  });

  it.each([
    ['a DNS name', { host: 'api.example.com' }, 'DNS:api.example.com'],
    ['an IPv4 address', { host: '127.0.0.2', ip: 4 as const }, 'IP Address:127.0.0.2'],
    ['an IPv6 address', { host: '2001:db8::1', ip: 6 as const }, 'IP Address:2001:DB8:0:0:0:0:0:1'],
    ['a punycode name', { host: 'xn--bcher-kva.de' }, 'DNS:xn--bcher-kva.de'],
  ])('mints a leaf for %s that strict verification accepts', (_name, host, san) => {
    const leaf = ca.mint(host);
    expect(verifyStrict(ca.certPem, leaf.certPem, ['-purpose', 'sslserver'])).toMatch(/: OK$/);
    expect(ext(leaf.certPem, 'subjectAltName')).toContain(san);
    expect(ext(leaf.certPem, 'basicConstraints')).toMatch(/critical\s+CA:FALSE/);
    expect(ext(leaf.certPem, 'keyUsage')).toMatch(/critical\s+Digital Signature/);
    expect(ext(leaf.certPem, 'extendedKeyUsage')).toContain('TLS Web Server Authentication');
    // The leaf names the CA's key as its issuer's.
    expect(ext(leaf.certPem, 'authorityKeyIdentifier').split('\n').pop()!.trim()).toBe(ext(ca.certPem, 'subjectKeyIdentifier').split('\n').pop()!.trim());
    const x = new X509Certificate(leaf.certPem);
    if ('ip' in host) expect(x.checkIP(host.host)).toBe(host.host);
    else expect(x.checkHost(host.host)).toBe(host.host);
  });

  it('leaves are short-lived (three days, backdated an hour) and share one key per CA', () => {
    const a = ca.mint({ host: 'a.example' });
    const b = ca.mint({ host: 'b.example' });
    const xa = new X509Certificate(a.certPem);
    const life = Date.parse(xa.validTo) - Date.parse(xa.validFrom);
    expect(life).toBe(3 * 24 * 3600_000 + 3600_000);
    expect(a.keyPem).toBe(b.keyPem);
    expect(xa.serialNumber).not.toBe(new X509Certificate(b.certPem).serialNumber);
    expect(xa.serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/); // 128 bits, positive, no leading zero byte
  });

  it('a name longer than a common name may be is carried by the SAN alone', () => {
    const long = `${'a'.repeat(60)}.example.com`;
    const leaf = ca.mint({ host: long });
    expect(new X509Certificate(leaf.certPem).subject).toBe('O=srt');
    expect(verifyStrict(ca.certPem, leaf.certPem)).toMatch(/: OK$/);
  });

  it('caches TLS contexts per host, most recent last, bounded, and mints again near expiry', () => {
    const fresh = CertificateAuthority.ephemeral();
    const first = fresh.contextFor({ host: 'cached.example' });
    expect(fresh.contextFor({ host: 'cached.example' })).toBe(first);
    const later = new Date(Date.now() + 2.5 * 24 * 3600_000);
    expect(fresh.contextFor({ host: 'cached.example' }, later)).not.toBe(first);
    for (let i = 0; i < 600; i++) fresh.contextFor({ host: `h${i}.example` });
    expect(fresh.cachedLeaves).toBe(512);
  });
});

describe('a user CA', () => {
  const make = (keyArgs: string[], name: string) => {
    const key = join(dir, `${name}.key`);
    const cert = join(dir, `${name}.pem`);
    openssl('req', '-x509', ...keyArgs, '-nodes', '-days', '5', '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE',
      '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', key, '-out', cert);
    return { key, cert };
  };
  const ec = make(['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:secp384r1'], 'user-ec384');
  const rsa = make(['-newkey', 'rsa:2048'], 'user-rsa');
  const ed = make(['-newkey', 'ed25519'], 'user-ed25519');

  it.each([
    ['P-384', ec],
    ['RSA', rsa],
    ['Ed25519', ed],
  ])('with a %s key signs leaves strict verification accepts', (_name, paths) => {
    const ca = CertificateAuthority.load(paths.cert, paths.key);
    expect(ca.ephemeral).toBe(false);
    expect(ca.certPem).toBe(certificateBlocks(readFileSync(paths.cert, 'utf8'))[0]);
    expect(verifyStrict(ca.certPem, ca.mint({ host: 'user.example' }).certPem)).toMatch(/: OK$/);
  });

  it.each([
    ['a key of another CA', () => CertificateAuthority.load(ec.cert, rsa.key), /caKeyPath: .*user-rsa\.key: this key does not belong to .*user-ec384\.pem$/],
    ['a leaf instead of a CA', () => {
      const leafKey = join(dir, 'leaf.key');
      const leaf = join(dir, 'leaf.pem');
      openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '5', '-subj', '/CN=leaf', '-addext', 'basicConstraints=critical,CA:FALSE', '-keyout', leafKey, '-out', leaf);
      return CertificateAuthority.load(leaf, leafKey);
    }, /caCertPath: .*leaf\.pem: not a CA certificate/],
    ['an expired CA', () => CertificateAuthority.load(ec.cert, ec.key, new Date(Date.now() + 30 * 24 * 3600_000)), /caCertPath: .*: expired on /],
    ['an encrypted key', () => {
      const enc = join(dir, 'enc.key');
      openssl('pkey', '-in', ec.key, '-aes256', '-passout', 'pass:secret', '-out', enc);
      return CertificateAuthority.load(ec.cert, enc);
    }, /caKeyPath: .*enc\.key: an encrypted key is not supported/],
    ['a certificate file that is no certificate', () => CertificateAuthority.load(file('hello'), ec.key), /caCertPath: .*: not a PEM or DER certificate/],
    ['a missing file', () => CertificateAuthority.load(join(dir, 'nope.pem'), ec.key), /caCertPath: .*nope\.pem: cannot read it \(ENOENT\)/],
  ])('refuses %s with a clear message', (_name, load, message) => {
    expect(load).toThrow(CaError);
    expect(load).toThrow(message);
  });
});

describe('trust files', () => {
  it('keep CERTIFICATE blocks only, whatever else a file holds', () => {
    const ca = CertificateAuthority.ephemeral();
    const key = openssl('genpkey', '-algorithm', 'ed25519');
    const mixed = file(`junk\r\n${ca.certPem.replace(/\n/g, '\r\n')}${key}-----BEGIN TRUSTED CERTIFICATE-----\nAAAA\n-----END TRUSTED CERTIFICATE-----\n`);
    const certs = extraCaCerts([mixed]);
    expect(certs).toEqual([ca.certPem]);
    expect(() => extraCaCerts([file(key)])).toThrow(/no PEM certificate in it/);
    expect(() => extraCaCerts([join(dir, 'missing.pem')])).toThrow(/cannot read it \(ENOENT\)/);
  });

  it('the bundle is srt\'s CA, the system roots and the extra CAs; the trust store holds the same as trusted entries', () => {
    const extra = CertificateAuthority.ephemeral();
    const t = prepareTermination({ excludeDomains: [], extraCaCertPaths: [file(extra.certPem)], maxTunnels: 1, handshakeTimeoutMs: 1, source: { scope: 'user' } });
    const roots = systemRoots();
    const bundle = certificateBlocks(t.bundle());
    expect(bundle[0]).toBe(t.ca.certPem);
    expect(bundle.at(-1)).toBe(extra.certPem);
    expect(bundle).toHaveLength(roots.certs.length + 2);
    expect(t.upstream.certs).toHaveLength(roots.certs.length + 1); // upstreams are not verified against srt's own CA
    const p12 = file(t.javaTrustStore(), 'trust.p12');
    const listed = openssl('pkcs12', '-in', p12, '-nokeys', '-passin', 'pass:', '-nomacver');
    expect(certificateBlocks(listed)).toHaveLength(bundle.length);
    expect(listed).toContain('2.16.840.1.113894.746875.1.1'); // Java's "trusted certificate" attribute
    expect(listed).not.toContain('PRIVATE KEY');
  });

  it('the Java trust store\'s roots are encoded once per content and reused; each run adds its own CA', () => {
    const home = join(dir, 'home');
    mkdirSync(home);
    const cacheDir = join(home, '.srt', 'cache');
    const t = { excludeDomains: [], extraCaCertPaths: [], maxTunnels: 1, handshakeTimeoutMs: 1, source: { scope: 'user' as const } };
    const a = prepareTermination(t, { home });
    const first = a.javaTrustStore();
    const cached = readdirSync(cacheDir);
    expect(cached).toHaveLength(1);
    // An entry others may write is not read back (it is encoded again and replaced).
    const entry = join(cacheDir, cached[0]!);
    writeFileSync(entry, 'not DER');
    chmodSync(entry, 0o666);
    const listedAgain = certificateBlocks(openssl('pkcs12', '-in', file(prepareTermination(t, { home }).javaTrustStore(), 'again.p12'), '-nokeys', '-passin', 'pass:', '-nomacver'));
    expect(listedAgain).toHaveLength(systemRoots().certs.length + 1);
    expect(statSync(entry).mode & 0o777).toBe(0o600);
    const b = prepareTermination(t, { home });
    const second = b.javaTrustStore();
    expect(readdirSync(cacheDir)).toEqual(cached);
    for (const [store, ca] of [[first, a.ca], [second, b.ca]] as const) {
      const listed = certificateBlocks(openssl('pkcs12', '-in', file(store, `run-${Math.random()}.p12`), '-nokeys', '-passin', 'pass:', '-nomacver'));
      expect(listed[0]).toBe(ca.certPem);
      expect(listed).toHaveLength(systemRoots().certs.length + 1);
    }
    // Another set of roots replaces the cached encoding.
    prepareTermination({ ...t, extraCaCertPaths: [file(CertificateAuthority.ephemeral().certPem)] }, { home }).javaTrustStore();
    expect(readdirSync(cacheDir)).toHaveLength(1);
    expect(readdirSync(cacheDir)).not.toEqual(cached);
  });

  it.runIf((() => { try { execFileSync('keytool', ['-J-XX:-UsePerfData', '-help'], { stdio: 'ignore' }); return true; } catch { return false; } })())(
    'Java reads the trust store without a password, every certificate as a trusted entry',
    () => {
      const list = (store: Buffer) => execFileSync('keytool', ['-J-XX:-UsePerfData', '-list', '-keystore', file(store, `java-${Math.random()}.p12`), '-storetype', 'PKCS12', '-storepass', ''], { encoding: 'utf8' });
      const out = list(javaTrustStore([CertificateAuthority.ephemeral().certPem, CertificateAuthority.ephemeral().certPem]));
      expect(out).toContain('Your keystore contains 2 entries');
      expect(out.match(/srt-trust-\d+, .*, trustedCertEntry/g)).toHaveLength(2);
      // The form a run writes: srt's CA and the cached roots in two SafeContents.
      const t = prepareTermination({ excludeDomains: [], extraCaCertPaths: [], maxTunnels: 1, handshakeTimeoutMs: 1, source: { scope: 'user' } }, { home: join(dir, 'home-java') });
      const run = list(t.javaTrustStore());
      expect(run).toContain(`Your keystore contains ${systemRoots().certs.length + 1} entries`);
      expect(run).toMatch(/srt-ca-0, .*, trustedCertEntry/);
    },
  );
});
