// srt-init's record of its last walk (init/listing.c, --cache; src/platform/search.ts): a
// directory whose (device, inode, ctime) is what it was before the last walk read it is not read
// again. These tests show that the record is used (a planted entry comes back), that any change
// of stamp, trust, walk or root, or any damage, makes srt-init read the tree again, and that a
// protected path or denied file that appears between two real srt runs — made by the command
// before, by a host program, renamed into place, or in a directory whose mtime was set back — is
// still protected in the next.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findInitHelper } from '../../src/platform/init-helper.js';
import { listProtected } from '../../src/platform/search.js';
import { protectedListArgs } from '../../src/profiles/protected.js';
import { attempt, NO_SUPERVISOR, results, scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-walk-record-');
afterAll(() => tmp.cleanup());
const scratch = scratchDirs(() => join(tmp.path, 'runs'));

const helper = (): string => {
  const h = findInitHelper();
  if (!('path' in h)) throw new Error(h.error);
  return h.path;
};
const ARGS = protectedListArgs(3);

/** srt-init's walk of `dir` with `record` on stdin; its listing (sorted) and the record it wrote. */
function walk(dir: string, record?: Buffer, output = join(tmp.path, 'out.rec')): { listing: string[]; written: boolean; kept: boolean; record: Buffer } {
  const input = join(tmp.path, 'in.rec');
  writeFileSync(input, record ?? '');
  if (output !== '/dev/full') writeFileSync(output, '');
  const fds = [openSync(input, 'r'), openSync(output, 'w')];
  try {
    const r = spawnSync(helper(), [...ARGS, '--cache'], { cwd: dir, stdio: [fds[0]!, 'pipe', 'pipe', fds[1]!] });
    expect(r.status, String(r.stderr)).toBe(0);
    const records = r.stdout.toString('utf8').split('\0').slice(0, -1);
    return { listing: records.filter((x) => x !== 'C' && x !== 'K').sort(), written: records.includes('C'), kept: records.includes('K'), record: output === '/dev/full' ? Buffer.alloc(0) : readFileSync(output) };
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}

/** The plain walk (no record), sorted. */
const plain = (dir: string) => execFileSync(helper(), ARGS, { cwd: dir, encoding: 'utf8' }).split('\0').slice(0, -1).sort();

/** Wait until every directory below `dir` changed more than the walk's margin (2 s) ago. */
async function settle(dir: string): Promise<void> {
  const newest = Math.max(...[dir, ...readdirSync(dir, { recursive: true }).map((p) => join(dir, String(p)))]
    .map((p) => statSync(p)).filter((s) => s.isDirectory()).map((s) => s.ctimeMs));
  while (Math.floor(Date.now() / 1000) - 2 <= Math.floor(newest / 1000)) await new Promise((r) => setTimeout(r, 100));
}

/** A record in srt-init's format (little-endian, as this machine writes it). */
interface Node { dir: string; trusted?: boolean; nsecDelta?: number; items: ([kind: 'f' | 'l' | 'u', name: string] | [kind: 's', name: string, node: Node])[] }
function encode(root: string, top: Node, opts: { args?: string[]; ino?: bigint } = {}): Buffer {
  const parts: Buffer[] = [Buffer.from('srt-tree 1\0')];
  for (const a of opts.args ?? ARGS.slice(1)) parts.push(Buffer.from(`${a}\0`));
  parts.push(Buffer.from([0]));
  const r = statSync(root, { bigint: true });
  const u64 = (v: bigint) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(v); return b; };
  parts.push(u64(r.dev), u64(opts.ino ?? r.ino));
  const node = (n: Node) => {
    const s = statSync(n.dir, { bigint: true });
    const tail = Buffer.alloc(13);
    tail.writeBigInt64LE(s.ctimeNs / 1_000_000_000n);
    tail.writeUInt32LE(Number(s.ctimeNs % 1_000_000_000n) + (n.nsecDelta ?? 0), 8);
    tail[12] = n.trusted === false ? 0 : 1;
    parts.push(Buffer.from('D'), u64(s.dev), u64(s.ino), tail);
    for (const [kind, name, child] of n.items) {
      const len = Buffer.alloc(2);
      len.writeUInt16LE(Buffer.byteLength(name));
      parts.push(Buffer.from(kind), len, Buffer.from(name));
      if (child) node(child);
    }
    parts.push(Buffer.from('x'));
  };
  node(top);
  parts.push(Buffer.from('E'));
  const body = Buffer.concat(parts);
  let h = 0xcbf29ce484222325n;
  for (const c of body) h = BigInt.asUintN(64, (h ^ BigInt(c)) * 0x100000001b3n);
  return Buffer.concat([body, u64(h)]);
}

describe("srt-init's walk record", () => {
  const tree = join(tmp.path, 'tree');
  mkdirSync(join(tree, 'a/b'), { recursive: true });
  writeFileSync(join(tree, '.bashrc'), '');
  writeFileSync(join(tree, 'a/b/.profile'), '');
  writeFileSync(join(tree, 'a/notes.txt'), '');

  it('replays a directory whose stamp is unchanged, and reads one whose stamp, trust, walk or root differs', async () => {
    await settle(tree);
    const truth = plain(tree);
    const b = (over: Partial<Node> = {}): Node => ({ dir: join(tree, 'a/b'), items: [['f', 'b-ghost']], ...over });
    const a = (sub: Node, over: Partial<Node> = {}): Node => ({ dir: join(tree, 'a'), items: [['f', 'a-ghost'], ['s', 'b', sub]], ...over });
    const top = (sub: Node, over: Partial<Node> = {}): Node => ({ dir: tree, items: [['f', 'ghost'], ['s', 'a', sub]], ...over });
    // All unchanged: nothing is read, the record is the listing (srt-init cannot tell a ghost).
    expect(truth).toEqual(['f.bashrc', 'fa/b/.profile']);
    expect(walk(tree, encode(tree, top(a(b())))).listing).toEqual(['fa/a-ghost', 'fa/b/b-ghost', 'fghost']);
    // a's ctime one nanosecond off: a is read (its subdirectory b still replays).
    expect(walk(tree, encode(tree, top(a(b(), { nsecDelta: 1 })))).listing).toEqual(['fa/b/b-ghost', 'fghost']);
    // b recorded as too recent to trust: read.
    expect(walk(tree, encode(tree, top(a(b({ trusted: false }))))).listing).toEqual(['fa/a-ghost', 'fa/b/.profile', 'fghost']);
    // The root too recent: read; a, unchanged below it, replays.
    expect(walk(tree, encode(tree, top(a(b()), { trusted: false }))).listing).toEqual(['f.bashrc', 'fa/a-ghost', 'fa/b/b-ghost']);
    // Another walk (depth), or the root another directory: nothing of the record is used.
    expect(walk(tree, encode(tree, top(a(b())), { args: ['4', ...ARGS.slice(2)] })).listing).toEqual(truth);
    expect(walk(tree, encode(tree, top(a(b())), { ino: 1n })).listing).toEqual(truth);
    // The record srt-init writes is its own listing back.
    const first = walk(tree);
    expect(first.written).toBe(true);
    expect(first.listing).toEqual(truth);
    // Walked again unchanged, it would write the same record: it writes none and says the one
    // that came in stands.
    const again = walk(tree, first.record);
    expect(again.listing).toEqual(truth);
    expect(again).toMatchObject({ written: false, kept: true, record: Buffer.alloc(0) });
    // Any change of stamp writes a whole new record, not only from where it differs: one of
    // the root's (its first directory) and one of a's (after the root's items).
    writeFileSync(join(tree, 'a/extra'), '');
    await settle(tree);
    const changed = walk(tree, first.record);
    expect(changed).toMatchObject({ written: true, kept: false, listing: truth });
    expect(changed.record.equals(first.record)).toBe(false);
    expect(walk(tree, changed.record)).toMatchObject({ kept: true, listing: truth });
    expect(walk(tree, changed.record.subarray(0, changed.record.length - 1))).toMatchObject({ written: true, record: changed.record });
    writeFileSync(join(tree, 'new.txt'), '');
    await settle(tree);
    const root = walk(tree, changed.record);
    expect(root).toMatchObject({ written: true, kept: false });
    expect(walk(tree, root.record)).toMatchObject({ kept: true, listing: truth });
    rmSync(join(tree, 'a/extra'));
    rmSync(join(tree, 'new.txt'));
  });

  it('a directory changed within the margin before the walk (2 s: the clock tick of a ctime) is recorded as not to be trusted', async () => {
    const fresh = join(tmp.path, 'fresh');
    mkdirSync(fresh);
    // The root's trust byte: after the header (magic, arguments, device, inode) and its stamp.
    const at = 'srt-tree 1\0'.length + ARGS.slice(1).reduce((n, a) => n + Buffer.byteLength(a) + 1, 0) + 1 + 16 + 1 + 28;
    expect(walk(fresh).record[at]).toBe(0);
    await settle(fresh);
    expect(walk(fresh).record[at]).toBe(1);
  });

  it('a record cut short, damaged anywhere or naming a path out of its directory is not used, and the walk never fails for it', async () => {
    await settle(tree);
    const truth = plain(tree);
    const good = walk(tree).record;
    // Planted: a ghost the record would carry if it were used.
    const ghost = encode(tree, { dir: tree, items: [['f', 'ghost']] });
    expect(walk(tree, ghost).listing).toContain('fghost');
    const bad: Buffer[] = [Buffer.from('garbage'), Buffer.alloc(4096, 0xff)];
    for (let n = 0; n < ghost.length; n += 7) bad.push(ghost.subarray(0, n));
    for (let i = 0; i < ghost.length; i += 5) {
      const flipped = Buffer.from(ghost);
      flipped[i] ^= 0x10;
      bad.push(flipped);
    }
    bad.push(Buffer.concat([ghost, Buffer.from('x')]));
    for (const name of ['..', '.', 'x/y', 'nul\0x']) {
      bad.push(encode(tree, { dir: tree, items: [['f', 'ghost'], ['s', name, { dir: join(tree, 'a'), items: [] }]] }));
    }
    for (const record of bad) {
      const r = walk(tree, record);
      expect(r.listing, record.toString('hex').slice(0, 80)).toEqual(truth);
      expect(r.written).toBe(true);
    }
    expect(walk(tree, good).listing).toEqual(truth);
    // A record that cannot be written (disk full): the listing stands, the record is not kept.
    const full = walk(tree, good, '/dev/full');
    expect(full.listing).toEqual(truth);
    expect(full.written).toBe(false);
  });

  it('an overlayfs root is read every time: names written into the lower layer appear in a merged directory whose ctime (the upper one\'s) stays', (ctx) => {
    const base = join(tmp.path, 'overlay');
    for (const d of ['lower/sub', 'upper', 'work', 'merged']) mkdirSync(join(base, d), { recursive: true });
    writeFileSync(join(base, 'lower/sub/a'), '');
    const args = [...ARGS, '--cache'].map((a) => `'${a}'`).join(' ');
    // In a user and mount namespace of its own (no root needed): record, wait until the merged
    // directories are past the margin, record again (now trusted), then a program writes a
    // protected file straight into the lower layer, and the walk with that record lists.
    const script = `set -e
      mount -t overlay overlay -o lowerdir=lower,upperdir=upper,workdir=work merged || exit 77
      touch merged/sub/b
      cd merged
      "$0" ${args} </dev/null 3>../rec1 >/dev/null
      while [ $(($(date +%s) - 2)) -le "$(stat -c %Z . sub | sort -n | tail -1)" ]; do sleep 0.1; done
      "$0" ${args} <../rec1 3>../rec2 >/dev/null
      mkdir ../lower/sub/.vscode && echo '{}' > ../lower/sub/.vscode/settings.json
      "$0" ${args} <../rec2 3>../rec3`;
    const r = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script, helper()], { cwd: base });
    if (r.status === 77 || (r.status !== 0 && /unshare/.test(String(r.stderr)))) ctx.skip();
    expect(r.status, String(r.stderr)).toBe(0);
    expect(r.stdout.toString('utf8').split('\0')).toContain('fsub/.vscode/settings.json');
  });

  it("the library's watch of an overlayfs tree is stale at once: a name written into the lower layer raises no event", (ctx) => {
    const base = join(tmp.path, 'overlay-watch');
    for (const d of ['lower/sub', 'upper', 'work', 'merged']) mkdirSync(join(base, d), { recursive: true });
    writeFileSync(join(base, 'lower/sub/a'), '');
    writeFileSync(join(base, 'watch.mjs'), `import { mkdirSync, writeFileSync } from 'node:fs';
      const { TreeWatch } = await import(process.argv[2]);
      const w = new TreeWatch('run');
      const p = w.pin('merged');
      w.tree(p.at, 3);
      mkdirSync('lower/sub/.vscode');
      writeFileSync('lower/sub/.vscode/settings.json', '{}');
      console.log((await w.check()) ?? 'current');
      p.close();`);
    const script = `mount -t overlay overlay -o lowerdir=lower,upperdir=upper,workdir=work merged || exit 77
      touch merged/sub/b && "$0" watch.mjs "$1" && ls -A merged/sub`;
    const module = join(import.meta.dirname, '../../dist/platform/tree-watch.js');
    const r = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script, process.execPath, module], { cwd: base, encoding: 'utf8' });
    if (r.status === 77 || (r.status !== 0 && /unshare/.test(r.stderr))) ctx.skip();
    expect(r.status, r.stderr).toBe(0);
    const [verdict, ...listed] = r.stdout.trim().split('\n');
    expect(listed).toContain('.vscode'); // the merged directory shows it
    expect(verdict).toMatch(/overlay file system/);
  });

  it("srt keeps the record in ~/.srt/cache/tree, the user's alone, and reads none that others may write", async () => {
    const { home } = scratch();
    const root = join(tmp.path, 'big');
    // Larger than srt's in-process walk takes (search-walk.ts WALK_BUDGET).
    for (let d = 0; d < 30; d++) {
      mkdirSync(join(root, `d${d}`), { recursive: true });
      for (let f = 0; f < 80; f++) writeFileSync(join(root, `d${d}`, `f${f}`), '');
    }
    writeFileSync(join(root, 'd3', '.bashrc'), '');
    await settle(root);
    const list = async () => (await listProtected([{ root }], 3, undefined, home))[0]!.files.sort();
    expect(await list()).toEqual(['d3/.bashrc']);
    const dir = join(home, '.srt/cache/tree');
    const [name, ...more] = readdirSync(dir);
    expect(more).toEqual([]);
    const file = join(dir, name!);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // The tree unchanged: the walk repeats the record, which stays as it is (no temporary left).
    const ino = statSync(file).ino;
    expect(await list()).toEqual(['d3/.bashrc']);
    expect(readdirSync(dir)).toEqual([name]);
    expect(statSync(file).ino).toBe(ino);
    // A host program's new protected file: a new record, in which it is found next time too.
    writeFileSync(join(root, 'd7', '.zshrc'), '');
    await settle(root);
    expect(await list()).toEqual(['d3/.bashrc', 'd7/.zshrc']);
    expect(statSync(file).ino).not.toBe(ino);
    expect(await list()).toEqual(['d3/.bashrc', 'd7/.zshrc']);
    expect(readdirSync(dir)).toEqual([name]);
    rmSync(join(root, 'd7', '.zshrc'));
    await settle(root);
    // A planted record is read (proof that the record is used) while it is the user's alone.
    writeFileSync(file, encode(root, { dir: root, items: [['f', 'ghost']] }));
    expect(await list()).toEqual(['ghost']);
    for (const [path, mode] of [[file, 0o620], [file, 0o602], [dir, 0o770], [join(home, '.srt'), 0o777]] as const) {
      writeFileSync(file, encode(root, { dir: root, items: [['f', 'ghost']] }));
      chmodSync(path, mode);
      expect(await list(), `${path} ${mode.toString(8)}`).toEqual(['d3/.bashrc']);
      chmodSync(path, path === file ? 0o600 : 0o700);
    }
    // Shrunk below the in-process walk's budget, a tree with a record still goes to srt-init
    // (its listing is the same); without the record it is walked in process, and none is kept.
    for (let d = 1; d < 30; d++) if (d !== 3) rmSync(join(root, `d${d}`), { recursive: true });
    await settle(root);
    writeFileSync(file, encode(root, { dir: root, items: [['f', 'ghost']] }));
    expect(await list()).toEqual(['ghost']);
    rmSync(file);
    expect(await list()).toEqual(['d3/.bashrc']);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('a protected path or denied file that appears between two srt runs is protected in the next', () => {
  // A symlink with a protected name keeps what it points to from the command; only the search
  // finds it (the supervisor judges names, not what links elsewhere point to).
  it.each([['with the supervisor', {}], ['without it (placeholders)', NO_SUPERVISOR]])('made by the command before, by a host program, renamed into place, in a directory whose mtime was set back; a damaged record is ignored, %s', async (_, mode) => {
    const { base, home, cwd } = scratch();
    for (let d = 0; d < 30; d++) {
      mkdirSync(join(cwd, `p${d}`, 'x'), { recursive: true });
      for (let f = 0; f < 80; f++) writeFileSync(join(cwd, `p${d}`, `f${f}`), '');
      writeFileSync(join(cwd, `p${d}`, 'x', 't.json'), '{}');
    }
    const settings = join(base, 'settings.json');
    writeFileSync(settings, JSON.stringify({ filesystem: { denyRead: ['**/*.pem'] } }));
    const run = async (script: string) => {
      const r = await srt(['--settings', settings, '--', 'sh', '-c', script], { home, cwd, ...mode });
      expect(r.exitCode, r.stderr).toBe(0);
      return results(r.stdout);
    };
    const link = (dir: string) => symlinkSync('t.json', join(dir, '.mcp.json'));
    const target = (d: string) => attempt(d, `echo evil >> ${d}/x/t.json`);
    await settle(cwd);
    // Run 1 records the tree; its command makes such a link (the supervisor refuses the name).
    const made = await run([attempt('made', 'ln -s t.json p1/x/.mcp.json'), target('p0')].join('\n'));
    expect(made).toEqual({ made: mode === NO_SUPERVISOR ? 'yes' : 'no', p0: 'yes' });
    expect(readdirSync(join(home, '.srt/cache/tree'))).toHaveLength(1);
    // Between the runs: a host program makes one, one is renamed into place, one is made in a
    // directory whose times are then set back, a denied file appears.
    link(join(cwd, 'p2/x'));
    mkdirSync(join(base, 'elsewhere'));
    writeFileSync(join(base, 'elsewhere', 't.json'), '{}');
    link(join(base, 'elsewhere'));
    renameSync(join(cwd, 'p3/x'), join(base, 'old-x'));
    renameSync(join(base, 'elsewhere'), join(cwd, 'p3/x'));
    // Its mtime set back to what it was (what an mtime-keyed record would take as unchanged).
    const mtime = statSync(join(cwd, 'p4/x'), { bigint: true }).mtimeNs;
    link(join(cwd, 'p4/x'));
    execFileSync('touch', ['-m', '-d', `@${mtime / 1_000_000_000n}.${String(mtime % 1_000_000_000n).padStart(9, '0')}`, join(cwd, 'p4/x')]);
    expect(statSync(join(cwd, 'p4/x'), { bigint: true }).mtimeNs).toBe(mtime);
    writeFileSync(join(cwd, 'p5/x/key.pem'), 'secret');
    // Past the walk's margin for recent changes: only the stamps can tell.
    await settle(cwd);
    const [name] = readdirSync(join(home, '.srt/cache/tree'));
    const file = join(home, '.srt/cache/tree', name!);
    const res = await run(['p0', 'p1', 'p2', 'p3', 'p4'].map(target).concat(attempt('pem', 'cat p5/x/key.pem'), attempt('record', `echo x >> ${file}`)).join('\n'));
    expect(res).toEqual({ p0: 'yes', p1: mode === NO_SUPERVISOR ? 'no' : 'yes', p2: 'no', p3: 'no', p4: 'no', pem: 'no', record: 'no' });
    // A damaged record: ignored, the tree read anew (a link made meanwhile is found).
    const damaged = readFileSync(file);
    damaged[damaged.length >> 1] ^= 0xff;
    writeFileSync(file, damaged);
    link(join(cwd, 'p6/x'));
    await settle(cwd);
    expect(await run([target('p6'), target('p0')].join('\n'))).toEqual({ p6: 'no', p0: 'yes' });
    expect(readFileSync(file).equals(damaged)).toBe(false);
  }, 240_000);
});
