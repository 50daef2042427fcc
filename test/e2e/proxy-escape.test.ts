// Red-team regressions for the network path (SPEC §10 invariants 3 and 4), from INSIDE the real
// sandbox: a hostile client speaks raw HTTP and SOCKS5 to the relays (127.0.0.1:3128 / :1080)
// and tries to make the proxy dial a destination the policy does not allow — keep-alive and
// pipelining across hosts, request smuggling, IP spellings against a deny entry, tunnels inside
// tunnels, upgrades, proxy loops, SOCKS commands and auth methods. Loopback only: the allowed
// server and the denied one listen on 127.0.0.2, an unlisted one on 127.0.0.3; the denied and
// unlisted servers count every connection and must end with zero.
import http from 'node:http';
import type { Socket } from 'node:net';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeServer, listenOn } from './proxy-fixtures.js';
import { keyValues, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-proxy-escape-');
const home = join(tmp.path, 'home');
const cwd = join(tmp.path, 'work');
let allowed: http.Server, denied: http.Server, unlisted: http.Server;
let A = 0, D = 0, O = 0;
let deniedHits = 0, unlistedHits = 0;
const allowedOpen = new Set<Socket>();

beforeAll(async () => {
  mkdirSync(home);
  mkdirSync(cwd);
  allowed = http.createServer((req, res) => {
    // /open: upstream connections the proxy still holds to this server, besides this one.
    if (req.url === '/open') res.end(`${allowedOpen.size - 1}\n`);
    else res.end(`allowed ${req.method} ${req.url}\n`);
  });
  allowed.on('connection', (s: Socket) => {
    allowedOpen.add(s);
    s.on('close', () => allowedOpen.delete(s));
  });
  // A CONNECT that reaches the allowed server through a tunnel is answered but goes nowhere.
  allowed.on('connect', (_req, s: Socket) => s.end('HTTP/1.1 405 Not A Proxy\r\nContent-Length: 0\r\n\r\n'));
  A = await listenOn(allowed, '127.0.0.2');
  const counting = (count: () => void) => {
    const s = http.createServer((_req, res) => res.end('MUST NOT BE REACHED\n'));
    s.on('connection', count);
    return s;
  };
  denied = counting(() => deniedHits++);
  D = await listenOn(denied, '127.0.0.2');
  unlisted = counting(() => unlistedHits++);
  O = await listenOn(unlisted, '127.0.0.3');
});

afterAll(async () => {
  await Promise.all([allowed, denied, unlisted].filter(Boolean).map(closeServer));
  tmp.cleanup();
});

/** Run a Python script in the sandbox; it prints `name=value` lines. */
async function inSandbox(script: string, settings: object) {
  const settingsFile = join(tmp.path, `settings-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(settingsFile, JSON.stringify(settings));
  writeFileSync(join(cwd, 'probe.py'), script);
  const r = await srt(['--settings', settingsFile, '--', 'python3', 'probe.py'], { home, cwd, timeout: 110_000 });
  return { ...r, results: keyValues(r.stdout) };
}

// Shared Python helpers: `http(data)` → the status lines seen (joined by `|`), `socks(...)` → reply.
const PY_HELPERS = String.raw`
import socket, struct
def statuses(text):
    return [l.split(' ')[1] for l in text.splitlines() if l.startswith('HTTP/1.')]
def raw(data, port=3128, wait=3, first=30, answers=0):
    # Until the proxy closes, or goes quiet for wait seconds once it has answered, with at least
    # answers HTTP status lines (up to first seconds for each byte before that): a loaded machine
    # answers late, never wrongly.
    s = socket.create_connection(('127.0.0.1', port), timeout=30)
    s.sendall(data if isinstance(data, bytes) else data.encode('latin1'))
    s.settimeout(first); out = b''
    try:
        while True:
            d = s.recv(65536)
            if not d: break
            out += d
            if len(statuses(out.decode('latin1'))) >= answers: s.settimeout(wait)
    except Exception: pass
    s.close(); return out.decode('latin1')
def http(data, **kw):
    return '|'.join(statuses(raw(data, **kw))) or 'none'
def socks(req, greet=b'\x05\x01\x00'):
    s = socket.create_connection(('127.0.0.1', 1080), timeout=5); s.settimeout(3)
    try:
        s.sendall(greet); g = s.recv(2)
        if g[1:2] != b'\x00': return 'method-' + str(g[1]) if len(g) == 2 else 'closed'
        s.sendall(req); r = s.recv(10)
        return str(r[1]) if len(r) > 1 else 'closed'
    except Exception as e: return type(e).__name__
    finally: s.close()
def run_all(checks):
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(16) as pool:
        done = {k: pool.submit(f) for k, f in checks}
    for k, f in done.items(): print('%s=%s' % (k, f.result()))
def socks_v4(a, b, c, d, port): return b'\x05\x01\x00\x01' + bytes([a, b, c, d]) + struct.pack('>H', port)
def socks_name(name, port): return b'\x05\x01\x00\x03' + bytes([len(name)]) + name.encode() + struct.pack('>H', port)
`;

describe('network escapes through the proxy are refused (regressions)', () => {
  it('HTTP: keep-alive and pipelining across hosts, smuggling, odd targets, tunnels in tunnels, upgrades, loops', async () => {
    const a = `127.0.0.2:${A}`, d = `127.0.0.2:${D}`, o = `127.0.0.3:${O}`;
    const get = (target: string, extra = '') => `GET ${target} HTTP/1.1\\r\\nHost: x\\r\\n${extra}\\r\\n`;
    const checks: Record<string, string> = {
      // One client connection, allowed first: the next requests must be judged, not reuse the upstream.
      keepalive: `"${get(`http://${a}/1`)}${get(`http://${d}/2`)}${get(`http://${o}/3`)}${get(`http://${a}/4`)}"`,
      origin_after: `"${get(`http://${a}/1`)}GET /2 HTTP/1.1\\r\\nHost: ${d}\\r\\n\\r\\n"`,
      cl_te: `"POST http://${a}/ HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 50\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n${get(`http://${d}/smuggled`)}"`,
      dup_cl: `"POST http://${a}/ HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 0\\r\\nContent-Length: 50\\r\\n\\r\\n${get(`http://${d}/smuggled`)}"`,
      te_chunked_identity: `"POST http://${a}/ HTTP/1.1\\r\\nHost: x\\r\\nTransfer-Encoding: chunked, identity\\r\\n\\r\\n0\\r\\n\\r\\n"`,
      obs_fold: `"GET http://${a}/ HTTP/1.1\\r\\nHost: x\\r\\nX: a\\r\\n b\\r\\n\\r\\n${get(`http://${d}/`)}"`,
      cr_only: `"GET http://${a}/ HTTP/1.1\\rHost: x\\r\\rGET http://${d}/ HTTP/1.1\\r\\r"`,
      http10: `"GET http://${d}/ HTTP/1.0\\r\\n\\r\\n"`,
      no_version: `"GET http://${d}/\\r\\n\\r\\n"`,
      h2_preface: `"PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"`,
      options_star: `"OPTIONS * HTTP/1.1\\r\\nHost: ${d}\\r\\n\\r\\n"`,
      authority_form_get: `"GET ${d} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n"`,
      userinfo_port: `"${get(`http://${a}@127.0.0.2:${D}/`)}"`,
      query_at: `"${get(`http://${d}?@${a}/`)}"`,
      backslash_at: `"${get(`http://${a}\\\\@127.0.0.3:${O}/`)}"`,
      pct_host: `"${get(`http://127.0.0.%33:${O}/`)}"`,
      nul_host: `"${get(`http://127.0.0.3%00.x:${O}/`)}"`,
      zone_id: `"${get(`http://[::ffff:127.0.0.3%25lo]:${O}/`)}"`,
      leading_zero_port: `"${get(`http://127.0.0.2:0${A}/`)}"`,
      many_headers: `"GET http://${d}/ HTTP/1.1\\r\\n" + "X: y\\r\\n" * 3000 + "\\r\\n"`,
      ws_upgrade: `"${get(`http://${d}/ws`, 'Upgrade: websocket\\r\\nConnection: Upgrade\\r\\n')}"`,
      ws_upgrade_origin: `"GET /ws HTTP/1.1\\r\\nHost: ${d}\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\n\\r\\n"`,
      // A CONNECT line inside an allowed tunnel reaches the allowed server, never the proxy again.
      connect_in_connect: `"CONNECT ${a} HTTP/1.1\\r\\n\\r\\nCONNECT ${d} HTTP/1.1\\r\\n\\r\\n"`,
      connect_after_get: `"${get(`http://${a}/1`)}CONNECT ${d} HTTP/1.1\\r\\n\\r\\n"`,
      connect_absolute: `"CONNECT http://${d}/ HTTP/1.1\\r\\n\\r\\n"`,
      connect_proxy_loop: `"CONNECT 127.0.0.1:3128 HTTP/1.1\\r\\n\\r\\n"`,
      connect_socks_loop: `"CONNECT 127.0.0.1:1080 HTTP/1.1\\r\\n\\r\\n"`,
      connect_unix_path: `"CONNECT /proc/self/cwd:80 HTTP/1.1\\r\\n\\r\\n"`,
    };
    const expected: Record<string, string> = {
      keepalive: '200|403|403|200',
      origin_after: '200|400',
      cl_te: '400',
      dup_cl: '400',
      te_chunked_identity: '400',
      obs_fold: '400',
      cr_only: '400',
      http10: '403',
      no_version: '403',
      h2_preface: '400',
      options_star: '400',
      authority_form_get: '400',
      userinfo_port: '400',
      query_at: '403',
      backslash_at: '400',
      pct_host: '403',
      nul_host: '403',
      zone_id: '403',
      leading_zero_port: '400',
      many_headers: '400',
      ws_upgrade: '403',
      ws_upgrade_origin: '400',
      connect_in_connect: '200|405',
      // The CONNECT is answered only after the GET's response is out: both arrive, in order.
      connect_after_get: '200|403',
      connect_absolute: '400',
      connect_proxy_loop: '403',
      connect_socks_loop: '403',
      connect_unix_path: '403',
    };
    // Each probe reads until it has as many answers as expected (then 3 s more: one too many fails).
    const script = `${PY_HELPERS}run_all([\n${Object.entries(checks).map(([k, v]) => `  ('${k}', lambda: http(${v}, answers=${expected[k]!.split('|').length})),`).join('\n')}\n])\n`;
    const r = await inSandbox(script, { network: { allowedDomains: [`127.0.0.2:${A}`] } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.results).toEqual(expected);
    expect(deniedHits).toBe(0);
    expect(unlistedHits).toBe(0);
  }, 120_000); // a loaded machine: each probe may wait for its answers (see raw)

  it('a deny entry holds against every spelling of its address, over HTTP, CONNECT and SOCKS5; SOCKS refuses other commands and auth', async () => {
    const spellings = ['127.0.0.2', '2130706434', '127.2', '0x7f.0.0.2', '0177.0.0.2', '127.000.000.002', '127.0.0.2.',
      '[::ffff:127.0.0.2]', '[::ffff:7f00:2]', '[::127.0.0.2]', '[64:ff9b::7f00:2]', '[2002:7f00:2::]'];
    const script = PY_HELPERS + String.raw`
spellings = ${JSON.stringify(spellings)}
checks = []
for i, h in enumerate(spellings):
    checks.append(('http%d' % i, lambda h=h: http('GET http://%s:${D}/ HTTP/1.1\r\nHost: x\r\n\r\n' % h)))
    checks.append(('connect%d' % i, lambda h=h: http('CONNECT %s:${D} HTTP/1.1\r\n\r\n' % h)))
    checks.append(('socksname%d' % i, lambda h=h: socks(socks_name(h.strip('[]'), ${D}))))
checks += [
    ('socks_v4', lambda: socks(socks_v4(127, 0, 0, 2, ${D}))),
    ('socks_v6_mapped', lambda: socks(b'\x05\x01\x00\x04' + bytes(10) + b'\xff\xff' + bytes([127, 0, 0, 2]) + struct.pack('>H', ${D}))),
    ('socks_v6_nat64', lambda: socks(b'\x05\x01\x00\x04' + bytes([0, 0x64, 0xff, 0x9b]) + bytes(8) + bytes([127, 0, 0, 2]) + struct.pack('>H', ${D}))),
    ('socks_unlisted', lambda: socks(socks_v4(127, 0, 0, 3, ${O}))),
    ('socks_bind', lambda: socks(b'\x05\x02\x00\x01' + bytes([127, 0, 0, 2]) + struct.pack('>H', ${A}))),
    ('socks_udp', lambda: socks(b'\x05\x03\x00\x01' + bytes(4) + struct.pack('>H', 0))),
    ('socks_userpass_only', lambda: socks(b'', greet=b'\x05\x01\x02')),
    ('socks_gssapi_only', lambda: socks(b'', greet=b'\x05\x01\x01')),
    ('socks4', lambda: raw(b'\x04\x01' + struct.pack('>H', ${D}) + bytes([127, 0, 0, 2]) + b'u\x00', port=1080) or 'closed'),
    ('socks4a', lambda: raw(b'\x04\x01' + struct.pack('>H', ${D}) + bytes([0, 0, 0, 1]) + b'u\x00127.0.0.2\x00', port=1080) or 'closed'),
    ('socks_allowed', lambda: socks(socks_v4(127, 0, 0, 2, ${A}))),
    ('http_allowed', lambda: http('GET http://127.0.0.2:${A}/ HTTP/1.1\r\nHost: x\r\n\r\n')),
]
run_all(checks)
`;
    const r = await inSandbox(script, { network: { allowedDomains: ['127.0.0.2'], deniedDomains: [`127.0.0.2:${D}`] } });
    expect(r.exitCode, r.stderr).toBe(0);
    const expected: Record<string, string> = {
      socks_v4: '2', socks_v6_mapped: '2', socks_v6_nat64: '2', socks_unlisted: '2',
      socks_bind: '7', socks_udp: '7', socks_userpass_only: 'method-255', socks_gssapi_only: 'method-255',
      socks4: 'closed', socks4a: 'closed', socks_allowed: '0', http_allowed: '200',
    };
    spellings.forEach((_h, i) => Object.assign(expected, { [`http${i}`]: '403', [`connect${i}`]: '403', [`socksname${i}`]: '2' }));
    expect(r.results).toEqual(expected);
    expect(r.stderr).toContain(`srt: blocked 127.0.0.2:${D} — denied by network.deniedDomains (127.0.0.2:${D})`);
    expect(r.stderr).toContain(`srt: blocked [64:ff9b::7f00:2]:${D} — denied by network.deniedDomains (127.0.0.2:${D})`);
    expect(deniedHits).toBe(0);
    expect(unlistedHits).toBe(0);
  }, 120_000); // a loaded machine: each probe may wait for its answers (see raw)

  it('deniedResolvedAddresses beats an IP-literal allow; `*` opens no loopback; tunnels a client drops are freed', async () => {
    const script = PY_HELPERS + String.raw`
import time
print('literal_in_denied_range=' + http('GET http://127.0.0.3:${O}/ HTTP/1.1\r\nHost: x\r\n\r\n'))
print('star_loopback=' + http('GET http://127.0.0.2:${D}/ HTTP/1.1\r\nHost: x\r\n\r\n'))
print('star_localhost=' + http('CONNECT localhost:${O} HTTP/1.1\r\n\r\n'))
print('star_socks_loopback=' + socks(socks_name('localhost', ${O})))
# Twenty tunnels to the allowed server, opened then dropped (one without ever sending a byte).
tunnels = []
for i in range(20):
    s = socket.create_connection(('127.0.0.1', 3128), timeout=5)
    s.sendall(b'CONNECT 127.0.0.2:${A} HTTP/1.1\r\n\r\n')
    tunnels.append(s)
for s in tunnels: s.recv(100)
for s in tunnels: s.close()
for i in range(50):
    left = raw('GET http://127.0.0.2:${A}/open HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').split('\r\n\r\n', 1)[-1].strip()
    if left == '0': break
    time.sleep(0.1)
print('tunnels_left=' + left)
`;
    const r = await inSandbox(script, {
      network: {
        allowedDomains: ['*', `127.0.0.2:${A}`, `127.0.0.3:${O}`],
        deniedResolvedAddresses: ['127.0.0.3/32'],
      },
    });
    expect(r.exitCode, r.stderr).toBe(0);
    // `127.0.0.3:O` is an explicit IP-literal allow, yet 127.0.0.3 is in deniedResolvedAddresses:
    // the deny list wins for literals too. `*` is not an IP-literal entry: loopback stays closed.
    expect(r.results).toEqual({
      literal_in_denied_range: '403',
      star_loopback: '403',
      star_localhost: '403',
      star_socks_loopback: '2',
      tunnels_left: '0',
    });
    expect(r.stderr).toMatch(new RegExp(`srt: blocked 127\\.0\\.0\\.3:${O} — .*deniedResolvedAddresses`));
    expect(r.stderr).toMatch(new RegExp(`srt: blocked 127\\.0\\.0\\.2:${D} — .*loopback`));
    expect(deniedHits).toBe(0);
    expect(unlistedHits).toBe(0);
  }, 120_000); // a loaded machine: each probe may wait for its answers (see raw)
});
