import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { Secret } from '../../src/credentials/plan.js';
import { CredentialStage, HOLD_MS, holdMs } from '../../src/credentials/stage.js';
import { RefusedError, type Header, type ProxyRequest, type ProxyResponse } from '../../src/proxy/pipeline.js';
import { parseDomainEntry } from '../../src/proxy/domains.js';

const rule = (e: string) => {
  const p = parseDomainEntry(e, 'allow');
  if (!p.ok) throw new Error(p.error);
  return p.rules[0]!;
};
const GH: Secret = { label: 'GH_TOKEN', real: 'ghp_REALREALREALREALREALREALREALREAL00', sentinel: 'ghp_SENTSENTSENTSENTSENTSENTSENTSENT11', injectHosts: [rule('api.github.com')], injectInto: ['headers'], inject: true };
const SLASHY: Secret = { label: 'KEY', real: 'real/key+with=chars0', sentinel: 'fake/abc+defg=hijkl1', injectHosts: [rule('*.example.com')], injectInto: ['headers', 'query', 'body'], inject: true };
const AWS_SECRET: Secret = { label: 'AWS_SECRET_ACCESS_KEY', real: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', sentinel: 'ab12CDefGHijK/LmnOPqr/STuvWXyz0123456789', injectHosts: [rule('*')], injectInto: ['headers'], inject: false };

const dest = (host: string, port = 443) => ({ host: { host }, port, addresses: [], display: `${host}:${port}` });
const tunnel = (host: string) => ({ target: dest(host), via: 'connect' as const });

function req(host: string, over: Partial<ProxyRequest> = {}): ProxyRequest {
  return { scheme: 'https', target: dest(host), method: 'GET', path: '/', authority: host, headers: [], body: null, upgrade: undefined, ...over };
}

/** What a reader could decode a line of an echo into: itself, base64/base64url at any start, hex, JSON. */
function decodings(line: string): string[] {
  const out = [line];
  for (let i = 0; i < 4; i++) for (const enc of ['base64', 'base64url'] as const) out.push(Buffer.from(line.slice(i), enc).toString('latin1'));
  if (/^[0-9a-f]+$/i.test(line)) out.push(Buffer.from(line, 'hex').toString('latin1'));
  try { out.push(JSON.parse(`"${line}"`) as string); } catch { /* not a JSON string's content */ }
  return out;
}

async function collect(r: Readable): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of r) parts.push(c as Buffer);
  return Buffer.concat(parts).toString();
}

function stage(opts: { plain?: boolean; secrets?: Secret[] } = {}) {
  return { s: new CredentialStage(opts.secrets ?? [GH, SLASHY, AWS_SECRET], { allowPlaintextInject: opts.plain ?? false }) };
}

describe('credential stage: injection', () => {
  it('replaces sentinels in every header value of a request to an inject host, raw, in Basic and percent-encoded', () => {
    const { s } = stage();
    const r = req('api.github.com', {
      headers: [
        ['Authorization', `token ${GH.sentinel}`],
        ['X-Bearer', `Bearer ${GH.sentinel}`],
        ['Proxy-Authorization', `Basic ${Buffer.from(`me:${GH.sentinel}`).toString('base64')}`],
        ['Authorization', `Basic ${Buffer.from(`x-access-token:${GH.sentinel}`).toString('base64')}`],
        ['Accept-Encoding', 'gzip, br'],
      ],
    });
    expect(s.request(r)).toBeUndefined();
    expect(r.headers).toEqual([
      ['Authorization', `token ${GH.real}`],
      ['X-Bearer', `Bearer ${GH.real}`],
      ['Proxy-Authorization', `Basic ${Buffer.from(`me:${GH.real}`).toString('base64')}`],
      ['Authorization', `Basic ${Buffer.from(`x-access-token:${GH.real}`).toString('base64')}`],
      ['accept-encoding', 'identity'],
    ]);
  });

  it('percent-encoded sentinels become percent-encoded real values (headers and, with "query", the target)', () => {
    const { s } = stage();
    const enc = (v: string) => encodeURIComponent(v);
    // Python's quote() leaves `/` raw.
    const quote = (v: string) => enc(v).replace(/%2F/g, '/');
    const r = req('api.example.com', { path: `/x?k=${enc(SLASHY.sentinel)}&raw=${SLASHY.sentinel}&py=${quote(SLASHY.sentinel)}`, headers: [['Cookie', `k=${enc(SLASHY.sentinel)}`]] });
    expect(s.request(r)).toBeUndefined();
    expect(r.path).toBe(`/x?k=${enc(SLASHY.real)}&raw=${SLASHY.real}&py=${quote(SLASHY.real)}`);
    expect(r.headers[0]).toEqual(['Cookie', `k=${enc(SLASHY.real)}`]);
  });

  it('only where injectInto says: without "query" the target keeps its sentinel (and is no tripwire at its own host)', () => {
    const { s } = stage();
    const r = req('api.github.com', { path: `/?t=${GH.sentinel}` });
    expect(s.request(r)).toBeUndefined();
    expect(r.path).toBe(`/?t=${GH.sentinel}`);
  });

  it('plain HTTP is not injected unless allowPlaintextInject', () => {
    const plainReq = () => req('api.github.com', { scheme: 'http', target: dest('api.github.com', 80), headers: [['Authorization', `token ${GH.sentinel}`]] });
    const a = plainReq();
    expect(stage().s.request(a)).toBeUndefined();
    expect(a.headers).toEqual([['Authorization', `token ${GH.sentinel}`]]);
    const b = plainReq();
    expect(stage({ plain: true }).s.request(b)).toBeUndefined();
    expect(b.headers).toEqual([['Authorization', `token ${GH.real}`], ['accept-encoding', 'identity']]);
  });

  it('an inject host\'s sentinel sent over plain HTTP is said at the end: not injected: plain HTTP (target, header, Basic)', () => {
    const line = `not injected: plain HTTP — GH_TOKEN's sentinel went to api.github.com:80 unchanged (srt injects only inside terminated TLS: use https://, or set credentials.allowPlaintextInject)`;
    const plain = (over: Partial<ProxyRequest>) => req('api.github.com', { scheme: 'http', target: dest('api.github.com', 80), ...over });
    for (const over of [
      { headers: [['Authorization', `token ${GH.sentinel}`]] },
      { headers: [['Authorization', `Basic ${Buffer.from(`x:${GH.sentinel}`).toString('base64')}`]] },
      { path: `/?access_token=${encodeURIComponent(GH.sentinel)}` },
    ] as Array<Partial<ProxyRequest>>) {
      const { s } = stage();
      expect(s.request(plain(over))).toBeUndefined();
      expect(s.notes(), JSON.stringify(over)).toEqual([line]);
    }
    // Nothing to say: no sentinel in it, injected (allowPlaintextInject), or over TLS.
    const quiet = [
      [stage().s, plain({ headers: [['Authorization', 'token nothing']] })],
      [stage({ plain: true }).s, plain({ headers: [['Authorization', `token ${GH.sentinel}`]] })],
      [stage().s, req('api.github.com', { headers: [['Authorization', `token ${GH.sentinel}`]] })],
    ] as const;
    for (const [s, r] of quiet) {
      s.request(r);
      expect(s.notes()).toEqual([]);
    }
  });

  it('bodies are substituted only with "body", streaming, with Content-Length kept when lengths match', async () => {
    const { s } = stage();
    const body = `{"key":"${SLASHY.sentinel}","form":"k=${encodeURIComponent(SLASHY.sentinel)}"}`;
    const r = req('up.example.com', { method: 'POST', headers: [['content-length', String(body.length)]], body: Readable.from([Buffer.from(body.slice(0, 12)), Buffer.from(body.slice(12))]) });
    expect(s.request(r)).toBeUndefined();
    expect(r.headers).toContainEqual(['content-length', String(body.length)]);
    const out = await collect(r.body!);
    expect(out).toBe(body.split(SLASHY.sentinel).join(SLASHY.real).replace(encodeURIComponent(SLASHY.sentinel), encodeURIComponent(SLASHY.real)));
    expect(out).toHaveLength(body.length);
    // GH_TOKEN has no "body": its sentinel stays as it is in a body to its own host.
    const gh = req('api.github.com', { method: 'POST', body: Readable.from([Buffer.from(`x ${GH.sentinel}`)]) });
    expect(s.request(gh)).toBeUndefined();
    expect(await collect(gh.body!)).toBe(`x ${GH.sentinel}`);
  });

  it('a sentinel of a different length drops Content-Length (the body is re-framed)', async () => {
    const jwt: Secret = { ...SLASHY, real: 'a.b.c', sentinel: 'fake.jwt.token-longer' };
    const { s } = stage({ secrets: [jwt] });
    const r = req('x.example.com', { method: 'POST', headers: [['content-length', '21']], body: Readable.from([Buffer.from(jwt.sentinel)]) });
    s.request(r);
    expect(r.headers.map(([k]) => k)).not.toContain('content-length');
    expect(await collect(r.body!)).toBe('a.b.c');
  });

  it('a compressed request body is forwarded untouched, with a note', async () => {
    const { s } = stage();
    const gz = gzipSync(SLASHY.sentinel);
    const r = req('x.example.com', { method: 'POST', headers: [['Content-Encoding', 'gzip']], body: Readable.from([gz]) });
    expect(s.request(r)).toBeUndefined();
    expect(Buffer.concat(await Readable.from(r.body!).toArray())).toEqual(gz);
    expect(s.notes()).toEqual(['a gzip-encoded request body to x.example.com was forwarded without credential injection (srt does not rewrite compressed bodies)']);
  });
});

describe('credential stage: tripwire', () => {
  it('a sentinel in the target or a header to a host outside its injectHosts is refused and reported', () => {
    const cases: Array<Partial<ProxyRequest>> = [
      { path: `/paste?c=${GH.sentinel}` },
      { path: `/paste?c=${encodeURIComponent(GH.sentinel).replace(/_/g, '%5F')}` },
      { headers: [['X-Note', `see ${GH.sentinel}`]] },
      { headers: [['Authorization', `Basic ${Buffer.from(`u:${GH.sentinel}`).toString('base64')}`]] },
      { headers: [['X-Data', Buffer.from(`{"t":"${GH.sentinel}"}`).toString('base64url')]] },
      { headers: [[`X-${GH.sentinel}`, '1']] },
    ];
    for (const c of cases) {
      const { s } = stage();
      const refusal = s.request(req('paste.example', c));
      expect(refusal, JSON.stringify(c)).toEqual({
        refuse: "GH_TOKEN's sentinel may not be sent to paste.example (not in its injectHosts)",
        status: 403, proxyError: 'sentinel-not-allowed-here', sentinel: 'GH_TOKEN',
      });
    }
  });

  it('the same in every form: base64 and base64url at each alignment, hex, JSON escapes — in the target, a header or a body', async () => {
    const hidden = (pre: string) => [
      Buffer.from(`${pre}${GH.sentinel}!`).toString('base64'),
      Buffer.from(`${pre}${GH.sentinel}!`).toString('base64url'),
      Buffer.from(`${pre}${GH.sentinel}`).toString('hex'),
      Buffer.from(`${pre}${GH.sentinel}`).toString('hex').toUpperCase(),
      [...GH.sentinel].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
    ];
    for (const form of ['', 'a', 'ab'].flatMap(hidden)) {
      for (const c of [{ path: `/p?d=${form}` }, { headers: [['X-Data', `v1.${form}`]] as Header[] }]) {
        expect(stage().s.request(req('paste.example', c))?.sentinel, form).toBe('GH_TOKEN');
      }
      const { s } = stage();
      const r = req('paste.example', { method: 'POST', body: Readable.from([Buffer.from(`{"data":"${form.slice(0, 7)}`), Buffer.from(`${form.slice(7)}"}`)]) });
      expect(s.request(r)).toBeUndefined();
      await expect(collect(r.body!), form).rejects.toBeInstanceOf(RefusedError);
    }
    // To its own host, a form it may go to is no tripwire.
    const own = req('api.github.com', { headers: [['X-Data', Buffer.from(GH.sentinel).toString('hex')]] });
    expect(stage().s.request(own)).toBeUndefined();
  });

  it('a sentinel that may go nowhere (the AWS secret key) trips even at an inject host, and says why', () => {
    const { s } = stage();
    expect(s.request(req('api.github.com', { headers: [['X', AWS_SECRET.sentinel]] }))).toEqual({
      refuse: "AWS_SECRET_ACCESS_KEY's sentinel may go nowhere, api.github.com included: an AWS secret key is only ever used to sign",
      status: 403, proxyError: 'sentinel-not-allowed-here', sentinel: 'AWS_SECRET_ACCESS_KEY', nowhere: true,
    });
  });

  it('a sentinel mid-body fails the body before its bytes are forwarded', async () => {
    const { s } = stage();
    const r = req('paste.example', { method: 'POST', body: Readable.from([Buffer.from('a'.repeat(1000) + GH.sentinel.slice(0, 10)), Buffer.from(GH.sentinel.slice(10) + 'tail')]) });
    expect(s.request(r)).toBeUndefined(); // the head is clean
    const got: Buffer[] = [];
    const err = await new Promise<Error>((resolve) => {
      r.body!.on('data', (c: Buffer) => got.push(c));
      r.body!.on('error', resolve);
    });
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as RefusedError).refusal.proxyError).toBe('sentinel-not-allowed-here');
    expect(Buffer.concat(got).toString()).toBe('a'.repeat(1000));
    expect((err as RefusedError).refusal.sentinel).toBe('GH_TOKEN');
  });

  it('a sentinel split by a pause longer than HOLD_MS is still stopped before its end leaves (body and tunnel)', async () => {
    const { s } = stage();
    const client = new Readable({ read() {} });
    const r = req('paste.example', { method: 'POST', body: client });
    expect(s.request(r)).toBeUndefined();
    const g = s.guard(tunnel('paste.example'))!;
    const ends = [() => client.push(null), () => g.end()];
    for (const [i, [stream, feed]] of ([[r.body!, (b: Buffer) => client.push(b)], [g, (b: Buffer) => g.write(b)]] as const).entries()) {
      const got: Buffer[] = [];
      const failed = new Promise<Error>((resolve) => {
        stream.on('data', (c: Buffer) => got.push(c));
        stream.on('error', resolve);
        stream.on('end', () => resolve(new Error('the stream ended without a refusal')));
      });
      // Three pieces, each pause longer than HOLD_MS: the held start goes out, the rest is watched.
      feed(Buffer.from(`x=${GH.sentinel.slice(0, 5)}`));
      await new Promise((res) => setTimeout(res, HOLD_MS + 100));
      feed(Buffer.from(GH.sentinel.slice(5, 20)));
      await new Promise((res) => setTimeout(res, HOLD_MS + 100));
      feed(Buffer.from(`${GH.sentinel.slice(20)}&tail`));
      ends[i]!();
      const err = await failed;
      expect(err).toBeInstanceOf(RefusedError);
      expect((err as RefusedError).refusal).toMatchObject({ proxyError: 'sentinel-not-allowed-here', sentinel: 'GH_TOKEN' });
      expect(Buffer.concat(got).toString()).toBe(`x=${GH.sentinel.slice(0, 20)}`);
    }
  });

  it('host names: a sentinel in any case before resolution', () => {
    const { s } = stage();
    expect(s.screenHost(`${GH.sentinel.toLowerCase()}.evil.example`, 443)).toMatchObject({ proxyError: 'sentinel-not-allowed-here', sentinel: 'GH_TOKEN' });
    expect(s.screenHost('api.github.com', 443)).toBeUndefined();
  });

  it('opaque tunnels: plaintext scanned throughout; TLS up to the end of the ClientHello (SNI), without case', async () => {
    const { s } = stage();
    const run = async (chunks: Buffer[]) => {
      const g = s.guard(tunnel('paste.example'))!;
      const out: Buffer[] = [];
      g.on('data', (c: Buffer) => out.push(c));
      const err = new Promise<Error | undefined>((resolve) => { g.on('error', resolve); g.on('end', () => resolve(undefined)); });
      for (const c of chunks) g.write(c);
      g.end();
      return { err: await err, out: Buffer.concat(out) };
    };
    const plain = await run([Buffer.from(`POST / HTTP/1.1\r\n\r\n${GH.sentinel.slice(0, 5)}`), Buffer.from(GH.sentinel.slice(5))]);
    expect(plain.err).toBeInstanceOf(RefusedError);
    expect(plain.out.toString()).not.toContain('ghp_S');
    const record = (payload: Buffer) => Buffer.concat([Buffer.from([0x16, 0x03, 0x01, payload.length >> 8, payload.length & 255]), payload]);
    const hello = record(Buffer.from(`\x01\x00\x00\x00sni:${GH.sentinel.toLowerCase()}.evil.example`, 'latin1'));
    expect((await run([hello.subarray(0, 20), hello.subarray(20)])).err).toBeInstanceOf(RefusedError);
    const clean = record(Buffer.from('\x01\x00\x00\x00sni:paste.example', 'latin1'));
    const after = await run([clean, Buffer.from(`encrypted ${GH.sentinel}`)]);
    expect(after.err).toBeUndefined(); // past the ClientHello srt sees only ciphertext and passes it on
    // SSH: the identification line and key exchange offer are checked, the encrypted rest is not.
    expect((await run([Buffer.from(`SSH-2.0-${GH.sentinel}\r\n`)])).err).toBeInstanceOf(RefusedError);
    expect((await run([Buffer.from('SSH-2.0-OpenSSH_9.2\r\n'), Buffer.from(`x ${GH.sentinel}`)])).err).toBeUndefined();
    expect(s.guard(tunnel('api.github.com'))).toBeDefined(); // the AWS secret is foreign everywhere
    expect(stage({ secrets: [GH] }).s.guard(tunnel('api.github.com'))).toBeUndefined();
  });

  it('the plaintext of an opaque tunnel is watched for the spellings only: a prefix of another form at the end of a message is not held', async () => {
    const { s } = stage();
    const hex = Buffer.from(GH.sentinel).toString('hex');
    const g = s.guard(tunnel('paste.example'))!;
    const out: string[] = [];
    g.on('data', (c: Buffer) => out.push(c.toString()));
    g.write(Buffer.from(`SELECT ${hex.slice(0, 6)}`)); // a database's query, then it waits for the answer
    await new Promise((r) => setTimeout(r, 20));
    expect(out.join('')).toBe(`SELECT ${hex.slice(0, 6)}`);
    g.destroy();
  });

  it('a slow reader is no pause of the sender: a sentinel split across chunks is still substituted', async () => {
    const { s } = stage();
    const body = new Readable({ read() {} });
    const r = req('x.example.com', { method: 'POST', body });
    s.request(r);
    body.push(Buffer.from(`k=${SLASHY.sentinel.slice(0, 6)}`));
    // Nothing reads the substituted body for several HOLD_MS: backpressure, not an idle sender.
    await new Promise((res) => setTimeout(res, HOLD_MS * 3));
    body.push(Buffer.from(`${SLASHY.sentinel.slice(6)}&x`));
    body.push(null);
    expect(await collect(r.body!)).toBe(`k=${SLASHY.real}&x`);
  });

  it('a stall of srt itself is no pause of the sender: input waiting in the socket is read before held bytes go', async () => {
    const { s } = stage();
    let far!: Socket;
    const server = createNetServer((c) => { far = c; });
    await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
    const near = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await new Promise((res) => near.once('connect', res));
    const r = req('x.example.com', { method: 'POST', body: near });
    s.request(r);
    const out: Buffer[] = [];
    r.body!.on('data', (c: Buffer) => out.push(c));
    far.write(`k=${SLASHY.sentinel.slice(0, 6)}`);
    await new Promise((res) => setTimeout(res, 20));
    // The rest reaches the socket while the whole process is busy past HOLD_MS: the next turn of
    // the event loop runs the expired timer before it reads the socket.
    await new Promise<void>((res) => setImmediate(() => {
      far.write(`${SLASHY.sentinel.slice(6)}&x`);
      const until = Date.now() + HOLD_MS + 100;
      while (Date.now() < until) { /* busy */ }
      res();
    }));
    far.end();
    await new Promise((res) => r.body!.once('end', res));
    server.close();
    expect(Buffer.concat(out).toString()).toBe(`k=${SLASHY.real}&x`);
  });

  it('bytes that could begin a sentinel are held at most HOLD_MS, then forwarded', async () => {
    const { s } = stage();
    const g = s.guard(tunnel('paste.example'))!;
    const out: string[] = [];
    g.on('data', (c: Buffer) => out.push(c.toString()));
    g.write(Buffer.from('ping ghp_'));
    await new Promise((r) => setTimeout(r, 10));
    expect(out.join('')).toBe('ping ');
    await new Promise((r) => setTimeout(r, HOLD_MS + 20));
    expect(out.join('')).toBe('ping ghp_');
    g.destroy();
  });
});

describe('credential stage: responses', () => {
  it('real values in headers and body become sentinels again, streamed, Content-Length kept', async () => {
    const { s } = stage();
    const request = req('api.github.com', { headers: [['Authorization', `token ${GH.sentinel}`]] });
    s.request(request);
    const body = `{"echo":"${GH.real}","key":"${encodeURIComponent(SLASHY.real)}"}`;
    const res: ProxyResponse = { trailers: () => [], status: 200, statusMessage: 'OK', headers: [['X-Echo', GH.real], ['content-length', String(body.length)]], body: Readable.from([Buffer.from(body.slice(0, 15)), Buffer.from(body.slice(15))]) };
    expect(s.response(res, request)).toBeUndefined();
    expect(res.headers).toEqual([['X-Echo', GH.sentinel], ['content-length', String(body.length)]]);
    const out = await collect(res.body!);
    expect(out).not.toContain(GH.real);
    expect(out).toBe(`{"echo":"${GH.sentinel}","key":"${encodeURIComponent(SLASHY.sentinel)}"}`);
  });

  it('the Basic credential srt wrote comes back as the one the command sent, in this response and later ones', async () => {
    const { s } = stage();
    const sent = Buffer.from(`octocat:${GH.sentinel}`).toString('base64');
    const request = req('api.github.com', { headers: [['Authorization', `Basic ${sent}`]] });
    s.request(request);
    const written = request.headers[0]![1].slice('Basic '.length);
    expect(Buffer.from(written, 'base64').toString()).toBe(`octocat:${GH.real}`);
    const echo = (over: Partial<ProxyResponse> = {}): ProxyResponse => ({
      trailers: () => [['X-Trailer', `Basic ${written}`]], status: 200, statusMessage: 'OK',
      headers: [['X-Echo', `Basic ${written}`]], body: Readable.from([Buffer.from(`{"authorization":"Basic ${written}","hex":"${Buffer.from(written).toString('hex')}"}`)]), ...over,
    });
    const res = echo();
    s.response(res, request);
    expect(res.headers).toEqual([['X-Echo', `Basic ${sent}`]]);
    expect(await collect(res.body!)).toBe(`{"authorization":"Basic ${sent}","hex":"${Buffer.from(sent).toString('hex')}"}`);
    expect(res.trailers()).toEqual([['X-Trailer', `Basic ${sent}`]]);
    // A later request that carries nothing reads back what the first one left there.
    const later = req('api.github.com', { path: '/last-request' });
    s.request(later);
    const again = echo();
    s.response(again, later);
    expect(await collect(again.body!)).toContain(`"Basic ${sent}"`);
  });

  it('every form an echo takes: base64 and base64url at each alignment, hex in both cases, JSON escapes', async () => {
    const { s } = stage();
    const request = req('api.github.com', { headers: [['Authorization', `token ${GH.sentinel}`]] });
    s.request(request);
    const forms = [
      ...['', 'a', 'ab'].flatMap((pre) => [Buffer.from(`${pre}${GH.real}.`).toString('base64'), Buffer.from(`${pre}${GH.real}.`).toString('base64url')]),
      Buffer.from(GH.real).toString('hex'), Buffer.from(GH.real).toString('hex').toUpperCase(),
      [...GH.real].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
      JSON.stringify(SLASHY.real).replace(/\//g, '\\/'),
      SLASHY.real.replace(/=/g, '\\u003d'), // Gson
      SLASHY.real.replace(/\+/g, '\\u002B'), // .NET
    ];
    const body = forms.join('\n');
    const res: ProxyResponse = { trailers: () => [], status: 200, statusMessage: 'OK', headers: [], body: Readable.from([Buffer.from(body)]) };
    s.response(res, request);
    const out = (await collect(res.body!)).split('\n');
    expect(out).toHaveLength(forms.length);
    for (const [i, line] of out.entries()) {
      expect(line, forms[i]).not.toBe(forms[i]);
      expect(line).toHaveLength(forms[i]!.length);
      for (const real of [GH.real, SLASHY.real]) expect(decodings(line).some((d) => d.includes(real.slice(1, -1))), line).toBe(false);
    }
  });

  it('a response from a host no real value goes to is re-masked in the spellings only, so a prefix of another form is not held', async () => {
    const { s } = stage();
    const other = req('paste.example');
    s.request(other);
    const body = new Readable({ read() {} });
    const res: ProxyResponse = { trailers: () => [], status: 200, statusMessage: 'OK', headers: [], body };
    s.response(res, other);
    const out: string[] = [];
    res.body!.on('data', (c: Buffer) => out.push(c.toString()));
    const prefix = Buffer.from(GH.real).toString('hex').slice(0, 6);
    body.push(Buffer.from(`event ${prefix}`));
    await new Promise((r) => setTimeout(r, 20));
    expect(out.join('')).toBe(`event ${prefix}`);
    body.push(Buffer.from(` raw ${GH.real}`));
    body.push(null);
    await new Promise((r) => res.body!.once('end', r));
    expect(out.join('')).toBe(`event ${prefix} raw ${GH.sentinel}`);
  });

  it('any stack of Content-Encoding layers is decoded first; one srt cannot decode is refused; hosts no real value goes to pass theirs', async () => {
    const { s } = stage();
    const request = req('api.github.com');
    s.request(request);
    const text = `token=${GH.real}`;
    const layered: Array<[Header[], Buffer]> = [
      [[['Content-Encoding', 'gzip']], gzipSync(text)],
      [[['Content-Encoding', 'gzip'], ['Content-Encoding', 'gzip']], gzipSync(gzipSync(text))],
      [[['Content-Encoding', 'gzip, br']], brotliCompressSync(gzipSync(text))],
      [[['Content-Encoding', 'deflate'], ['Content-Encoding', 'identity, x-gzip']], gzipSync(deflateSync(text))],
      [[['Content-Encoding', 'BR ']], brotliCompressSync(text)],
    ];
    for (const [headers, body] of layered) {
      const res: ProxyResponse = { trailers: () => [], status: 200, statusMessage: 'OK', headers: [...headers, ['Content-Length', String(body.length)]], body: Readable.from([body]) };
      expect(s.response(res, request)).toBeUndefined();
      expect(res.headers).toEqual([]);
      expect(await collect(res.body!), JSON.stringify(headers)).toBe(`token=${GH.sentinel}`);
    }
    for (const coding of ['zstd', 'gzip, compress', 'toString']) {
      const res: ProxyResponse = { trailers: () => [], status: 200, statusMessage: 'OK', headers: [['Content-Encoding', coding]], body: Readable.from([Buffer.from('x')]) };
      expect(s.response(res, request), coding).toMatchObject({ status: 502, proxyError: 'unreadable-response', refuse: expect.stringContaining('srt decodes gzip, deflate, br') });
    }
    // A corrupt layer fails the body (the client's stream is reset), it is never passed on.
    const corrupt: ProxyResponse = { trailers: () => [], status: 200, statusMessage: 'OK', headers: [['Content-Encoding', 'gzip']], body: Readable.from([gzipSync(text).subarray(0, 12)]) };
    s.response(corrupt, request);
    await expect(collect(corrupt.body!)).rejects.toThrow();
    // No real value goes to paste.example: its compressed answer passes as it is.
    const other = req('paste.example');
    s.request(other);
    const gz = gzipSync('opaque');
    const untouched: ProxyResponse = { trailers: () => [], status: 200, statusMessage: 'OK', headers: [['Content-Encoding', 'gzip']], body: Readable.from([gz]) };
    s.response(untouched, other);
    expect(untouched.headers).toEqual([['Content-Encoding', 'gzip']]);
    expect(Buffer.concat(await untouched.body!.toArray())).toEqual(gz);
  });

  it('SRT_CREDENTIAL_HOLD_MS sets the hold within 50-10000 ms; anything else keeps 250', () => {
    expect(holdMs(undefined)).toBe(250);
    expect(holdMs('5000')).toBe(5000);
    for (const bad of ['', '49', '10001', '1e3x', '2.5', '-1']) expect(holdMs(bad), bad).toBe(250);
  });
});
