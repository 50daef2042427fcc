// A structural checker and evaluator for the Seatbelt profiles srt generates, so they can be
// reviewed and tested without a Mac:
//  - parse: balanced parentheses, strings and comments; unknown syntax is an error;
//  - validate: only known operations and filters, every (param "X") supplied, every regex valid
//    POSIX ERE (a strict grammar here, then compiled by the C library's regcomp, a real ERE engine);
//  - evaluate: the decision for one operation on one object, with Seatbelt's precedence (the last
//    matching rule wins, `(deny default)` when none matches) and regexes matched by regexec.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Node = { kind: 'list'; items: Node[] } | { kind: 'atom'; text: string } | { kind: 'string'; text: string };

export function parseSbpl(text: string): Node[] {
  const out: Node[] = [];
  const stack: Node[][] = [out];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ';') { while (i < text.length && text[i] !== '\n') i++; continue; }
    if (/\s/.test(c)) { i++; continue; }
    if (c === '(') { const items: Node[] = []; stack[stack.length - 1]!.push({ kind: 'list', items }); stack.push(items); i++; continue; }
    if (c === ')') {
      if (stack.length === 1) throw new Error(`unbalanced ")" at offset ${i}`);
      stack.pop(); i++; continue;
    }
    if (c === '"' || (c === '#' && text[i + 1] === '"')) {
      const raw = c === '#';
      i += raw ? 2 : 1;
      let s = '';
      for (;;) {
        if (i >= text.length) throw new Error('unterminated string');
        const d = text[i]!;
        if (d === '"') { i++; break; }
        if (d === '\\' && !raw) {
          const e = text[i + 1];
          if (e !== '\\' && e !== '"') throw new Error(`unknown string escape \\${e} at offset ${i}`);
          s += e; i += 2; continue;
        }
        if (d === '\n') throw new Error(`newline inside a string at offset ${i}`);
        s += d; i++;
      }
      stack[stack.length - 1]!.push({ kind: 'string', text: s });
      continue;
    }
    const m = /^[A-Za-z0-9*_.:+-]+/.exec(text.slice(i));
    if (!m) throw new Error(`unexpected character ${JSON.stringify(c)} at offset ${i}`);
    stack[stack.length - 1]!.push({ kind: 'atom', text: m[0] });
    i += m[0].length;
  }
  if (stack.length !== 1) throw new Error(`${stack.length - 1} unclosed "("`);
  return out;
}

/** Seatbelt operations (Apple's sandbox operation names); a profile using any other fails to compile. */
export const KNOWN_OPERATIONS = new Set([
  'default', 'process-fork', 'process-exec', 'process-exec*', 'process-info*', 'signal', 'sysctl-read', 'sysctl-write',
  'mach-lookup', 'user-preference-read', 'ipc-posix-shm', 'ipc-posix-sem', 'file-read*', 'file-read-data',
  'file-read-metadata', 'file-read-xattr', 'file-write*', 'file-write-data', 'file-write-create', 'file-write-unlink',
  'file-write-mode', 'file-write-owner', 'file-write-times', 'file-write-xattr', 'file-write-flags', 'file-write-setugid',
  'file-ioctl', 'file-link', 'system-socket', 'network-outbound', 'network-inbound', 'network-bind', 'network*',
  'pseudo-tty', 'appleevent-send',
]);
const PATH_FILTERS = new Set(['literal', 'subpath', 'regex']);
const KNOWN_FILTERS = new Set([...PATH_FILTERS, 'require-all', 'require-any', 'require-not', 'vnode-type', 'target',
  'sysctl-name', 'sysctl-name-prefix', 'global-name', 'remote', 'local', 'socket-domain', 'ioctl-command']);
/** Terminal ioctl names SBPL knows (<sys/ttycom.h>). */
const IOCTL_NAMES = new Set(['TIOCGETA', 'TIOCSETA', 'TIOCSETAW', 'TIOCSETAF', 'TIOCGWINSZ', 'TIOCSWINSZ', 'TIOCSTI', 'TIOCSCTTY']);
const VNODE_TYPES = new Set(['DIRECTORY', 'REGULAR-FILE', 'SYMLINK', 'CHARACTER-DEVICE']);

export interface Rule { action: 'allow' | 'deny'; ops: string[]; filters: Node[]; message?: string }

export interface Profile {
  rules: Rule[];
  /** Every regex value, with the rule text it came from. */
  regexes: string[];
}

function str(node: Node | undefined, what: string, params: ReadonlyMap<string, string>): string {
  if (!node) throw new Error(`${what}: missing value`);
  if (node.kind === 'string') return node.text;
  if (node.kind === 'list' && node.items[0]?.kind === 'atom' && node.items[0].text === 'param') {
    const name = node.items[1];
    if (node.items.length !== 2 || name?.kind !== 'string') throw new Error('(param "NAME") takes one string');
    const v = params.get(name.text);
    if (v === undefined) throw new Error(`(param "${name.text}") has no -D value`);
    return v;
  }
  throw new Error(`${what}: expected a string or (param "…")`);
}

/** Validate a parsed profile; returns its rules (with params resolved lazily by evaluate). */
export function validateProfile(nodes: Node[], params: ReadonlyMap<string, string>): Profile {
  const [version, ...rest] = nodes;
  if (version?.kind !== 'list' || version.items.map((n) => (n.kind === 'atom' ? n.text : '?')).join(' ') !== 'version 1') {
    throw new Error('the profile must start with (version 1)');
  }
  const rules: Rule[] = [];
  const regexes: string[] = [];
  const filter = (n: Node): void => {
    if (n.kind !== 'list' || n.items[0]?.kind !== 'atom') throw new Error(`expected a filter, got ${JSON.stringify(n)}`);
    const head = n.items[0].text;
    const args = n.items.slice(1);
    if (!KNOWN_FILTERS.has(head)) throw new Error(`unknown filter ${head}`);
    if (head === 'require-all' || head === 'require-any') {
      if (args.length === 0) throw new Error(`${head} needs filters`);
      args.forEach(filter);
    } else if (head === 'require-not') {
      if (args.length !== 1) throw new Error('require-not takes one filter');
      filter(args[0]!);
    } else if (head === 'vnode-type') {
      if (args[0]?.kind !== 'atom' || !VNODE_TYPES.has(args[0].text)) throw new Error('vnode-type needs a known type');
    } else if (head === 'target') {
      if (args[0]?.kind !== 'atom' || !['self', 'same-sandbox', 'children'].includes(args[0].text)) throw new Error('unknown target');
    } else if (head === 'remote' || head === 'local') {
      const kind = args[0];
      if (kind?.kind !== 'atom' || !['ip', 'unix-socket'].includes(kind.text)) throw new Error(`${head} needs ip or unix-socket`);
      if (kind.text === 'ip') {
        const addr = str(args[1], `${head} ip`, params);
        if (!/^(localhost|\*):(\*|[1-9]\d{0,4})$/.test(addr)) throw new Error(`${head} ip "${addr}": Seatbelt only knows localhost or * with a port or *`);
      } else {
        const f = args[1];
        if (f?.kind !== 'list' || f.items[0]?.kind !== 'atom' || !['subpath', 'literal', 'path-regex'].includes(f.items[0].text)) throw new Error('unix-socket needs a path filter');
        const v = str(f.items[1], 'unix-socket path', params);
        if (f.items[0].text === 'path-regex') { checkEre(v); regexes.push(v); } else if (!v.startsWith('/')) throw new Error(`unix-socket path ${v} is not absolute`);
      }
    } else if (head === 'ioctl-command') {
      if (args.length !== 1 || args[0]?.kind !== 'atom' || !IOCTL_NAMES.has(args[0].text)) throw new Error('ioctl-command needs one known ioctl name');
    } else if (head === 'socket-domain') {
      if (args[0]?.kind !== 'atom' || args[0].text !== 'AF_UNIX') throw new Error('socket-domain: only AF_UNIX');
    } else {
      const v = str(args[0], head, params);
      if (args.length !== 1) throw new Error(`${head} takes one value`);
      if (head === 'regex') { checkEre(v); regexes.push(v); } else if (PATH_FILTERS.has(head) && !v.startsWith('/')) throw new Error(`${head} "${v}" is not an absolute path`);
    }
  };
  for (const n of rest) {
    if (n.kind !== 'list' || n.items[0]?.kind !== 'atom' || !['allow', 'deny'].includes(n.items[0].text)) throw new Error(`top-level form must be allow or deny: ${JSON.stringify(n).slice(0, 80)}`);
    const action = n.items[0].text as 'allow' | 'deny';
    const ops: string[] = [];
    const filters: Node[] = [];
    let message: string | undefined;
    for (const item of n.items.slice(1)) {
      if (item.kind === 'atom') {
        if (filters.length) throw new Error(`operation ${item.text} after a filter`);
        if (!KNOWN_OPERATIONS.has(item.text)) throw new Error(`unknown operation ${item.text}`);
        ops.push(item.text);
      } else if (item.kind === 'list' && item.items[0]?.kind === 'atom' && item.items[0].text === 'with') {
        if (item.items[1]?.kind !== 'atom' || item.items[1].text !== 'message') throw new Error('only (with message "…") is used');
        message = str(item.items[2], 'message', params);
      } else {
        filter(item);
        filters.push(item);
      }
    }
    if (ops.length === 0) throw new Error('a rule without an operation');
    rules.push({ action, ops, filters, ...(message !== undefined ? { message } : {}) });
  }
  ereMatchAll(regexes, []); // every regex compiles in a real POSIX engine
  return { rules, regexes };
}

// --- POSIX ERE

/** A strict POSIX ERE grammar check: only the portable constructs (no intervals, back references,
 *  GNU escapes or classes, no `\` before an ordinary character). validateProfile then compiles
 *  every regex with regcomp. */
export function checkEre(re: string): void {
  const chars = [...re];
  let i = 0;
  let depth = 0;
  let lastWasAtom = false;
  const fail = (why: string) => { throw new Error(`regex ${JSON.stringify(re)}: ${why} at ${i}`); };
  while (i < chars.length) {
    const c = chars[i]!;
    if (c === '\\') {
      const e = chars[i + 1];
      if (e === undefined || !'.[\\()*+?{|^$'.includes(e)) fail(`\\${e ?? ''} is not a POSIX ERE escape`);
      i += 2; lastWasAtom = true; continue;
    }
    if (c === '[') {
      let j = i + 1;
      if (chars[j] === '^') j++;
      if (chars[j] === ']') j++;
      for (; j < chars.length && chars[j] !== ']'; j++) {
        if (chars[j] === '[' && ['.', ':', '='].includes(chars[j + 1] ?? '')) fail('collating elements and character classes are not used');
      }
      if (j >= chars.length) fail('unterminated bracket expression');
      i = j + 1; lastWasAtom = true; continue;
    }
    if (c === '(') { depth++; i++; lastWasAtom = false; if (chars[i] === ')' || chars[i] === '|') fail('empty group or branch'); continue; }
    if (c === ')') { if (--depth < 0) fail('unbalanced )'); i++; lastWasAtom = true; continue; }
    if (c === '|') { if (chars[i + 1] === ')' || chars[i + 1] === '|' || i + 1 === chars.length) fail('empty branch'); i++; lastWasAtom = false; continue; }
    if ('*+?'.includes(c)) { if (!lastWasAtom) fail(`${c} without an atom`); i++; lastWasAtom = false; continue; }
    if (c === '{') fail('intervals are not used');
    i++; lastWasAtom = c !== '^';
  }
  if (depth !== 0) fail('unbalanced (');
}

const ENGINE_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'ere', 'ere-match.c');
let engine: string | undefined;

/** The C library's POSIX regcomp/regexec (test/unit/ere/ere-match.c), compiled once per source. */
function ereEngine(): string {
  if (engine) return engine;
  const source = readFileSync(ENGINE_SOURCE);
  const bin = join(tmpdir(), `srt-ere-match-${createHash('sha256').update(source).digest('hex').slice(0, 16)}`);
  if (!existsSync(bin)) {
    const tmp = `${bin}.${process.pid}`;
    execFileSync('cc', ['-O2', '-o', tmp, ENGINE_SOURCE]);
    renameSync(tmp, bin);
  }
  return (engine = bin);
}

/** Which subjects each POSIX ERE matches (regexec), in a character (C.UTF-8) or byte (C) locale.
 *  One engine run for them all; a regex that does not compile is an error naming it. */
export function ereMatchAll(res: readonly string[], subjects: readonly (string | Buffer)[], locale: 'C.UTF-8' | 'C' = 'C.UTF-8'): boolean[][] {
  if (res.length === 0) return [];
  for (const re of res) if (re.includes('\0')) throw new Error('a regex cannot hold NUL');
  const rec = (s: string | Buffer) => Buffer.concat([Buffer.from(s), Buffer.from([0])]);
  const input = Buffer.concat([rec(String(res.length)), ...res.map(rec), ...subjects.map(rec)]);
  let out: string;
  try {
    out = execFileSync(ereEngine(), [], { input, env: { LC_ALL: locale }, maxBuffer: 1 << 28 }).toString();
  } catch (e) {
    const msg = (e as { stderr?: Buffer }).stderr?.toString().trim() ?? String(e);
    const k = Number(msg.split(' ')[0]);
    throw new Error(`regcomp(REG_EXTENDED) rejects ${JSON.stringify(res[k])}: ${msg.slice(msg.indexOf(' ') + 1)}`);
  }
  return out.split('\n').slice(0, res.length).map((line) => subjects.map((_, j) => line[j] === '1'));
}

export function ereMatch(re: string, subjects: readonly (string | Buffer)[], locale: 'C.UTF-8' | 'C' = 'C.UTF-8'): boolean[] {
  return ereMatchAll([re], subjects, locale)[0]!;
}

/** Regex results (a pure function of regex and subject), shared by every evaluator: a test over
 *  many profiles matches all their regexes in one engine run (a run per profile is slow on a
 *  loaded machine). */
const shared = new Map<string, Map<string, boolean>>();

export function primeRegexes(res: readonly string[], paths: readonly string[]): void {
  const unique = [...new Set(res)];
  const matrix = ereMatchAll(unique, paths);
  unique.forEach((re, k) => {
    const m = shared.get(re) ?? new Map<string, boolean>();
    paths.forEach((p, j) => m.set(p, matrix[k]![j]!));
    shared.set(re, m);
  });
}

// --- evaluation

export interface Query {
  op: string;
  path?: string;
  type?: 'DIRECTORY' | 'REGULAR-FILE' | 'SYMLINK' | 'CHARACTER-DEVICE';
  remoteIp?: string;
  localIp?: string;
  unixPath?: string;
  machName?: string;
  sysctl?: string;
  target?: 'self' | 'same-sandbox' | 'others';
  socketDomain?: string;
  ioctl?: string;
}

const opMatches = (ruleOp: string, op: string) => ruleOp === 'default' || ruleOp === op || (ruleOp.endsWith('*') && op.startsWith(ruleOp.slice(0, -1)));

export class Evaluator {
  constructor(readonly profile: Profile, private readonly params: ReadonlyMap<string, string>) {}

  /** Match every regex of the profile not yet matched against these paths at once (one engine run). */
  prime(paths: readonly string[]): void {
    const res = this.profile.regexes.filter((re) => paths.some((p) => !shared.get(re)?.has(p)));
    if (res.length > 0) primeRegexes(res, paths);
  }

  private regex(re: string, s: string): boolean {
    if (!shared.get(re)?.has(s)) this.prime([s]); // every regex for this subject at once
    if (!shared.get(re)?.has(s)) primeRegexes([re], [s]); // a regex the profile's list does not hold
    return shared.get(re)!.get(s)!;
  }

  private filter(n: Node, q: Query): boolean {
    if (n.kind !== 'list' || n.items[0]?.kind !== 'atom') return false;
    const head = n.items[0].text;
    const args = n.items.slice(1);
    const value = (k = 0) => str(args[k], head, this.params);
    switch (head) {
      case 'require-all': return args.every((a) => this.filter(a, q));
      case 'require-any': return args.some((a) => this.filter(a, q));
      case 'require-not': return !this.filter(args[0]!, q);
      case 'vnode-type': return q.type === (args[0] as { text: string }).text;
      case 'literal': return q.path === value();
      case 'subpath': { const p = value(); return q.path !== undefined && (q.path === p || p === '/' || q.path.startsWith(`${p}/`)); }
      case 'regex': return q.path !== undefined && this.regex(value(), q.path);
      case 'target': return q.target !== undefined && (q.target === (args[0] as { text: string }).text || (q.target === 'self' && (args[0] as { text: string }).text === 'same-sandbox'));
      case 'sysctl-name': return q.sysctl === value();
      case 'sysctl-name-prefix': return q.sysctl?.startsWith(value()) ?? false;
      case 'global-name': return q.machName === value();
      case 'socket-domain': return q.socketDomain === (args[0] as { text: string }).text;
      case 'ioctl-command': return q.ioctl === (args[0] as { text: string }).text;
      case 'remote': case 'local': {
        const kind = (args[0] as { text: string }).text;
        if (kind === 'ip') {
          const have = head === 'remote' ? q.remoteIp : q.localIp;
          if (!have) return false;
          const [wantHost, wantPort] = value(1).split(':');
          const [host, port] = have.split(':');
          return (wantHost === '*' || wantHost === host) && (wantPort === '*' || wantPort === port);
        }
        if (!q.unixPath) return false;
        const f = args[1] as { items: Node[] };
        const fh = (f.items[0] as { text: string }).text;
        const v = str(f.items[1], fh, this.params);
        if (fh === 'path-regex') return this.regex(v, q.unixPath);
        if (fh === 'literal') return q.unixPath === v;
        return q.unixPath === v || q.unixPath.startsWith(`${v}/`);
      }
      default: throw new Error(`cannot evaluate ${head}`);
    }
  }

  /** The rule that decides (the last one that matches), or undefined for the implicit default. */
  decide(q: Query): { allowed: boolean; rule?: Rule } {
    for (let k = this.profile.rules.length - 1; k >= 0; k--) {
      const r = this.profile.rules[k]!;
      if (!r.ops.some((o) => opMatches(o, q.op))) continue;
      if (r.filters.length && !r.filters.some((f) => this.filter(f, q))) continue;
      return { allowed: r.action === 'allow', rule: r };
    }
    return { allowed: false };
  }

  allows(q: Query): boolean {
    return this.decide(q).allowed;
  }
}

/** Parse, validate and wrap a profile with its -D parameters. */
export function loadProfile(text: string, params: Iterable<[string, string]>): Evaluator {
  const map = new Map(params);
  return new Evaluator(validateProfile(parseSbpl(text), map), map);
}
