// aws-chunked bodies signed chunk by chunk (x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD
// and its -TRAILER and SigV4a variants), re-signed on the fly. Each chunk is
//
//   <size hex>;chunk-signature=<signature>\r\n<size bytes>\r\n
//
// where the signature chains: it signs the previous one (the first signs the request's own
// signature, the "seed") and the hash of its data. The last chunk has size 0; the -TRAILER
// variants follow it with trailing headers (a checksum) and x-amz-trailer-signature, which signs
// the final chunk's signature and the trailing headers.
//
// A chunk's signature line precedes its data, so each chunk is held until its last byte arrives
// (bounded by MAX_CHUNK), then forwarded with its new signature. SigV4 signatures are 64 hex
// characters and SigV4a ones are padded (or re-drawn) to the client's length, so the body keeps
// its length and Content-Length stays true. Anything that is not exactly this format fails the
// stream: the upstream request is aborted, never completed with a signature srt did not make.

import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { EMPTY_SHA256, HMAC_ALGORITHM, type Signer } from './sigv4.js';

/** The largest chunk srt holds in memory while it re-signs (clients use 8 KiB to 1 MiB). */
export const MAX_CHUNK = 8 * 1024 * 1024;
const MAX_LINE = 4096;
const MAX_TRAILER = 16 * 1024;
/** SigV4a chunk signatures are padded with this to a fixed width (aws-c-auth's convention). */
const PAD = '*';

export interface ChunkOptions {
  /** The request's new signature (what the first chunk signs). */
  seed: string;
  /** The -TRAILER variant: trailing headers and their signature follow the final chunk. */
  trailer: boolean;
  maxChunk?: number;
  /** Makes the error the stream fails with (the pipeline's refusal type). */
  fail: (why: string) => Error;
}

/** Canonical trailing headers, as their signature hashes them: `name:value\n`, sorted. */
export function canonicalTrailers(lines: readonly string[]): string {
  return lines
    .map((l) => {
      const c = l.indexOf(':');
      return `${l.slice(0, c).trim().toLowerCase()}:${l.slice(c + 1).trim()}\n`;
    })
    .sort()
    .join('');
}

export function chunkStringToSign(signer: Signer, previous: string, dataHash: string): string {
  return `${signer.algorithm}-PAYLOAD\n${signer.amzDate}\n${signer.scope.text}\n${previous}\n${EMPTY_SHA256}\n${dataHash}`;
}

export function trailerStringToSign(signer: Signer, previous: string, trailers: string): string {
  return `${signer.algorithm}-TRAILER\n${signer.amzDate}\n${signer.scope.text}\n${previous}\n${createHash('sha256').update(trailers, 'latin1').digest('hex')}`;
}

type State = 'line' | 'data' | 'data-crlf' | 'final-crlf' | 'trailers' | 'end' | 'done';

export class ChunkResigner extends Transform {
  private state: State = 'line';
  private line = '';
  private previous: string;
  private size = 0;
  private sizeText = '';
  private width = 0;
  private padded = false;
  /** The current chunk's data as it arrived (the pieces are kept, not copied). */
  private data: Buffer[] = [];
  private got = 0;
  private hash: Hash | undefined;
  private trailerLines: string[] = [];
  private trailerBytes = 0;
  private readonly maxChunk: number;

  constructor(private readonly signer: Signer, private readonly opts: ChunkOptions) {
    super();
    this.previous = opts.seed;
    this.maxChunk = opts.maxChunk ?? MAX_CHUNK;
  }

  /** A new signature exactly as wide as the client's (`width` characters). */
  private signatureOfWidth(stringToSign: string, width: number, padded: boolean): string {
    if (this.signer.algorithm === HMAC_ALGORITHM) return this.signer.sign(stringToSign);
    // ECDSA signatures vary in length: pad as the client did, or draw again until one fits.
    for (let i = 0; i < 64; i++) {
      const s = this.signer.sign(stringToSign);
      if (padded && s.length <= width) return s.padEnd(width, PAD);
      if (s.length === width) return s;
    }
    throw this.opts.fail(`cannot make a SigV4a chunk signature of the client's width (${width} characters)`);
  }

  private signChunk(empty: boolean): string {
    const hash = empty ? EMPTY_SHA256 : this.hash!.digest('hex');
    const sts = chunkStringToSign(this.signer, this.previous, hash);
    const sig = this.signatureOfWidth(sts, this.width, this.padded);
    this.previous = sig.replace(/\*+$/, '');
    return `${this.sizeText};chunk-signature=${sig}\r\n`;
  }

  private parseChunkLine(line: string): void {
    const m = /^([0-9a-fA-F]{1,16});chunk-signature=([0-9a-f]+)(\**)$/.exec(line);
    if (!m) throw this.opts.fail(`malformed aws-chunked chunk header "${line.slice(0, 100)}"`);
    const hmac = this.signer.algorithm === HMAC_ALGORITHM;
    if (hmac ? m[2]!.length !== 64 || m[3] !== '' : m[2]!.length < 16) throw this.opts.fail('malformed aws-chunked chunk signature');
    this.size = parseInt(m[1]!, 16);
    if (this.size > this.maxChunk) throw this.opts.fail(`an aws-chunked chunk of ${this.size} bytes is larger than srt re-signs (${this.maxChunk} bytes)`);
    this.sizeText = m[1]!;
    this.width = m[2]!.length + m[3]!.length;
    this.padded = m[3] !== '';
  }

  /** Read one CRLF-terminated line; returns the bytes consumed, or -1 when more are needed. */
  private takeLine(chunk: Buffer, at: number, max: number): number {
    const nl = chunk.indexOf(0x0a, at);
    const end = nl === -1 ? chunk.length : nl + 1;
    this.line += chunk.toString('latin1', at, end);
    if (this.line.length > max) throw this.opts.fail('an aws-chunked line is too long');
    return nl === -1 ? -1 : end - at;
  }

  private endLine(): string {
    const l = this.line;
    this.line = '';
    if (!l.endsWith('\r\n')) throw this.opts.fail('an aws-chunked line does not end with CRLF');
    return l.slice(0, -2);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    try {
      this.consume(chunk);
      cb();
    } catch (e) {
      cb(e as Error);
    }
  }

  private consume(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      switch (this.state) {
        case 'line': {
          const n = this.takeLine(chunk, at, MAX_LINE);
          if (n === -1) return;
          at += n;
          this.parseChunkLine(this.endLine());
          if (this.size === 0) {
            this.push(this.signChunk(true));
            this.state = this.opts.trailer ? 'trailers' : 'final-crlf';
          } else {
            this.data = [];
            this.got = 0;
            this.hash = createHash('sha256');
            this.state = 'data';
          }
          break;
        }
        case 'data': {
          const n = Math.min(this.size - this.got, chunk.length - at);
          const piece = chunk.subarray(at, at + n);
          this.data.push(piece);
          this.hash!.update(piece);
          this.got += n;
          at += n;
          if (this.got === this.size) this.state = 'data-crlf';
          break;
        }
        case 'data-crlf':
        case 'final-crlf':
        case 'end': {
          // Exactly CRLF, however it is split.
          while (at < chunk.length && this.line.length < 2) this.line += String.fromCharCode(chunk[at++]!);
          if (!'\r\n'.startsWith(this.line)) throw this.opts.fail('aws-chunked data is not followed by CRLF');
          if (this.line.length < 2) return;
          this.line = '';
          if (this.state === 'data-crlf') {
            this.push(this.signChunk(false));
            for (const piece of this.data) this.push(piece);
            this.push('\r\n');
            this.data = [];
            this.state = 'line';
          } else {
            this.push('\r\n');
            this.state = 'done';
          }
          break;
        }
        case 'trailers': {
          const n = this.takeLine(chunk, at, MAX_LINE);
          if (n === -1) return;
          at += n;
          this.trailerBytes += n;
          if (this.trailerBytes > MAX_TRAILER) throw this.opts.fail('the aws-chunked trailer is too long');
          const l = this.endLine();
          // Some clients end the final chunk with its own empty line before the trailers.
          if (l === '' && this.trailerLines.length === 0) {
            this.push('\r\n');
            break;
          }
          const sig = /^x-amz-trailer-signature:\s*([0-9a-f]+)(\**)\s*$/i.exec(l);
          if (sig) {
            if (this.trailerLines.length === 0) throw this.opts.fail('the aws-chunked trailer has a signature but no headers');
            const width = sig[1]!.length + sig[2]!.length;
            if (this.signer.algorithm === HMAC_ALGORITHM && (width !== 64 || sig[2] !== '')) throw this.opts.fail('malformed x-amz-trailer-signature');
            const sts = trailerStringToSign(this.signer, this.previous, canonicalTrailers(this.trailerLines));
            const mine = this.signatureOfWidth(sts, width, sig[2] !== '');
            const at = l.indexOf(sig[1]!);
            this.push(`${this.trailerLines.map((t) => `${t}\r\n`).join('')}${l.slice(0, at)}${mine}${l.slice(at + width)}\r\n`);
            this.state = 'end';
            break;
          }
          if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+:/.test(l)) throw this.opts.fail(`malformed aws-chunked trailer line "${l.slice(0, 100)}"`);
          this.trailerLines.push(l);
          break;
        }
        case 'done':
          throw this.opts.fail('data after the end of the aws-chunked body');
      }
    }
  }

  override _flush(cb: TransformCallback): void {
    // The trailer's last empty line is optional in practice.
    if (this.state === 'done' || (this.state === 'end' && this.line === '')) return cb();
    cb(this.opts.fail('the aws-chunked body ended before its final chunk'));
  }
}
