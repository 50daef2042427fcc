// Shared fixtures for the proxy tests: network policies built from entry strings, loopback servers.
import { parseDomainEntry } from '../../src/proxy/domains.js';
import type { Policy, Scope, SourcedDomain } from '../../src/policy.js';

export function rules(entries: string[], list: 'allow' | 'deny', scope: Scope = 'user'): SourcedDomain[] {
  return entries.flatMap((e) => {
    const p = parseDomainEntry(e, list);
    if (!p.ok) throw new Error(p.error);
    return p.rules.map((rule) => ({ rule, source: { scope } }));
  });
}

export function network(opts: {
  allow?: string[];
  deny?: string[];
  managedAllow?: string[];
  reasons?: Record<string, string>;
  managedOnly?: boolean;
  deniedResolvedAddresses?: string[];
}): Policy['network'] {
  return {
    allowedDomains: [...rules(opts.managedAllow ?? [], 'allow', 'managed'), ...rules(opts.allow ?? [], 'allow')],
    deniedDomains: rules(opts.deny ?? [], 'deny'),
    deniedDomainReasons: opts.reasons ?? {},
    strictAllowlist: true,
    allowManagedDomainsOnly: opts.managedOnly ?? false,
    deniedResolvedAddresses: opts.deniedResolvedAddresses ?? [],
    allowUnixSockets: [],
    allowAllUnixSockets: false,
    allowLocalBinding: false,
    exposePorts: [],
  };
}

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { connect, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A self-signed certificate for the given DNS names and 127.0.0.1 (openssl CLI; test-only). */
export function selfSigned(names: string[]): { cert: string; key: string; certPath: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'srt-proxy-cert-'));
  const san = [...names.map((n) => `DNS:${n}`), 'IP:127.0.0.1'].join(',');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', `/CN=${names[0]}`, '-addext', `subjectAltName=${san}`,
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
  ], { stdio: 'ignore' });
  return { cert: readFileSync(join(dir, 'cert.pem'), 'utf8'), key: readFileSync(join(dir, 'key.pem'), 'utf8'), certPath: join(dir, 'cert.pem'), dir };
}

export async function listenOn(server: http.Server | https.Server, host = '127.0.0.1'): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

export function closeServer(server: http.Server | https.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

export function rmrf(path: string): void {
  rmSync(path, { recursive: true, force: true });
}

/**
 * A test PKI made with the openssl CLI (independent of srt's own certificate code): a CA and
 * leaves it signs — for DNS names and IP addresses, optionally already expired. The CA is what
 * tests hand srt as `extraCaCertPaths`.
 */
export function testPki(dir: string) {
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const caKey = join(dir, 'ca.key');
  const caPath = join(dir, 'ca.pem');
  run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3', '-subj', '/CN=srt test upstream CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign', '-keyout', caKey, '-out', caPath]);
  writeFileSync(join(dir, 'index.txt'), '');
  writeFileSync(join(dir, 'openssl.cnf'), [
    '[ca]', 'default_ca = test', '[test]', `dir = ${dir}`, 'database = $dir/index.txt', 'new_certs_dir = $dir', 'serial = $dir/serial',
    'default_md = sha256', 'policy = any', 'unique_subject = no', 'copy_extensions = none', '[any]', 'commonName = supplied', '',
  ].join('\n'));
  writeFileSync(join(dir, 'serial'), '1000\n');
  let n = 0;
  return {
    caPath,
    caPem: readFileSync(caPath, 'utf8'),
    /** A leaf for `names` (`DNS:x` / `IP:x` entries); `expired` dates it in the past. */
    leaf(names: string[], opts: { expired?: boolean; selfSigned?: boolean } = {}): { cert: string; key: string; certPath: string } {
      const base = join(dir, `leaf${++n}`);
      const ext = `${base}.ext`;
      writeFileSync(ext, `[v3]\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${names.join(',')}\nsubjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n`);
      const cn = names[0]!.replace(/^(DNS|IP):/, '');
      if (opts.selfSigned) {
        run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', `/CN=${cn}`,
          '-addext', `subjectAltName=${names.join(',')}`, '-keyout', `${base}.key`, '-out', `${base}.pem`]);
      } else {
        run(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${cn}`, '-keyout', `${base}.key`, '-out', `${base}.csr`]);
        const dates = opts.expired ? ['-startdate', '200101000000Z', '-enddate', '200102000000Z'] : ['-days', '2'];
        run(['ca', '-batch', '-notext', '-config', join(dir, 'openssl.cnf'), '-cert', caPath, '-keyfile', caKey, '-in', `${base}.csr`, '-out', `${base}.pem`,
          '-extfile', ext, '-extensions', 'v3', ...dates]);
      }
      return { cert: readFileSync(`${base}.pem`, 'utf8'), key: readFileSync(`${base}.key`, 'utf8'), certPath: `${base}.pem` };
    },
  };
}

/** Send raw bytes to a proxy on loopback and collect the reply until the connection closes. */
export function exchange(port: number, data: Buffer | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    s.on('data', (c) => (out += c.toString('latin1')));
    s.on('close', () => resolve(out));
    s.on('error', reject);
    s.write(data);
  });
}
