// The in-process walk of a small tree against the listing of the walker it stands in for
// (src/platform/search-walk.ts; srt-init --list-protected, rg and find where srt-init is not
// built): the same files and symlinks on generated trees, at every search depth.
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toolListing } from '../../src/platform/search.js';
import { walkProtected, WALK_BUDGET } from '../../src/platform/search-walk.js';
import { PROTECTED_DIR_NAMES, PROTECTED_FILE_NAMES } from '../../src/profiles/protected.js';

const base = realpathSync(mkdtempSync(join(tmpdir(), 'srt-walk-')));
afterAll(() => {
  execFileSync('chmod', ['-R', 'u+rwx', base]);
  rmSync(base, { recursive: true, force: true });
});

// Every name the search tells apart, and near misses.
const NAMES = [
  ...PROTECTED_FILE_NAMES, ...PROTECTED_DIR_NAMES, 'HEAD', '.git', 'hooks', 'config', 'commondir', 'objects', 'refs', 'modules',
  'x.code-workspace', '.code-workspace', 'code-workspace', 'HEADS', 'head', '.bashrc.bak', 'a.bashrc', '.VSCODE', '.vscodex',
  'src', 'a', 'b', '.hidden', 'node_modules', 'plain.txt', 'with space', 'ünï',
];

/** A deterministic generator (xorshift), so a failing tree can be made again from its seed. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s / 2 ** 32;
  };
}

/** A tree of files, directories, fifos and symlinks (to files, to directories, dangling, to a directory outside) seven levels deep. */
function generate(root: string, seed: number): void {
  const rnd = random(seed);
  const pick = <T>(a: readonly T[]) => a[Math.floor(rnd() * a.length)]!;
  const outside = join(base, `outside-${seed}`);
  mkdirSync(join(outside, '.vscode'), { recursive: true });
  writeFileSync(join(outside, '.vscode', 'settings.json'), '{}');
  writeFileSync(join(outside, '.bashrc'), '');
  const fill = (dir: string, level: number) => {
    const n = level === 0 ? 24 : Math.floor(rnd() * 8);
    for (let i = 0; i < n; i++) {
      const p = join(dir, pick(NAMES));
      // A name taken at this level is skipped (writing to a FIFO made there would block).
      if (lstatSync(p, { throwIfNoEntry: false })) continue;
      const r = rnd();
      if (r < 0.45 && level < 7) {
        mkdirSync(p);
        fill(p, level + 1);
      } else if (r < 0.72) writeFileSync(p, '');
      else if (r < 0.75) execFileSync('mkfifo', [p]);
      else if (r < 0.85) symlinkSync(pick(['plain.txt', '.bashrc', 'nowhere', '..']), p);
      else if (r < 0.93) symlinkSync(outside, p);
      else symlinkSync(join(outside, '.bashrc'), p);
    }
  };
  mkdirSync(root);
  fill(root, 0);
}

const sorted = (l: { files: string[]; links: string[] }) => ({ files: [...l.files].sort(), links: [...l.links].sort() });

describe('the in-process walk lists what srt-init lists', () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`generated tree ${seed}, every search depth`, async () => {
      const root = join(base, `tree-${seed}`);
      generate(root, seed);
      for (const depth of [0, 1, 2, 3, 5]) {
        const walked = walkProtected(root, depth + 2, 100_000);
        expect(walked, `tree ${seed} depth ${depth}`).toBeDefined();
        const tools = await toolListing(root, depth);
        expect(tools.timedOut).toBe(false);
        expect(sorted(walked!), `tree ${seed} depth ${depth}`).toEqual(sorted(tools));
        if (depth === 5) expect(walked!.files.length * walked!.links.length).toBeGreaterThan(0);
      }
    });
  }

  it('leaves to srt-init a tree with a directory it cannot read (srt-init tells whether the command could open it up; run as root, every directory is read)', async () => {
    const root = join(base, 'shut');
    mkdirSync(join(root, 'open/.claude'), { recursive: true });
    mkdirSync(join(root, 'closed/.claude'), { recursive: true });
    writeFileSync(join(root, 'open/.claude/settings.json'), '');
    writeFileSync(join(root, 'closed/.claude/settings.json'), '');
    writeFileSync(join(root, 'closed/.bashrc'), '');
    chmodSync(join(root, 'closed'), 0o000);
    try {
      const walked = walkProtected(root, 7);
      if (process.getuid?.() === 0) expect(sorted(walked!)).toEqual(sorted(await toolListing(root, 5)));
      else expect(walked).toBeUndefined();
    } finally {
      chmodSync(join(root, 'closed'), 0o755);
    }
  });

  it('leaves to srt-init a tree past its budget, and a name its output carries differently; a newline stays in its name', async () => {
    const big = join(base, 'big');
    mkdirSync(big);
    for (let i = 0; i <= WALK_BUDGET; i++) writeFileSync(join(big, `f${i}`), '');
    expect(walkProtected(big, 7)).toBeUndefined();
    expect(walkProtected(big, 7, WALK_BUDGET + 1)).toBeDefined();
    const odd = join(base, 'odd');
    mkdirSync(join(odd, 'sub\n.vscode'), { recursive: true });
    writeFileSync(join(odd, 'sub\n.vscode', 'a\n.bashrc'), '');
    writeFileSync(join(odd, 'x\n.zshrc'), '');
    symlinkSync('nowhere', join(odd, 'sub\n.vscode', '.bashrc'));
    expect(sorted(walkProtected(odd, 7)!)).toEqual(sorted(await toolListing(odd, 5)));
    writeFileSync(Buffer.concat([Buffer.from(`${odd}/sub\n.vscode/`), Buffer.from('bad\xff.bashrc', 'latin1')]), '');
    expect(walkProtected(odd, 7)).toBeUndefined();
  });
});
