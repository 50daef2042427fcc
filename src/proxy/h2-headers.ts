// HTTP/2 header objects (node:http2) ↔ header lines, for both sides of an exchange.

import type { IncomingHttpHeaders as H2Headers, OutgoingHttpHeaders } from 'node:http2';
import { endToEndHeaders, type Header } from './pipeline.js';

/** Header lines → a node:http2 header object (lower-case names; repeated names as arrays). */
export function toH2Headers(headers: readonly Header[]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [k, v] of headers) {
    const name = k.toLowerCase();
    const prev = out[name];
    if (prev === undefined) out[name] = v;
    else out[name] = Array.isArray(prev) ? [...prev, v] : [String(prev), v];
  }
  return out;
}

/** A node:http2 header object → header lines (pseudo-headers and hop-by-hop dropped). */
export function fromH2Headers(h: H2Headers): Header[] {
  const raw: string[] = [];
  for (const [k, v] of Object.entries(h)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [String(v)]) raw.push(k, one);
  }
  return endToEndHeaders(raw);
}
