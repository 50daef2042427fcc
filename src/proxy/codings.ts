// HTTP content and transfer codings (RFC 9110 §8.4, RFC 9112 §7) srt can undo, so that what it
// reads of a message is its plaintext: a transfer coding other than chunked (hop-by-hop: srt, as
// the recipient, must remove it before forwarding) and the content codings of a response whose
// body srt re-masks. Decoding streams with backpressure; nothing is buffered whole.

import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate, type BrotliDecompress, type Gunzip, type Inflate } from 'node:zlib';
import { through } from './pipeline.js';

/** The codings srt decodes. (zstd: Node 20's zlib has no decoder.) */
const DECODERS = new Map<string, () => Gunzip | Inflate | BrotliDecompress>([
  ['gzip', createGunzip],
  ['x-gzip', createGunzip],
  ['deflate', createInflate],
  ['br', createBrotliDecompress],
]);

export const DECODABLE = ['gzip', 'deflate', 'br'];

/** The codings header lines list (each line a comma-separated list), in the order they were
 *  applied, `identity` left out. */
export function codings(lines: readonly string[]): string[] {
  return lines
    .flatMap((v) => v.split(','))
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
}

/**
 * `body` with `applied` (codings in the order they were applied) undone, or the first one srt
 * cannot undo. An error of `body` or of a decoder (corrupt data) fails the result.
 */
export function decode(body: Readable, applied: readonly string[]): Readable | { unknown: string } {
  const unknown = applied.find((c) => !DECODERS.has(c));
  if (unknown !== undefined) return { unknown };
  let out = body;
  for (const c of [...applied].reverse()) out = through(out, DECODERS.get(c)!());
  return out;
}
