// A bounded, strict reader for the first flight of a TLS client (RFC 8446 §4.1.2, RFC 6066 §3,
// RFC 7301): enough to learn the SNI name and the ALPN list before deciding how to terminate.
// Pure: it never throws on hostile input, and it tells "need more bytes" from "not valid".

export type HelloResult =
  | { status: 'incomplete' }
  | { status: 'ok'; sni?: string; alpn?: string[] }
  | { status: 'invalid'; reason: string };

/** More than any real ClientHello (post-quantum key shares included); larger is refused. */
export const MAX_CLIENT_HELLO = 32 * 1024;

const RECORD_HANDSHAKE = 0x16;
const HANDSHAKE_CLIENT_HELLO = 1;
const EXT_SNI = 0;
const EXT_ALPN = 16;

/** Does this first byte start a TLS handshake record (the only way a TLS client begins)? */
export function looksLikeTls(firstByte: number): boolean {
  return firstByte === RECORD_HANDSHAKE;
}

/** Read a ClientHello from the start of `buf` (it may span several records). */
export function parseClientHello(buf: Buffer): HelloResult {
  const handshake: Buffer[] = [];
  let have = 0;
  let off = 0;
  for (;;) {
    if (have >= 4) {
      if (handshake[0]![0] !== HANDSHAKE_CLIENT_HELLO) return invalid('the first handshake message is not a ClientHello');
      const hs = have === handshake[0]!.length ? handshake[0]! : Buffer.concat(handshake);
      const len = hs.readUIntBE(1, 3);
      if (len > MAX_CLIENT_HELLO) return invalid('ClientHello too large');
      if (have >= 4 + len) return helloBody(hs.subarray(4, 4 + len));
    }
    if (buf.length - off < 5) return buf.length > MAX_CLIENT_HELLO ? invalid('ClientHello too large') : { status: 'incomplete' };
    if (buf[off] !== RECORD_HANDSHAKE) return invalid(off === 0 ? 'not a TLS handshake record' : 'a non-handshake record inside the ClientHello');
    if (buf[off + 1] !== 3 || buf[off + 2]! > 4) return invalid('unknown TLS record version');
    const recLen = buf.readUInt16BE(off + 3);
    if (recLen === 0 || recLen > 16384) return invalid('invalid TLS record length');
    if (off + 5 + recLen > buf.length) return off + 5 + recLen > MAX_CLIENT_HELLO ? invalid('ClientHello too large') : { status: 'incomplete' };
    const fragment = buf.subarray(off + 5, off + 5 + recLen);
    handshake.push(fragment);
    have += fragment.length;
    off += 5 + recLen;
  }
}

function invalid(reason: string): HelloResult {
  return { status: 'invalid', reason };
}

/** A cursor that answers null instead of reading past the end. */
class Reader {
  constructor(
    private readonly b: Buffer,
    private at = 0,
  ) {}
  get left(): number {
    return this.b.length - this.at;
  }
  u8(): number | null {
    return this.left >= 1 ? this.b[this.at++]! : null;
  }
  u16(): number | null {
    if (this.left < 2) return null;
    const v = this.b.readUInt16BE(this.at);
    this.at += 2;
    return v;
  }
  bytes(n: number | null): Buffer | null {
    if (n === null || this.left < n) return null;
    const v = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return v;
  }
}

function helloBody(body: Buffer): HelloResult {
  const r = new Reader(body);
  const version = r.bytes(2);
  if (!version || version[0] !== 3) return invalid('unknown ClientHello version');
  if (!r.bytes(32)) return invalid('truncated ClientHello');
  const sessionId = r.bytes(r.u8());
  if (!sessionId || sessionId.length > 32) return invalid('invalid session id');
  const suites = r.bytes(r.u16());
  if (!suites || suites.length === 0 || suites.length % 2 !== 0) return invalid('invalid cipher suite list');
  const compression = r.bytes(r.u8());
  if (!compression || compression.length === 0) return invalid('invalid compression methods');
  if (r.left === 0) return { status: 'ok' }; // no extensions (TLS 1.2 and older may omit them)
  const extensions = r.bytes(r.u16());
  if (!extensions || r.left !== 0) return invalid('invalid extension block');

  const e = new Reader(extensions);
  const seen = new Set<number>();
  let sni: string | undefined;
  let alpn: string[] | undefined;
  while (e.left > 0) {
    const type = e.u16();
    const data = e.bytes(e.u16());
    if (type === null || !data) return invalid('truncated extension');
    if (seen.has(type)) return invalid(`extension ${type} appears twice`);
    seen.add(type);
    if (type === EXT_SNI) {
      const parsed = serverName(data);
      if (typeof parsed !== 'string' || parsed.startsWith('!')) return invalid(typeof parsed === 'string' ? parsed.slice(1) : 'invalid server_name');
      sni = parsed;
    } else if (type === EXT_ALPN) {
      const parsed = protocols(data);
      if (!parsed) return invalid('invalid ALPN extension');
      alpn = parsed;
    }
  }
  return { status: 'ok', ...(sni !== undefined ? { sni } : {}), ...(alpn ? { alpn } : {}) };
}

/** The host_name of a server_name extension; `!reason` when invalid. */
function serverName(data: Buffer): string {
  const r = new Reader(data);
  const list = r.bytes(r.u16());
  if (!list || r.left !== 0 || list.length === 0) return '!invalid server_name list';
  const l = new Reader(list);
  let name: string | undefined;
  while (l.left > 0) {
    const kind = l.u8();
    const value = l.bytes(l.u16());
    if (kind === null || !value) return '!truncated server_name';
    if (kind !== 0) continue; // only host_name (0) is defined; others are skipped as RFC 6066 allows
    if (name !== undefined) return '!two host names in server_name';
    // RFC 6066: ASCII, no trailing dot; anything else is not a name srt can judge.
    if (value.length === 0 || value.length > 253 || !/^[A-Za-z0-9._-]+$/.test(value.toString('latin1'))) return '!invalid SNI host name';
    name = value.toString('latin1');
  }
  return name ?? '!no host name in server_name';
}

function protocols(data: Buffer): string[] | null {
  const r = new Reader(data);
  const list = r.bytes(r.u16());
  if (!list || r.left !== 0 || list.length === 0) return null;
  const l = new Reader(list);
  const out: string[] = [];
  while (l.left > 0) {
    const p = l.bytes(l.u8());
    if (!p || p.length === 0) return null;
    out.push(p.toString('latin1'));
  }
  return out;
}
