// Minted credentials (SPEC §7): what an upstream hands back to a request srt injected into or
// re-signed must not give the command a usable secret. Two views, both pure:
//   - what the answer IS: CredentialFields finds credential-shaped fields in a response body as it
//     streams — XML elements and JSON members named like a credential (AccessKeyId,
//     SecretAccessKey/SecretKey, SessionToken, authorizationToken, access_token, refresh_token,
//     id_token, token, clientSecret: compared without case, `_` or `-`), JSON members inside a
//     JSON string too (`\"access_token\":\"…\"`), and `name=value` pairs of a form-encoded body —
//     whatever the call was, and hands each value to a callback that returns its sentinel;
//   - what the call IS: mintingCall names a request that mints credentials (sts:AssumeRole*,
//     iam:CreateAccessKey, ecr:GetAuthorizationToken, an OAuth token endpoint, …), so an answer
//     of such a call in which nothing is recognised can be refused rather than passed blind.
// Streaming and bounded: a chunk is forwarded at once except from where a field may have begun
// and not yet ended; such a field may be at most MAX_FIELD bytes long, else the stream fails.

/** What a minted value is, for pairing the parts of an AWS credential. */
export type FieldKind = 'keyId' | 'secretKey' | 'sessionToken' | 'token';

const FIELDS: Record<string, FieldKind> = {
  accesskeyid: 'keyId',
  secretaccesskey: 'secretKey',
  secretkey: 'secretKey',
  sessiontoken: 'sessionToken',
  authorizationtoken: 'token',
  accesstoken: 'token',
  refreshtoken: 'token',
  idtoken: 'token',
  token: 'token',
  clientsecret: 'token',
};
const NORMALISED = Object.keys(FIELDS);

/** The longest field (name, markup and value) srt holds while it waits for the field's end. */
export const MAX_FIELD = 64 * 1024;
/** The largest form-encoded answer srt reads (it is read whole). */
export const MAX_FORM = 64 * 1024;

function normalise(name: string): string {
  return name.slice(name.lastIndexOf(':') + 1).replace(/[_-]/g, '').toLowerCase();
}

/** The kind of a field called `name` (an XML namespace prefix is ignored), if it is one. */
export function fieldKind(name: string): FieldKind | undefined {
  return Object.hasOwn(FIELDS, normalise(name)) ? FIELDS[normalise(name)] : undefined;
}

function namePrefix(name: string): boolean {
  const n = normalise(name);
  return NORMALISED.some((f) => f.startsWith(n));
}

/** A value worth a sentinel: printable ASCII without spaces, long enough to be a secret. */
export function credentialShaped(value: string): boolean {
  return value.length >= 16 && /^[\x21-\x7e]+$/.test(value);
}

export interface Field {
  name: string;
  kind: FieldKind;
  /** The value as the upstream meant it (XML entities and JSON escapes undone). */
  value: string;
}

/** The sentinel for a field's value, or undefined to leave it (a sentinel already, say). */
export type Replace = (field: Field) => string | undefined;

export class FieldTooLong extends Error {
  constructor() {
    super(`a credential field in the response is longer than ${MAX_FIELD} bytes`);
  }
}

type Syntax = 'xml' | 'json' | 'json-in-string';
type Parsed = { at: number; valueStart: number; valueEnd: number; end: number; name: string; kind: FieldKind; syntax: Syntax } | 'partial' | 'no';

const NAME_CHAR = /[A-Za-z0-9_:.-]/;
const SPACE = /[ \t\r\n]/;

function skipSpace(t: string, k: number): number {
  while (k < t.length && SPACE.test(t[k]!)) k++;
  return k;
}

/** `token` at `k`: yes, no, or the text ends inside it. */
function expect(t: string, k: number, token: string): 'yes' | 'no' | 'partial' {
  if (t.startsWith(token, k)) return 'yes';
  return t.length - k < token.length && token.startsWith(t.slice(k)) ? 'partial' : 'no';
}

/** The field that begins at `p` (a `<`, `"` or `\"`), or why not. */
function parseAt(t: string, p: number): Parsed {
  const n = t.length;
  let k = p;
  let syntax: Syntax;
  if (t[k] === '<') syntax = 'xml';
  else if (t[k] === '"') syntax = 'json';
  else if (t.startsWith('\\"', k)) syntax = 'json-in-string';
  else return 'no';
  k += syntax === 'json-in-string' ? 2 : 1;
  const nameStart = k;
  while (k < n && k - nameStart <= 64 && NAME_CHAR.test(t[k]!)) k++;
  const name = t.slice(nameStart, k);
  if (k === n) return namePrefix(name) ? 'partial' : 'no';
  const kind = fieldKind(name);
  if (!kind) return 'no';
  if (syntax === 'xml') {
    if (t[k] !== '>') {
      if (!SPACE.test(t[k]!)) return 'no';
      const gt = t.indexOf('>', k);
      if (gt === -1) return 'partial';
      if (t[gt - 1] === '/') return 'no';
      k = gt;
    }
    const valueStart = k + 1;
    const lt = t.indexOf('<', valueStart);
    if (lt === -1) return 'partial';
    const close = expect(t, lt, `</${name}`);
    if (close !== 'yes') return close;
    const e = skipSpace(t, lt + name.length + 2);
    if (e === n) return 'partial';
    return t[e] === '>' ? { at: p, valueStart, valueEnd: lt, end: e + 1, name, kind, syntax } : 'no';
  }
  const quote = syntax === 'json' ? '"' : '\\"';
  const after = (x: 'yes' | 'no' | 'partial', len: number): number | 'partial' | 'no' => (x === 'yes' ? k + len : x);
  let step = after(expect(t, k, quote), quote.length);
  if (typeof step !== 'number') return step;
  k = skipSpace(t, step);
  if (k === n) return 'partial';
  if (t[k] !== ':') return 'no';
  k = skipSpace(t, k + 1);
  if (k === n) return 'partial';
  step = after(expect(t, k, quote), quote.length);
  if (typeof step !== 'number') return step;
  const valueStart = step;
  k = valueStart;
  if (syntax === 'json') {
    while (k < n && t[k] !== '"') k += t[k] === '\\' ? 2 : 1;
    if (k >= n) return 'partial';
  } else {
    k = t.indexOf('\\"', k);
    if (k === -1) return 'partial';
  }
  return { at: p, valueStart, valueEnd: k, end: k + quote.length, name, kind, syntax };
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function decodeValue(raw: string, syntax: Syntax): string | undefined {
  if (syntax === 'xml') {
    return raw.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (all, e: string) => {
      if (e.startsWith('#x')) return String.fromCodePoint(parseInt(e.slice(2), 16));
      if (e.startsWith('#')) return String.fromCodePoint(parseInt(e.slice(1), 10));
      return ENTITIES[e] ?? all;
    });
  }
  if (syntax === 'json-in-string') return raw.includes('\\') ? undefined : raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return undefined;
  }
}

function encodeValue(value: string, syntax: Syntax): string {
  if (syntax === 'xml') return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return JSON.stringify(value).slice(1, -1);
}

/**
 * Finds credential fields in a JSON or XML body as it streams (bytes as latin1: the markup and
 * every credential-shaped value are ASCII) and replaces each value by what `replace` returns.
 * The result is the same however the body is chunked.
 */
export class CredentialFields {
  private carry = '';
  /** Credential-shaped fields seen (replaced or not). */
  found = 0;

  constructor(private readonly replace: Replace) {}

  push(chunk: Buffer): Buffer {
    return this.scan(this.carry + chunk.toString('latin1'), false);
  }

  end(): Buffer {
    return this.scan(this.carry, true);
  }

  private scan(t: string, final: boolean): Buffer {
    const out: string[] = [];
    let c = 0;
    const openers = /<|\\?"/g;
    for (let m = openers.exec(t); m !== null; m = openers.exec(t)) {
      const p = m.index;
      const r = parseAt(t, p);
      if (r === 'no' || (r === 'partial' && final)) {
        // `\"` that is no field: its `"` may still open one.
        openers.lastIndex = p + 1;
        continue;
      }
      if (r === 'partial') {
        if (t.length - p > MAX_FIELD) throw new FieldTooLong();
        out.push(t.slice(c, p));
        this.carry = t.slice(p);
        return Buffer.from(out.join(''), 'latin1');
      }
      const raw = t.slice(r.valueStart, r.valueEnd);
      const value = decodeValue(raw, r.syntax);
      if (value !== undefined && credentialShaped(value)) {
        this.found++;
        const sentinel = this.replace({ name: r.name, kind: r.kind, value });
        if (sentinel !== undefined) {
          out.push(t.slice(c, r.valueStart), encodeValue(sentinel, r.syntax));
          c = r.valueEnd;
        }
      }
      openers.lastIndex = r.end;
    }
    out.push(t.slice(c));
    this.carry = '';
    return Buffer.from(out.join(''), 'latin1');
  }
}

/** The same for a whole form-encoded body (`access_token=…&scope=…`, GitHub's default answer). */
export function replaceFormFields(body: string, replace: Replace): { body: string; found: number } {
  let found = 0;
  const out = body.split('&').map((pair) => {
    const eq = pair.indexOf('=');
    if (eq === -1) return pair;
    const decode = (s: string) => {
      try {
        return decodeURIComponent(s.replace(/\+/g, ' '));
      } catch {
        return undefined;
      }
    };
    const name = decode(pair.slice(0, eq));
    const value = decode(pair.slice(eq + 1));
    const kind = name === undefined ? undefined : fieldKind(name);
    if (!kind || value === undefined || !credentialShaped(value)) return pair;
    found++;
    const sentinel = replace({ name: name!, kind, value });
    return sentinel === undefined ? pair : `${pair.slice(0, eq + 1)}${encodeURIComponent(sentinel)}`;
  });
  return { body: out.join('&'), found };
}

// --- what the call is

/** AWS calls that mint credentials, by signing name and action (documented in the README). */
const MINTING_AWS: Record<string, RegExp> = {
  sts: /^(AssumeRole\w*|AssumeRoot|Get\w*Token)$/,
  iam: /^(CreateAccessKey|CreateServiceSpecificCredential|ResetServiceSpecificCredential)$/,
  ecr: /^GetAuthorizationToken$/,
  'ecr-public': /^GetAuthorizationToken$/,
  codeartifact: /^GetAuthorizationToken$/,
  awsssoportal: /^GetRoleCredentials$/,
  sso: /^GetRoleCredentials$/,
  'sso-oauth': /^(CreateToken\w*|RegisterClient)$/,
  'cognito-identity': /^(GetCredentialsForIdentity|GetOpenIdToken\w*)$/,
  'cognito-idp': /^(InitiateAuth|AdminInitiateAuth|RespondToAuthChallenge|AdminRespondToAuthChallenge)$/,
  redshift: /^GetClusterCredentials\w*$/,
  'redshift-serverless': /^GetCredentials$/,
  gamelift: /^(RequestUploadCredentials|GetInstanceAccess|GetComputeAccess)$/,
};

/** REST calls (no action parameter): method, path, signing name (undefined: also unsigned, as the
 *  SSO portal is, whose bearer token srt may inject) and action. */
const REST_ACTIONS: Array<[method: string, path: RegExp, service: string, unsigned: boolean, action: string]> = [
  ['POST', /^\/v1\/authorization-token$/, 'codeartifact', false, 'GetAuthorizationToken'],
  ['GET', /^\/federation\/credentials$/, 'awsssoportal', true, 'GetRoleCredentials'],
];

export interface AwsCallInput {
  /** The signing name of the request's SigV4 scope (`sts`), when it is signed. */
  service?: string;
  method: string;
  /** Origin-form target (`/?Action=…`). */
  path: string;
  /** `X-Amz-Target` (JSON protocols: `Service_Version.Action`). */
  amzTarget?: string;
  /** A form-encoded body, when srt read it (query protocol POSTs). */
  form?: string;
}

function formValue(text: string, name: string): string | undefined {
  for (const pair of text.split('&')) {
    const eq = pair.indexOf('=');
    if (eq !== -1 && pair.slice(0, eq) === name) {
      try {
        return decodeURIComponent(pair.slice(eq + 1).replace(/\+/g, ' '));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** `service:Action` of an AWS request, as far as srt can tell. */
export function awsAction(c: AwsCallInput): { service?: string; action?: string } {
  const q = c.path.indexOf('?');
  const path = q === -1 ? c.path : c.path.slice(0, q);
  const action =
    c.amzTarget?.slice(c.amzTarget.lastIndexOf('.') + 1) ||
    (q === -1 ? undefined : formValue(c.path.slice(q + 1), 'Action')) ||
    (c.form === undefined ? undefined : formValue(c.form, 'Action'));
  if (action) return { ...(c.service ? { service: c.service } : {}), action };
  const rest = REST_ACTIONS.find(([m, p, s, unsigned]) => m === c.method.toUpperCase() && p.test(path) && (c.service === s || (c.service === undefined && unsigned)));
  return rest ? { service: rest[2], action: rest[4] } : { ...(c.service ? { service: c.service } : {}) };
}

/**
 * The name of a call that mints credentials (`sts:GetSessionToken`, `the token endpoint POST
 * host/path`), or undefined. AWS calls by signing name and action (an unsigned one by its action
 * alone); any other request by what it is: a POST to a token endpoint (a path that ends in
 * `/token` or `/access_token`).
 */
export function mintingCall(c: AwsCallInput & { host: string }): string | undefined {
  const { service, action } = awsAction(c);
  if (service !== undefined && action !== undefined) return MINTING_AWS[service]?.test(action) ? `${service}:${action}` : undefined;
  if (action !== undefined) return Object.values(MINTING_AWS).some((r) => r.test(action)) ? `aws:${action}` : undefined;
  if (service !== undefined) return undefined;
  const path = c.path.split('?')[0]!;
  return c.method.toUpperCase() === 'POST' && /\/(token|access_token)$/i.test(path) ? `the token endpoint POST ${c.host}${path}` : undefined;
}
