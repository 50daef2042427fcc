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
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
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
