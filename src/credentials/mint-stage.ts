// The minted-credentials stage (SPEC §7): the answer to a request srt injected a real value into
// or re-signed never hands the command a usable secret. Every credential field srt recognises in
// it (minted.ts) reaches the command as a fresh sentinel of the same shape, registered for the
// rest of the run with the injectHosts of the credential the request used: later requests that
// carry it get the minted value injected, or — an AWS key id with its secret key and session
// token — are re-signed with the minted credential. An answer of a call that mints credentials
// (minted.ts mintingCall) in which srt recognises none is refused (credentials.sigv4.mint
// "deny", the default) or passed with a warning at the end ("allow").
//
// This stage is the first of the credential stages: its response hook runs last, after the
// credential stage has re-masked the real values the run already knew, so what it finds is new.

import { Readable, Transform } from 'node:stream';
import type { InjectPlace } from '../policy.js';
import { codings } from '../proxy/codings.js';
import type { DomainRule } from '../proxy/domains.js';
import { headerValue, readBounded, RefusedError, through, type Header, type ProxyRequest, type ProxyResponse, type Refusal, type Stage } from '../proxy/pipeline.js';
import { CredentialFields, FieldTooLong, MAX_FORM, mintingCall, replaceFormFields, type Field, type Replace } from './minted.js';
import type { AwsCredential, Secret } from './plan.js';
import { SentinelMint } from './sentinels.js';

export type MintHandling = 'deny' | 'allow';

/** The largest answer of a minting call srt reads whole before it lets any of it through. */
export const MAX_MINT_ANSWER = 1024 * 1024;

/** Where a minted value may be swapped back: anywhere in a request to its hosts (a refresh token
 *  goes back in a token request's body, an access token in a header or the query). */
const MINTED_INTO: InjectPlace[] = ['headers', 'query', 'body'];

/** Told by the stages that put real values into requests: which secrets a request used (filled
 *  while its body streams) and, for AWS, the call (`null`: a call that mints nothing). */
export interface UseSink {
  used(req: ProxyRequest, secrets: Set<Secret>, call?: string | null): void;
}

/** What a new credential is registered with. */
export interface MintTargets {
  addSecret(s: Secret): void;
  addAws(c: AwsCredential): void;
  note(text: string): void;
}

type Use = { sets: Set<Secret>[]; call?: string | null };

/** The parts of one AWS credential as an answer lists them, in any order. */
type Group = { keyId?: Secret; secretKey?: Secret; sessionToken?: Secret; cred?: AwsCredential };

const TEXTUAL = /json|xml|text|form|javascript/;

/** `user:password` inside a base64 token, when that is what it holds. */
function userPassword(token: string): { user: string; password: string } | undefined {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(token) || token.length % 4 !== 0) return undefined;
  const m = /^([\x21-\x39\x3b-\x7e]+):([\x21-\x7e]{8,})$/.exec(Buffer.from(token, 'base64').toString('latin1'));
  return m ? { user: m[1]!, password: m[2]! } : undefined;
}

function withoutHeader(headers: Header[], name: string): Header[] {
  return headers.filter(([k]) => k.toLowerCase() !== name);
}

export class MintStage implements Stage, UseSink {
  readonly name = 'minted';
  private readonly uses = new WeakMap<ProxyRequest, Use>();
  private readonly byReal = new Map<string, Secret>();
  private readonly sentinels: Set<string>;
  private readonly mint: SentinelMint;

  constructor(
    secrets: readonly Secret[],
    private readonly targets: MintTargets,
    private readonly opts: { mint: MintHandling; log?: (line: string) => void },
  ) {
    this.sentinels = new Set(secrets.map((s) => s.sentinel));
    this.mint = new SentinelMint(secrets.flatMap((s) => [s.real, s.sentinel]));
  }

  used(req: ProxyRequest, secrets: Set<Secret>, call?: string | null): void {
    const use = this.uses.get(req) ?? { sets: [] };
    use.sets.push(secrets);
    if (call !== undefined) use.call = call;
    this.uses.set(req, use);
  }

  /** Registers each new value and returns its sentinel; pairs an AWS credential's parts. */
  private replacer(used: readonly Secret[], from: string): Replace {
    const hosts = new Map<string, DomainRule>();
    for (const s of used) for (const r of s.injectHosts) hosts.set(r.text, r);
    let group: Group = {};
    const register = (f: Field, real: string): Secret => {
      let s = this.byReal.get(real);
      if (!s) {
        this.mint.reserve(real);
        s = { label: `${f.name} minted by ${from}`, real, sentinel: this.mint.shaped(real).sentinel, injectHosts: [...hosts.values()], injectInto: [...MINTED_INTO], inject: f.kind !== 'secretKey' };
        this.byReal.set(s.real, s);
        this.sentinels.add(s.sentinel);
        this.targets.addSecret(s);
        this.opts.log?.(`credentials: ${s.label}: the command gets a sentinel, injected only toward ${[...hosts.keys()].join(', ')}`);
      }
      return s;
    };
    return (f: Field) => {
      if (this.sentinels.has(f.value)) return undefined;
      if (f.kind === 'token') {
        // A token that is base64 of `user:password` (ECR's authorizationToken, sent back in
        // `Basic`): the password gets the sentinel, the user stays, so the token still decodes.
        const basic = userPassword(f.value);
        if (basic) {
          if (this.sentinels.has(basic.password)) return undefined;
          return Buffer.from(`${basic.user}:${register(f, basic.password).sentinel}`, 'latin1').toString('base64');
        }
      }
      const s = register(f, f.value);
      if (f.kind !== 'token') {
        if (group[f.kind] && group[f.kind] !== s) group = {};
        group[f.kind] = s;
        if (group.keyId && group.secretKey) {
          if (!group.cred) {
            group.cred = { accessKeyId: group.keyId, secretAccessKey: group.secretKey, ...(group.sessionToken ? { sessionToken: group.sessionToken } : {}) };
            this.targets.addAws(group.cred);
          } else if (group.sessionToken) group.cred.sessionToken = group.sessionToken;
        }
      }
      return s.sentinel;
    };
  }

  async response(res: ProxyResponse, req: ProxyRequest): Promise<Refusal | undefined> {
    const use = this.uses.get(req);
    const used = [...new Set(use?.sets.flatMap((s) => [...s]) ?? [])];
    if (!use || used.length === 0 || !res.body) return undefined;
    const call = use.call !== undefined ? use.call : mintingCall({ method: req.method, path: req.path, host: req.target.host.host, ...(headerValue(req.headers, 'x-amz-target') ? { amzTarget: headerValue(req.headers, 'x-amz-target')! } : {}) });
    const type = (headerValue(res.headers, 'content-type') ?? '').toLowerCase();
    // Downloads are not searched: only an answer that says it is text, or a minting call's.
    if (!call && !TEXTUAL.test(type)) return undefined;
    const from = call ?? req.target.display;
    const replace = this.replacer(used, from);
    const unreadable = (why: string): Refusal => ({ refuse: `cannot look for minted credentials in the answer of ${from}: ${why}`, status: 502, proxyError: 'unreadable-response' });
    // The credential stage decoded every content coding of a host srt sends real values to.
    const encoding = codings(res.headers.filter(([k]) => k.toLowerCase() === 'content-encoding').map(([, v]) => v));
    if (encoding.length > 0) return unreadable(`Content-Encoding ${encoding.join(', ')}`);
    const form = type.includes('x-www-form-urlencoded');

    if (call || form) {
      // Read whole (it is small): a minting call's answer is refused before any of it leaves
      // when srt recognises no credential in it.
      const body = await readBounded(res.body, call ? MAX_MINT_ANSWER : MAX_FORM);
      if (body === null) return unreadable(`it is larger than ${call ? MAX_MINT_ANSWER : MAX_FORM} bytes`);
      let out: Buffer;
      let found: number;
      if (form) {
        const r = replaceFormFields(body.toString('latin1'), replace);
        out = Buffer.from(r.body, 'latin1');
        found = r.found;
      } else {
        const fields = new CredentialFields(replace);
        try {
          out = Buffer.concat([fields.push(body), fields.end()]);
        } catch (e) {
          if (e instanceof FieldTooLong) return unreadable(e.message);
          throw e;
        }
        found = fields.found;
      }
      if (call && found === 0 && res.status >= 200 && res.status < 300) {
        if (this.opts.mint === 'deny') {
          return { refuse: `${call} mints credentials, and srt recognises none in its answer to replace with sentinels (credentials.sigv4.mint is "deny")`, status: 403, proxyError: 'minted-credentials-unrecognised' };
        }
        this.targets.note(`${call} minted credentials srt recognised none of in its answer; the command got the answer as it was (credentials.sigv4.mint is "allow")`);
      }
      res.body = Readable.from([out]);
      res.headers = [...withoutHeader(res.headers, 'content-length'), ['content-length', String(out.length)]];
      return undefined;
    }

    const fields = new CredentialFields(replace);
    const t = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        try {
          cb(null, fields.push(chunk));
        } catch (e) {
          cb(e instanceof FieldTooLong ? new RefusedError(unreadable(e.message)) : (e as Error));
        }
      },
      flush(cb) {
        cb(null, fields.end());
      },
    });
    res.body = through(res.body, t);
    res.headers = withoutHeader(res.headers, 'content-length');
    return undefined;
  }
}
