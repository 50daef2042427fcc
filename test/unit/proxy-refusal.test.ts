// A refusal never crashes srt and never answers twice (SPEC §7, "no crash on refusal"): a stage's
// body stream that fails at any byte offset of the request or the response body — in the first
// chunk, a later one, at its end — with the upstream reading the body at once, late, or after it
// has begun to answer, ends that exchange alone with one answer: srt's 403 if nothing was sent to
// the client yet, else a reset. The refusal is recorded once. Property test over every offset,
// with a generic failing stage and with the real credential stage's tripwire.
import { PassThrough, Readable, Transform } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Secret } from '../../src/credentials/plan.js';
import { CredentialStage } from '../../src/credentials/stage.js';
import { parseDomainEntry } from '../../src/proxy/domains.js';
import type { Target } from '../../src/proxy/gate.js';
import { exchange, Stopper, type Frontend, type Upstream } from '../../src/proxy/exchange.js';
import { RefusedError, type ProxyRequest, type ProxyResponse, type Refusal, type Stage } from '../../src/proxy/pipeline.js';

const target: Target = { host: { host: 'other.example' }, port: 443, addresses: ['192.0.2.1'], display: 'other.example:443' };

/** What the client got, in order: `reply 403`, `respond 200`, `data`, `end`, `reset`. */
function recorder() {
  const stopper = new Stopper();
  const events: string[] = [];
  let settle!: () => void;
  const done = new Promise<void>((r) => (settle = r));
  const front: Frontend = {
    stopper,
    reply(status) {
      events.push(`reply ${status}`);
      settle();
    },
    respond(res) {
      events.push(`respond ${res.status}`);
      res.body?.on('data', () => {
        if (events.at(-1) !== 'data') events.push('data');
      });
      res.body?.on('end', () => {
        events.push('end');
        settle();
      });
      if (!res.body) settle();
    },
    upgrade() {
      throw new Error('not an upgrade');
    },
    reset() {
      events.push('reset');
      settle();
    },
  };
  return { front, events, done };
}

/** Passes bytes until byte `at` (from 0; `at` = the body's length: when the body ends) and then fails with a refusal. */
function failAt(at: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _e, cb) {
      if (seen + chunk.length <= at) {
        seen += chunk.length;
        return cb(null, chunk);
      }
      this.push(chunk.subarray(0, at - seen));
      seen = at;
      cb(new RefusedError({ refuse: `refused at ${at}` }));
    },
    flush(cb) {
      cb(seen === at ? new RefusedError({ refuse: `refused at ${at}` }) : null);
    },
  });
}

type Reading = 'at-once' | 'late' | 'answers-first' | 'never-listens';

/**
 * An upstream that reads the request body in one of four ways and records the bytes it got:
 * at once (like sendH1), only after a delay (an HTTP/2 session still connecting), after it has
 * already answered with a streaming body, or without ever listening for the body's errors
 * (it only learns of a failure from the stopper).
 */
function upstream(reading: Reading, got: Buffer[], responseBody: () => Readable = () => Readable.from([Buffer.from('response body')])): Upstream {
  return {
    send: (req: ProxyRequest, stopper: Stopper) =>
      new Promise((resolve, reject) => {
        const res = (body: Readable): { kind: 'response'; res: ProxyResponse } => ({ kind: 'response', res: { status: 200, statusMessage: 'OK', headers: [], body, trailers: () => [] } });
        stopper.on(() => reject(new Error('aborted')));
        const read = (onEnd: () => void) => {
          const body = req.body;
          if (!body) return onEnd();
          body.on('data', (c: Buffer) => got.push(c));
          body.on('end', onEnd);
          if (reading !== 'never-listens') body.on('error', reject);
        };
        if (reading === 'late') setTimeout(() => read(() => resolve(res(responseBody()))), 2);
        else if (reading === 'answers-first') {
          const out = new PassThrough();
          out.write('first part of the answer ');
          resolve(res(out));
          setImmediate(() => read(() => out.end('rest')));
        } else read(() => resolve(res(responseBody())));
      }),
  };
}

function chunked(body: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < body.length; i += size) out.push(body.subarray(i, i + size));
  return out;
}

async function run(stages: Stage[], body: Buffer[] | null, up: Upstream) {
  const refusals: Refusal[] = [];
  const r = recorder();
  const req: ProxyRequest = { scheme: 'https', target, method: 'POST', path: '/', authority: 'other.example', headers: [], body: body ? Readable.from(body) : null, upgrade: undefined };
  await exchange(r.front, req, { stages, upstream: up, refused: (_t, x) => refusals.push(x), log: () => undefined });
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([r.done, new Promise((_res, reject) => (timer = setTimeout(() => reject(new Error(`no answer: ${r.events.join(', ')}`)), 2000)))]);
  clearTimeout(timer);
  // Anything that would still happen (a second answer, a late error) happens now.
  await new Promise((res) => setTimeout(res, 5));
  return { events: r.events, refusals };
}

const BODY = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/');
const READINGS: Reading[] = ['at-once', 'late', 'answers-first', 'never-listens'];

/** One answer: srt's own 403 before anything else was sent, else the response and then a reset. */
function expectOneRefusal(events: string[], refusals: Refusal[], reading: Reading): void {
  expect(refusals).toHaveLength(1);
  if (reading === 'answers-first') expect(events).toEqual(expect.arrayContaining(['respond 200', 'reset']));
  else expect(events).toEqual(['reply 403']);
  expect(events.filter((e) => e.startsWith('reply') || e.startsWith('respond'))).toHaveLength(1);
  expect(events).not.toContain('end');
}

describe('a request body that fails at any byte offset', () => {
  for (const reading of READINGS) {
    for (const size of [1, 7, BODY.length]) {
      it(`is one answer and one recorded refusal (upstream reads ${reading}, chunks of ${size})`, async () => {
        for (let at = 0; at <= BODY.length; at++) {
          const got: Buffer[] = [];
          const stage: Stage = { name: 'fail', request: (req) => void (req.body = req.body!.pipe(failAt(at))) };
          const { events, refusals } = await run([stage], chunked(BODY, size), upstream(reading, got));
          expectOneRefusal(events, refusals, reading);
          expect(Buffer.concat(got).length, `offset ${at}`).toBeLessThanOrEqual(at);
        }
      });
    }
  }
});

describe('a response body that fails at any byte offset', () => {
  for (const size of [1, 7, BODY.length]) {
    it(`is srt's 403 if nothing was sent yet, else a reset (chunks of ${size})`, async () => {
      for (let at = 0; at <= BODY.length; at++) {
        const stage: Stage = { name: 'fail', response: (res) => void (res.body = res.body!.pipe(failAt(at))) };
        const { events, refusals } = await run([stage], null, upstream('at-once', [], () => Readable.from(chunked(BODY, size))));
        expect(refusals, `offset ${at}`).toHaveLength(1);
        expect(events.filter((e) => e.startsWith('reply') || e.startsWith('respond'))).toHaveLength(1);
        expect(events).not.toContain('end');
        if (events[0] === 'respond 200') expect(events.at(-1)).toBe('reset');
        else expect(events).toEqual(['reply 403']);
      }
    });
  }
});

describe("the credential stage's tripwire at every offset of a body", () => {
  const rule = parseDomainEntry('api.github.com', 'allow');
  if (!rule.ok) throw new Error(rule.error);
  const GH: Secret = { label: 'GH_TOKEN', real: 'ghp_REALREALREALREALREALREALREALREAL00', sentinel: 'ghp_SENTSENTSENTSENTSENTSENTSENTSENT11', injectHosts: [rule.rules[0]!], injectInto: ['headers'], inject: true };
  for (const reading of READINGS) {
    it(`stops the request before the sentinel leaves (upstream reads ${reading})`, async () => {
      for (let at = 0; at <= 40; at++) {
        for (const size of [1, 5, 1000]) {
          const body = Buffer.from(`${'a'.repeat(at)}t=${GH.sentinel}&${'b'.repeat(40 - at)}`);
          const got: Buffer[] = [];
          const { events, refusals } = await run([new CredentialStage([GH], { allowPlaintextInject: false })], chunked(body, size), upstream(reading, got));
          expectOneRefusal(events, refusals, reading);
          expect(refusals[0]!.sentinel).toBe('GH_TOKEN');
          expect(Buffer.concat(got).toString()).not.toContain(GH.sentinel);
        }
      }
    });
  }
});

/** Fails with a plain error (a client or upstream connection that broke) after `at` bytes. */
function brokenAt(body: Buffer, at: number, size: number): Readable {
  const chunks = chunked(body.subarray(0, at), size);
  return new Readable({
    read() {
      const c = chunks.shift();
      if (c) this.push(c);
      else this.destroy(new Error('ECONNRESET'));
    },
  });
}

// Without a stage that has a request or response hook nothing can put another body in place, so
// the exchange watches only the bodies it is given: a failure of either is still one answer.
describe('with no stage that can replace a body', () => {
  const noHooks: Stage[][] = [[], [{ name: 'tunnel only', tunnel: () => undefined, screenHost: () => undefined }]];
  for (const stages of noHooks) {
    for (const reading of READINGS) {
      it(`a request body that breaks is one answer, no refusal (${stages.length} stages, upstream reads ${reading})`, async () => {
        for (const at of [0, 1, 30, BODY.length]) {
          const refusals: Refusal[] = [];
          const r = recorder();
          const req: ProxyRequest = { scheme: 'http', target, method: 'POST', path: '/', authority: 'other.example', headers: [], body: brokenAt(BODY, at, 7), upgrade: undefined };
          await exchange(r.front, req, { stages, upstream: upstream(reading, []), refused: (_t, x) => refusals.push(x), log: () => undefined });
          await r.done;
          await new Promise((res) => setTimeout(res, 5));
          expect(refusals).toHaveLength(0);
          expect(r.events.filter((e) => e.startsWith('reply') || e.startsWith('respond'))).toHaveLength(1);
          if (reading === 'answers-first') expect(r.events).toEqual(expect.arrayContaining(['respond 200', 'reset']));
          else expect(r.events).toEqual(['reply 502']);
        }
      });
    }
    it(`a response body that breaks after the answer began is a reset (${stages.length} stages)`, async () => {
      for (const at of [0, 1, 30]) {
        const r = recorder();
        const req: ProxyRequest = { scheme: 'http', target, method: 'GET', path: '/', authority: 'other.example', headers: [], body: null, upgrade: undefined };
        await exchange(r.front, req, { stages, upstream: upstream('at-once', [], () => brokenAt(BODY, at, 7)), refused: () => undefined, log: () => undefined });
        await r.done;
        await new Promise((res) => setTimeout(res, 5));
        expect(r.events[0]).toBe('respond 200');
        expect(r.events.at(-1)).toBe('reset');
        expect(r.events).not.toContain('end');
      }
    });
  }
});
