// The proxy's address guard and tunnel binding end to end (SPEC §6, invariant 4), with the real
// srt and real clients. Whatever could make srt dial an address other than this machine's
// loopback runs in a network namespace the test creates (user + net: works unprivileged) with
// only `lo` up, and names come from a private /etc/hosts or /etc/resolv.conf bound in a mount
// namespace: a build that still dials reaches nothing outside this machine.
import { execa } from 'execa';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { selfSigned, rmrf } from './proxy-fixtures.js';
import { SRT_BIN, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-guard-');
afterAll(() => tmp.cleanup());
const NODE = process.execPath;

let n = 0;
function scene() {
  const dir = join(tmp.path, `s${n++}`);
  const home = join(dir, 'home');
  const cwd = join(dir, 'work');
  mkdirSync(home, { recursive: true });
  mkdirSync(cwd);
  const read = (name: string) => (existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8') : '');
  return { dir, home, cwd, read };
}

/** A shell snippet that starts `node FILE ARGS` in the background and waits (bounded) for its `up` line. */
function server(dir: string, name: string, js: string, args: string[] = []): string {
  writeFileSync(join(dir, `${name}.js`), js);
  const out = join(dir, `${name}.out`);
  return [
    `"${NODE}" "${join(dir, `${name}.js`)}" ${args.map((a) => `'${a}'`).join(' ')} > "${out}" 2>&1 & pids="$pids $!"`,
    `for i in $(seq 300); do grep -q '^up$' "${out}" 2>/dev/null && break; sleep 0.05; done`,
  ].join('\n');
}

/** srt inside the namespace; stdout, stderr and --log go to files in the scene's directory. */
function srtLine(s: ReturnType<typeof scene>, env: Record<string, string>, args: string[], script: string): string {
  writeFileSync(join(s.dir, 'cmd.sh'), script);
  const vars = Object.entries({ PATH: process.env.PATH!, HOME: s.home, LANG: 'C.UTF-8', ...env }).map(([k, v]) => `${k}='${v}'`).join(' ');
  return `(cd "${s.cwd}" && env -i ${vars} "${NODE}" "${SRT_BIN}" --log "${join(s.dir, 'log.jsonl')}" ` +
    `${args.map((a) => `'${a}'`).join(' ')} -- sh "${join(s.dir, 'cmd.sh')}" > "${join(s.dir, 'stdout')}" 2> "${join(s.dir, 'stderr')}" || true)`;
}

/** Run `lines` in a network namespace of its own (only `lo`, brought up) with `etc` files bound over
 *  their /etc names in a mount namespace, so every resolver there (srt's, a server's) uses them. */
async function inNetns(s: ReturnType<typeof scene>, etc: Record<string, string>, lines: string[]): Promise<void> {
  const binds = Object.entries(etc).flatMap(([name, text]) => {
    writeFileSync(join(s.dir, `etc-${name}`), text);
    return ['--bind', join(s.dir, `etc-${name}`), `/etc/${name}`];
  });
  const script = ['pids=', 'ip link set lo up', ...lines, 'kill $pids 2>/dev/null || true'].join('\n');
  const r = await execa('unshare', ['-rn', 'bwrap', '--dev-bind', '/', '/', ...binds, '--', 'sh', '-c', script],
    { reject: false, env: { PATH: process.env.PATH }, timeout: 120_000 });
  expect(r.exitCode, r.stderr).toBe(0);
}

/** The --log records of a run. */
const records = (text: string) => text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { kind: string; target: string; verdict?: string; reason?: string; error?: string });

describe('cloud metadata and pod-identity endpoints', () => {
  // One name per documented endpoint (each provider's, and the IPv4-mapped, IPv4-translated and
  // NAT64 forms of some): an allowed name that resolves to one is refused with a 403 naming what
  // the address is, and nothing is dialled.
  const endpoints: Array<[string, string, string]> = [
    ['aws-imds', '169.254.169.254', 'instance metadata of AWS, GCP, Azure'],
    ['aws-imds6', 'fd00:ec2::254', 'AWS over IPv6'],
    ['eks-pod-identity', '169.254.170.23', 'AWS EKS Pod Identity'],
    ['eks-pod-identity6', 'fd00:ec2::23', 'AWS over IPv6'],
    ['ecs-task', '169.254.170.2', 'AWS ECS task metadata and credentials'],
    ['gcp6', 'fd20:ce::254', 'GCP over IPv6'],
    ['azure-wireserver', '168.63.129.16', 'Azure WireServer'],
    ['alibaba', '100.100.100.200', 'Alibaba Cloud'],
    ['alibaba6', 'fd00:100::100:200', 'Alibaba Cloud over IPv6'],
    ['oracle-classic', '192.0.0.192', 'Oracle Cloud Classic'],
    ['oracle6', 'fd00:c1::a9fe:a9fe', 'Oracle Cloud over IPv6'],
    ['scaleway', '169.254.42.42', 'Scaleway'],
    ['scaleway6', 'fd00:42::42', 'Scaleway over IPv6'],
    ['linode6', 'fd00:a9fe:a9fe::1', 'Akamai/Linode over IPv6'],
    ['tencent', '169.254.0.23', 'Tencent Cloud'],
    ['openstack6', 'fe80::a9fe:a9fe', 'OpenStack and Hetzner over IPv6'],
    ['mapped-eks', '::ffff:169.254.170.23', 'AWS EKS Pod Identity'],
    ['translated-oracle', '::ffff:0:192.0.0.192', 'Oracle Cloud Classic'],
    ['nat64-alibaba', '64:ff9b::6464:64c8', 'Alibaba Cloud'],
  ];

  it('an allowed name resolving to any of them gets a 403 naming why; no connection is attempted', async () => {
    const s = scene();
    const hosts = ['127.0.0.1 localhost', ...endpoints.map(([name, addr]) => `${addr} ${name}.test`), '192.0.2.1 control.test', ''].join('\n');
    const curl = [...endpoints.map(([name]) => name), 'control'].map((name) =>
      `echo ${name}=$(curl -s -m 20 -o /dev/null -w '%{http_code}' http://${name}.test/)`).join('\n');
    await inNetns(s, { hosts }, [srtLine(s, {}, ['--allow-domain', '*.test'], curl)]);
    const out = s.read('stdout');
    const log = records(s.read('log.jsonl'));
    for (const [name, , of] of endpoints) {
      expect(out, s.read('stderr')).toContain(`${name}=403\n`);
      expect(s.read('stderr')).toMatch(new RegExp(`srt: blocked ${name}\\.test:80 — resolves only to blocked addresses: \\S+( \\(\\S+\\))? is a cloud metadata address \\(${of.replace(/[/()]/g, '\\$&')}`));
      expect(log.filter((r) => r.kind === 'connection' && r.target === `${name}.test:80`)).toEqual([]);
    }
    // Control: an ordinary address is dialled (and, in this namespace, reaches nothing).
    expect(out).toContain('control=502\n');
    expect(log.filter((r) => r.kind === 'connection' && r.target === 'control.test:80')).toHaveLength(1);
  });
});

// A DNS server on the namespace's loopback that answers the first A query for rebind.test with
// an ordinary address and every later one with 127.0.0.1 (a rebinding name: TTL 0, the answer
// flips once a check has passed), and logs each answer.
const DNS_SERVER = `
const dgram = require('dgram'), fs = require('fs');
const [, , first, later, logFile] = process.argv;
let n = 0;
const s = dgram.createSocket('udp4');
s.on('message', (msg, from) => {
  let o = 12;
  const labels = [];
  while (msg[o] !== 0 && o < msg.length) { labels.push(msg.subarray(o + 1, o + 1 + msg[o]).toString()); o += msg[o] + 1; }
  const type = msg.readUInt16BE(o + 1);
  const question = msg.subarray(12, o + 5);
  const name = labels.join('.').toLowerCase();
  let answer = Buffer.alloc(0);
  if (name === 'rebind.test' && type === 1) {
    const addr = n++ === 0 ? first : later;
    fs.appendFileSync(logFile, addr + '\\n');
    answer = Buffer.concat([Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4]), Buffer.from(addr.split('.').map(Number))]);
  }
  const head = Buffer.alloc(12);
  head.writeUInt16BE(msg.readUInt16BE(0), 0);
  head.writeUInt16BE(name === 'rebind.test' ? 0x8180 : 0x8183, 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt16BE(answer.length ? 1 : 0, 6);
  s.send(Buffer.concat([head, question, answer]), from.port, from.address);
});
s.bind(53, '127.0.0.1', () => console.log('up'));
`;

// A corporate proxy that records every CONNECT target, resolves it with the system resolver (as
// real ones do) and connects.
const CORP_PROXY = `
const http = require('http'), net = require('net'), dns = require('dns'), fs = require('fs');
const [, , port, logFile] = process.argv;
http.createServer().on('connect', (req, client, head) => {
  fs.appendFileSync(logFile, 'CONNECT ' + req.url + '\\n');
  const i = req.url.lastIndexOf(':');
  dns.lookup(req.url.slice(0, i).replace(/^\\[|\\]$/g, ''), (err, addr) => {
    if (err) return client.end('HTTP/1.1 502 Bad Gateway\\r\\n\\r\\n');
    const up = net.connect(Number(req.url.slice(i + 1)), addr, () => {
      client.write('HTTP/1.1 200 Connection established\\r\\n\\r\\n');
      up.write(head);
      up.pipe(client).pipe(up);
    });
    up.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\\r\\n\\r\\n'));
  });
}).listen(Number(port), '127.0.0.1', () => console.log('up'));
`;

// The host's loopback service a rebinding answer points at; it logs every request.
const LOOPBACK_SERVICE = `
const http = require('http'), fs = require('fs');
const [, , port, logFile] = process.argv;
http.createServer((q, s) => { fs.appendFileSync(logFile, q.url + '\\n'); s.end('reached'); }).listen(Number(port), '127.0.0.1', () => console.log('up'));
`;

describe('a corporate proxy chained behind srt (HTTPS_PROXY set for srt)', () => {
  it('is asked for the address srt checked, never the name: a rebinding answer it would get instead never reaches the loopback', async () => {
    const s = scene();
    const proxyEnv = { HTTPS_PROXY: 'http://127.0.0.1:3130', HTTP_PROXY: 'http://127.0.0.1:3130' };
    await inNetns(s, { hosts: '127.0.0.1 localhost\n', 'resolv.conf': 'nameserver 127.0.0.1\noptions timeout:2 attempts:2\n' }, [
      server(s.dir, 'dns', DNS_SERVER, ['192.0.2.10', '127.0.0.1', join(s.dir, 'dns.log')]),
      server(s.dir, 'corp', CORP_PROXY, ['3130', join(s.dir, 'corp.log')]),
      server(s.dir, 'service', LOOPBACK_SERVICE, ['8088', join(s.dir, 'service.log')]),
      srtLine(s, proxyEnv, ['--allow-domain', 'rebind.test:8088'],
        "echo http=$(curl -s -m 20 -o /dev/null -w '%{http_code}' http://rebind.test:8088/plain); echo tunnel=$(curl -s -m 20 -p -o /dev/null -w '%{http_code}' http://rebind.test:8088/tunnel)"),
      // Control: the corporate proxy asked for the name itself resolves it to the loopback service.
      `curl -s -m 20 -p -x http://127.0.0.1:3130 http://rebind.test:8088/direct > "${join(s.dir, 'control')}" || true`,
    ]);
    // The first request passed the guard at 192.0.2.10 and the corporate proxy was asked for that
    // address (unreachable here: 502); the second one's resolution already rebound, so srt's own
    // guard refused it. The proxy never resolved the name for srt.
    expect(s.read('stdout'), s.read('stderr')).toBe('http=502\ntunnel=000\n');
    expect(s.read('corp.log')).toBe('CONNECT 192.0.2.10:8088\nCONNECT rebind.test:8088\n');
    expect(s.read('stderr')).toContain('srt: blocked rebind.test:8088 — resolves only to blocked addresses: 127.0.0.1 is a loopback address');
    expect(s.read('dns.log')).toBe('192.0.2.10\n127.0.0.1\n127.0.0.1\n');
    // Only the control, which asked the corporate proxy for the name itself, reached the service.
    expect(s.read('control')).toBe('reached');
    expect(s.read('service.log')).toBe('/direct\n');
    const log = records(s.read('log.jsonl'));
    expect(log.find((r) => r.kind === 'network' && r.verdict === 'allow')?.reason).toBe('via upstream proxy 127.0.0.1:3130');
  });
});

describe('domain fronting', () => {
  // A CONNECT to an allowed name whose ClientHello names another host: behind a CDN that routes
  // by SNI, the sandbox would reach a host the policy refused. curl --connect-to makes exactly that.
  const TLS_SERVER = `
const tls = require('tls'), fs = require('fs');
const [, , port, certFile, keyFile, logFile] = process.argv;
tls.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (s) => {
  fs.appendFileSync(logFile, (s.servername || '-') + '\\n');
  s.once('data', () => s.end('HTTP/1.1 200 OK\\r\\nContent-Length: 7\\r\\nConnection: close\\r\\n\\r\\nreached'));
}).listen(Number(port), '127.0.0.1', () => console.log('up'));
`;

  for (const terminate of [false, true]) {
    it(`the ClientHello must name the CONNECT host${terminate ? ' (TLS terminated: the Host header too)' : ' (opaque tunnel)'}`, async () => {
      const s = scene();
      const cert = selfSigned(['allowed.test', 'evil.test']);
      try {
        const settings = join(s.dir, 'settings.json');
        writeFileSync(settings, JSON.stringify({
          network: { allowedDomains: ['allowed.test:8443', '127.0.0.1:8443'], ...(terminate ? { tlsTerminate: { extraCaCertPaths: [cert.certPath] } } : {}) },
        }));
        const k = terminate ? '' : '-k';
        const script = [
          `echo fronted=$(curl -s ${k} -m 20 -o /dev/null -w '%{http_code}' --connect-to evil.test:8443:allowed.test:8443 https://evil.test:8443/)`,
          `echo plain=$(curl -s ${k} -m 20 https://allowed.test:8443/)`,
          ...(terminate ? [`echo host=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -H 'Host: evil.test:8443' https://allowed.test:8443/)`] : []),
        ].join('\n');
        await inNetns(s, { hosts: '127.0.0.1 localhost allowed.test\n' }, [
          server(s.dir, 'tls', TLS_SERVER, ['8443', join(cert.dir, 'cert.pem'), join(cert.dir, 'key.pem'), join(s.dir, 'tls.log')]),
          srtLine(s, {}, ['-s', settings], script),
        ]);
        const err = s.read('stderr');
        expect(s.read('stdout')).toBe(`fronted=000\nplain=reached\n${terminate ? 'host=403\n' : ''}`);
        expect(err).toContain('srt: blocked allowed.test:8443 — TLS server name "evil.test" is not the tunnel\'s host allowed.test:8443');
        if (terminate) expect(err).toContain('srt: blocked allowed.test:8443 — Host header "evil.test:8443" names another host than the TLS tunnel (allowed.test:8443)');
        // The server only ever saw the allowed name.
        expect(s.read('tls.log').split('\n').filter(Boolean)).toEqual(terminate ? ['allowed.test', 'allowed.test'] : ['allowed.test']);
      } finally {
        rmrf(cert.dir);
      }
    });
  }
});
