/**
 * IP address arithmetic, pure: bytes of an address, the IPv4 address an IPv6 one stands for,
 * CIDR ranges. Shared by the guard, the domain decision and the CA's certificate names.
 */
import { isIP } from 'node:net';

/** 4 or 16 bytes; null when `addr` is not an IP address. Zone ids are refused. */
export function ipBytes(addr: string): Uint8Array | null {
  const kind = isIP(addr);
  if (kind === 4) return Uint8Array.from(addr.split('.').map(Number));
  if (kind !== 6 || addr.includes('%')) return null;
  let tail: number[] = [];
  let text = addr;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    tail = v4[1]!.split('.').map(Number);
    text = text.slice(0, -v4[1]!.length) + '0:0';
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const groups = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const h = groups(head);
  const t = rest === undefined ? [] : groups(rest);
  const words = rest === undefined ? h : [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[i * 2] = w >> 8;
    out[i * 2 + 1] = w & 255;
  });
  if (tail.length === 4) out.set(tail, 12);
  return out;
}

function v4String(b: Uint8Array, at: number): string {
  return `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
}

function startsWith(b: Uint8Array, prefix: number[]): boolean {
  return prefix.every((v, i) => b[i] === v);
}

/** The IPv4 address an IPv6 address stands for (mapped, translated, compatible, NAT64, 6to4), else null. */
export function embeddedIpv4(addr: string): string | null {
  const b = ipBytes(addr);
  if (!b || b.length !== 16) return null;
  const zeros = (n: number) => new Array<number>(n).fill(0);
  if (startsWith(b, [...zeros(10), 0xff, 0xff])) return v4String(b, 12); // ::ffff:a.b.c.d
  if (startsWith(b, [...zeros(8), 0xff, 0xff, 0, 0])) return v4String(b, 12); // ::ffff:0:a.b.c.d (IPv4-translated, SIIT)
  if (startsWith(b, zeros(12)) && (b[12]! | b[13]!) !== 0) return v4String(b, 12); // ::a.b.c.d (not :: / ::1)
  if (startsWith(b, [0x00, 0x64, 0xff, 0x9b, ...zeros(8)])) return v4String(b, 12); // 64:ff9b::/96
  if (startsWith(b, [0x20, 0x02])) return v4String(b, 2); // 2002:AABB:CCDD::/16
  return null;
}

/** Parse `addr/len` (or a bare address = host route). Null when invalid. */
export function parseCidr(cidr: string): { bytes: Uint8Array; bits: number } | null {
  const [addr, len, extra] = cidr.trim().split('/');
  if (extra !== undefined || addr === undefined) return null;
  const bytes = ipBytes(addr);
  if (!bytes) return null;
  const max = bytes.length * 8;
  if (len !== undefined && !/^\d{1,3}$/.test(len)) return null;
  const bits = len === undefined ? max : Number(len);
  return bits <= max ? { bytes, bits } : null;
}

export function inCidr(addr: Uint8Array, net: { bytes: Uint8Array; bits: number }): boolean {
  if (addr.length !== net.bytes.length) return false;
  for (let i = 0; i < net.bits; i++) {
    const byte = i >> 3;
    const mask = 0x80 >> (i & 7);
    if ((addr[byte]! & mask) !== (net.bytes[byte]! & mask)) return false;
  }
  return true;
}
