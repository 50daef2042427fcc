// Property test of SPEC §10 invariant 12 for echoes: a reflecting upstream hands back the request
// srt wrote (real values injected into headers, the Basic credential, the query and the body) in
// every supported form — raw, base64/base64url at every alignment, hex, JSON as common
// serializers escape it, percent-encoded — under any stack of Content-Encoding layers, chunked at
// random (and at every byte boundary for small cases). Whatever the command reads (status phrase,
// headers, body, trailers), decoded the way the echo was encoded, holds no 8-byte run of a real
// value, nor a Basic credential that decodes to one. The pipeline is the real one: exchange()
// with the credential stage.
import { Readable } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { Secret } from '../../src/credentials/plan.js';
import { CredentialStage } from '../../src/credentials/stage.js';
import { parseDomainEntry } from '../../src/proxy/domains.js';
import { exchange, Stopper, type Frontend, type Upstream } from '../../src/proxy/exchange.js';
import type { Target } from '../../src/proxy/gate.js';
import type { Header, ProxyRequest, ProxyResponse } from '../../src/proxy/pipeline.js';

const rule = (e: string) => {
  const p = parseDomainEntry(e, 'allow');
  if (!p.ok) throw new Error(p.error);
  return p.rules[0]!;
};
const hosts = [rule('api.example')];
const all = ['headers', 'query', 'body'] as const;
const SECRETS: Secret[] = [
  { label: 'GH', real: 'ghp_R3alT0kenAbCdEfGhIjKlMnOpQrStUv0123', sentinel: 'ghp_S3ntT0kenZyXwVuTsRqPoNmLkJiHgFe9876', injectHosts: hosts, injectInto: [...all], inject: true },
  { label: 'KEY', real: 'sk-live/Real+Key=With/Symbols+42', sentinel: 'sk-live/Fake+Val=Nick/Symbols+97', injectHosts: hosts, injectInto: [...all], inject: true },
  { label: 'PASS', real: 'pässwörd <&> 2024!', sentinel: 'sëntinël <&> 9876!', injectHosts: hosts, injectInto: [...all], inject: true },
];
const target: Target = { host: { host: 'api.example' }, port: 443, addresses: ['192.0.2.1'], display: 'api.example:443' };

/** Deterministic PRNG so a failure can be replayed from its seed. */
function prng(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s % n;
  };
}

const utf8Latin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
const percent = (s: string, upper: boolean) =>
  [...Buffer.from(s, 'utf8')].map((b) => (/[A-Za-z0-9\-._~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${upper ? b.toString(16).toUpperCase().padStart(2, '0') : b.toString(16).padStart(2, '0')}`)).join('');

/** Echo encodings, each with its inverse (what a reader of the echo would decode). */
type Echo = { name: string; encode: (b: Buffer) => Buffer; decode: (b: Buffer) => Buffer };
const json = (name: string, chars: RegExp | null, upper = false, slash = false): Echo => ({
  name: `json ${name}`,
  encode: (b) => {
    let out = '';
    for (const c of b.toString('utf8')) {
      for (let i = 0; i < c.length; i++) {
        const unit = c[i]!;
        if (chars?.test(unit)) out += `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')[upper ? 'toUpperCase' : 'toLowerCase']()}`;
        else if (slash && unit === '/') out += '\\/';
        else out += JSON.stringify(unit).slice(1, -1);
      }
    }
    return Buffer.from(out, 'utf8');
  },
  decode: (b) => Buffer.from(JSON.parse(`"${b.toString('utf8')}"`) as string, 'utf8'),
});
const ECHOES: Echo[] = [
  { name: 'raw', encode: (b) => b, decode: (b) => b },
  ...[0, 1, 2].flatMap((pre): Echo[] => (['base64', 'base64url'] as const).map((enc) => ({
    name: `${enc} +${pre}`,
    encode: (b) => Buffer.from(Buffer.concat([Buffer.alloc(pre, 0x2a), b]).toString(enc)),
    decode: (b) => Buffer.from(b.toString('latin1'), enc).subarray(pre),
  }))),
  { name: 'hex', encode: (b) => Buffer.from(b.toString('hex')), decode: (b) => Buffer.from(b.toString('latin1'), 'hex') },
  { name: 'HEX', encode: (b) => Buffer.from(b.toString('hex').toUpperCase()), decode: (b) => Buffer.from(b.toString('latin1'), 'hex') },
  json('std', null), json('php', null, false, true), json('python', /[\u0080-\uffff]/), json('go', /[<>&\u2028\u2029]/), json('gson', /[<>&='\u2028\u2029]/),
  json('.net', /[<>&'"+`\u0080-\uffff]/, true), json('non-alnum', /[^A-Za-z0-9]/), json('all', /[^]/), json('ALL', /[^]/, true),
  ...[true, false].map((upper): Echo => ({
    name: `percent ${upper}`,
    encode: (b) => Buffer.from(percent(b.toString('utf8'), upper)),
    decode: (b) => Buffer.from(decodeURIComponent(b.toString('latin1')), 'utf8'),
  })),
];

const LAYERS: Record<string, (b: Buffer) => Buffer> = { gzip: (b) => gzipSync(b), deflate: (b) => deflateSync(b), br: (b) => brotliCompressSync(b) };

/** Every 8-byte run of a real value (raw or percent-encoded) that its sentinel does not share (a
 *  known prefix such as `sk-live/` tells nothing). */
const RUNS = new Map<string, string>();
for (const s of SECRETS) {
  const spell = (v: string) => [utf8Latin1(v), percent(v, true), percent(v, false)];
  const sentinel = spell(s.sentinel);
  for (const [k, spelling] of spell(s.real).entries()) {
    for (let i = 0; i + 8 <= spelling.length; i++) if (!sentinel[k]!.includes(spelling.slice(i, i + 8))) RUNS.set(spelling.slice(i, i + 8), s.label);
  }
}

/** Why `text` (bytes as latin1) would hand over a real value: an 8-byte run of one, or a Basic
 *  credential that decodes to one. */
function leak(text: string, depth = 0): string | undefined {
  for (let i = 0; i + 8 <= text.length; i++) {
    const label = RUNS.get(text.slice(i, i + 8));
    if (label) return `${label}: "${text.slice(i, i + 8)}"`;
  }
  if (depth === 0) {
    for (const m of text.matchAll(/Basic ([A-Za-z0-9+/=]+)/g)) {
      const inner = leak(Buffer.from(m[1]!, 'base64').toString('latin1'), 1);
      if (inner) return `in Basic ${m[1]}: ${inner}`;
    }
  }
  return undefined;
}

/** A request as the command writes it, with sentinels in every place srt injects into. */
function commandRequest(rnd: (n: number) => number, small: boolean): ProxyRequest {
  const pick = () => SECRETS[rnd(SECRETS.length)]!.sentinel;
  const users = ['x', 'octocat', 'ab', 'user:name'];
  const headers: Header[] = [
    ['Authorization', rnd(2) ? `token ${utf8Latin1(pick())}` : `Basic ${Buffer.from(`${users[rnd(users.length)]}:${pick()}`, 'utf8').toString('base64')}`],
    ['Cookie', `k=${encodeURIComponent(pick())}; theme=dark`],
    ['X-Api-Key', utf8Latin1(pick())],
  ];
  const body = rnd(2) ? `{"key":${JSON.stringify(pick())}}` : `k=${percent(pick(), true)}&n=1`;
  if (small) return { scheme: 'https', target, method: 'GET', path: '/', authority: 'api.example', headers: [...headers.slice(0, 1), ['Cookie', 'k=1'], ['X-Api-Key', '1']], body: null, upgrade: undefined };
  return {
    scheme: 'https', target, method: 'POST', path: `/echo?q=${percent(pick(), rnd(2) === 0)}&raw=${encodeURIComponent(pick())}`,
    authority: 'api.example', headers, body: Readable.from([Buffer.from(body, 'utf8')]), upgrade: undefined,
  };
}

interface Case {
  echo: Echo;
  layers: string[][];
  /** Split points of the encoded body. */
  cuts: (n: number) => number[];
}

/** One exchange: the command's request through the stage, reflected as `c` says; what the command reads. */
async function roundTrip(stage: CredentialStage, rnd: (n: number) => number, c: Case, small = false): Promise<{ written: string; status: string; headers: Header[]; trailers: Header[]; body: Buffer }> {
  let written = '';
  const upstream: Upstream = {
    async send(req) {
      const parts: Buffer[] = [];
      for await (const chunk of req.body ?? []) parts.push(chunk as Buffer);
      written = `${req.method} ${req.path} HTTP/1.1\r\n${req.headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${Buffer.concat(parts).toString('latin1')}`;
      let body = c.echo.encode(Buffer.from(written, 'latin1'));
      for (const line of c.layers) for (const coding of line) body = LAYERS[coding]!(body);
      const cuts = c.cuts(body.length);
      const chunks = [0, ...cuts].map((from, i) => body.subarray(from, [...cuts, body.length][i]));
      const auth = req.headers.find(([k]) => k === 'Authorization')![1];
      const res: ProxyResponse = {
        status: 200,
        statusMessage: `OK ${req.headers.find(([k]) => k === 'X-Api-Key')![1]}`,
        headers: [...c.layers.map((l): Header => ['Content-Encoding', l.join(', ')]), ['X-Echo-Authorization', auth], ['Content-Length', String(body.length)]],
        body: Readable.from(chunks),
        trailers: () => [['X-Echo-Cookie', req.headers.find(([k]) => k === 'Cookie')![1]]],
      };
      return { kind: 'response', res };
    },
  };
  let settle!: (r: { status: string; headers: Header[]; trailers: () => Header[]; body: Readable | null }) => void;
  const got = new Promise<{ status: string; headers: Header[]; trailers: () => Header[]; body: Readable | null }>((r) => (settle = r));
  const front: Frontend = {
    stopper: new Stopper(),
    reply: (status, phrase, body) => settle({ status: `${status} ${phrase}`, headers: [], trailers: () => [], body: Readable.from([Buffer.from(body)]) }),
    respond: (res) => settle({ status: `${res.status} ${res.statusMessage}`, headers: res.headers, trailers: () => res.trailers(), body: res.body }),
    upgrade: () => { throw new Error('not an upgrade'); },
    reset: () => settle({ status: 'reset', headers: [], trailers: () => [], body: null }),
  };
  await exchange(front, commandRequest(rnd, small), { stages: [stage], upstream, refused: () => undefined, log: () => undefined });
  const r = await got;
  const parts: Buffer[] = [];
  for await (const chunk of r.body ?? []) parts.push(chunk as Buffer);
  return { written, status: r.status, headers: r.headers, trailers: r.trailers(), body: Buffer.concat(parts) };
}

function check(out: Awaited<ReturnType<typeof roundTrip>>, c: Case, what: string): void {
  // The upstream did get real values: the property is not vacuous.
  expect(leak(out.written), `${what}: nothing was injected`).toBeDefined();
  expect(out.status.startsWith('200 '), `${what}: ${out.status}`).toBe(true);
  for (const [k] of out.headers) expect(k.toLowerCase(), what).not.toBe('content-encoding');
  const seen = [out.status, ...[...out.headers, ...out.trailers].map(([k, v]) => `${k}: ${v}`), out.body.toString('latin1'), c.echo.decode(out.body).toString('latin1')];
  for (const text of seen) expect(leak(text), `${what}: ${text.slice(0, 300)}`).toBeUndefined();
}

describe('re-masking echoes (property)', () => {
  it('every echo form, any stack of Content-Encoding layers, any chunking: nothing the command reads holds a real value', async () => {
    const stage = new CredentialStage(SECRETS, { allowPlaintextInject: false });
    const codings = Object.keys(LAYERS);
    for (let seed = 1; seed <= 240; seed++) {
      const rnd = prng(seed * 2654435761);
      const echo = ECHOES[seed % ECHOES.length]!;
      // 0–3 layers, over one or two header lines.
      const stack = Array.from({ length: rnd(4) }, () => codings[rnd(codings.length)]!);
      const layers = stack.length > 1 && rnd(2) ? [stack.slice(0, 1), stack.slice(1)] : stack.length ? [stack] : [];
      const c: Case = { echo, layers, cuts: (n) => [...new Set(Array.from({ length: rnd(12) }, () => 1 + rnd(Math.max(1, n - 1))))].sort((a, b) => a - b).filter((x) => x < n) };
      check(await roundTrip(stage, rnd, c), c, `seed ${seed} ${echo.name} [${layers.map((l) => l.join(',')).join('|')}]`);
    }
  }, 120_000);

  it('a small echo split at every byte boundary, and byte by byte (also under gzip)', async () => {
    const stage = new CredentialStage(SECRETS, { allowPlaintextInject: false });
    for (const [i, name] of ['raw', 'base64 +0', 'base64url +1', 'base64 +2', 'hex', 'percent true', 'json std'].entries()) {
      const seed = () => prng(3 + i);
      const echo = ECHOES.find((e) => e.name === name)!;
      const length = echo.encode(Buffer.from((await roundTrip(stage, seed(), { echo, layers: [], cuts: () => [] }, true)).written, 'latin1')).length;
      for (let at = 1; at < length; at++) {
        const c: Case = { echo, layers: [], cuts: (n) => (at < n ? [at] : []) };
        check(await roundTrip(stage, seed(), c, true), c, `${name} split at ${at}`);
      }
      for (const layers of [[], [['gzip']]]) {
        const c: Case = { echo, layers, cuts: (n) => Array.from({ length: n - 1 }, (_, k) => k + 1) };
        check(await roundTrip(stage, seed(), c, true), c, `${name} ${layers.length ? 'gzip ' : ''}byte by byte`);
      }
    }
  }, 120_000);
});
