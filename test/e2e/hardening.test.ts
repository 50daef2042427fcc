// Hardening (issue: address guard, cleanup, other runs' files, …), end to end with the real srt.
import { execa } from 'execa';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SRT_BIN, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-hardening-');
afterAll(() => tmp.cleanup());

describe("the resolved-address guard knows every address of this host", () => {
  it('an allowed name resolving to an interface that is up without a carrier (docker0-like) is refused', async () => {
    // A network namespace of this test's own (user + net, works unprivileged): v0 is up, its veth
    // peer is down, so v0 has no carrier; Node's os.networkInterfaces() does not list it, the
    // kernel accepts connections to its address all the same.
    const home = join(tmp.path, 'home');
    mkdirSync(home, { recursive: true });
    const hosts = join(tmp.path, 'hosts');
    writeFileSync(hosts, '127.0.0.1 localhost\n10.99.0.1 nocarrier.test\n');
    const script = [
      'set -e',
      'ip link set lo up',
      'ip link add v0 type veth peer name v1',
      'ip addr add 10.99.0.1/24 dev v0',
      'ip link set v0 up',
      // The service on that address, and proof that it answers directly.
      `"${process.execPath}" -e "require('http').createServer((q, s) => s.end('reached')).listen(8099, '10.99.0.1', () => console.log('up'))" > "${tmp.path}/server.out" &`,
      'server=$!',
      'for i in $(seq 100); do grep -q up "' + tmp.path + '/server.out" 2>/dev/null && break; sleep 0.05; done',
      `echo direct=$(curl -s --max-time 5 http://10.99.0.1:8099/)`,
      `echo unlisted=$("${process.execPath}" -e "console.log(Object.keys(require('os').networkInterfaces()).includes('v0'))")`,
      // srt with that name allowed; the proxy resolves it from the hosts file bound over /etc/hosts.
      `bwrap --dev-bind / / --bind "${hosts}" /etc/hosts -- env HOME="${home}" PATH="$PATH" "${process.execPath}" "${SRT_BIN}" --allow-domain nocarrier.test -c "echo proxied=\\$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' http://nocarrier.test:8099/); echo connect=\\$(curl -s -p --max-time 5 http://nocarrier.test:8099/ || echo refused); echo socks=\\$(curl -s --max-time 5 --socks5-hostname 127.0.0.1:1080 http://nocarrier.test:8099/ || echo refused)" || true`,
      'kill $server',
    ].join('\n');
    const r = await execa('unshare', ['-rn', 'sh', '-c', script], { reject: false, cwd: tmp.path, env: { PATH: process.env.PATH }, timeout: 60_000 });
    expect(r.stdout).toContain('direct=reached');
    expect(r.stdout).toContain('unlisted=false');
    expect(r.stdout).toContain('proxied=403');
    expect(r.stdout).toContain('connect=refused');
    expect(r.stdout).toContain('socks=refused');
    expect(r.stderr).toContain('srt: blocked nocarrier.test:8099 — resolves only to blocked addresses: 10.99.0.1 is an address of this host');
  });
});
