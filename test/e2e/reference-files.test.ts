// Settings files written for the reference tool (@anthropic-ai/sandbox-runtime) keep their meaning
// (SPEC §3): such a file is known by its name, srt-settings.json (at ~/.srt-settings.json, or given
// with --settings), and its filesystem.allowWrite is the whole list of writable paths, as there.
// The example files are the ones the reference tool's README shows.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { attempt, results, scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-e2e-reference-');
afterAll(() => tmp.cleanup());
const scratch = scratchDirs(() => tmp.path);
/** A fresh home and project with the directories the examples name. */
function fresh(): { home: string; cwd: string } {
  const dirs = scratch();
  for (const d of [join(dirs.cwd, 'src'), join(dirs.cwd, 'test'), join(dirs.home, 'sensitive-folder')]) mkdirSync(d);
  return dirs;
}

// From the reference README: the MCP example's ~/.srt-settings.json, the complete configuration
// example, and the "restrict to specific directories" recipe.
const MCP = { filesystem: { denyRead: [], allowWrite: ['.'], denyWrite: ['~/sensitive-folder'] }, network: { allowedDomains: [], deniedDomains: [] } };
const COMPLETE = {
  network: {
    allowedDomains: ['github.com', '*.github.com', 'lfs.github.com', 'api.github.com', 'npmjs.org', '*.npmjs.org'],
    deniedDomains: ['malicious.com'], allowUnixSockets: ['/var/run/docker.sock'], allowLocalBinding: false,
  },
  filesystem: { denyRead: ['~/.ssh'], allowRead: [], allowWrite: ['.', 'src/', 'test/', '/tmp'], denyWrite: ['.env', 'config/production.json'] },
  ignoreViolations: { '*': ['/usr/bin', '/System'], 'git push': ['/usr/bin/nc'], npm: ['/private/tmp'] },
  enableWeakerNestedSandbox: false, enableWeakerNetworkIsolation: false, allowAppleEvents: false,
};
// The reference tool's own default when it finds no file, written out: nothing is writable.
const READ_ONLY = { network: { allowedDomains: [], deniedDomains: [] }, filesystem: { denyRead: [], allowRead: [], allowWrite: [], denyWrite: [] } };

const probe = [
  attempt('cwd', 'touch ./new-file'),
  attempt('src', 'touch src/new-file'),
  attempt('sensitive', 'touch ~/sensitive-folder/x'),
  attempt('tmpdir', 'touch "$TMPDIR/x"'),
].join('; ');

describe('reference-tool files keep their meaning', () => {
  it('"allowWrite": [] at ~/.srt-settings.json: the current directory is not writable (only srt\'s own TMPDIR is)', async () => {
    const { home, cwd } = fresh();
    writeFileSync(join(home, '.srt-settings.json'), JSON.stringify(READ_ONLY));
    const r = await srt(['-c', probe], { home, cwd });
    expect(results(r.stdout)).toEqual({ cwd: 'no', src: 'no', sensitive: 'no', tmpdir: 'yes' });
    expect(existsSync(join(cwd, 'new-file'))).toBe(false);
    // Nothing but the end-of-run report of the writes it refused.
    expect(r.stderr.split('\n').filter((l) => l && !l.startsWith('srt: refused '))).toEqual([]);
  });

  it('a write refused in the read-only current directory names that directory, and --suggest\'s snippet opens it alone', async () => {
    const { home, cwd: beside } = fresh();
    const under = join(home, 'code', 'app');
    const other = join(home, 'code', 'other');
    mkdirSync(under, { recursive: true });
    mkdirSync(other);
    writeFileSync(join(home, '.srt-settings.json'), JSON.stringify(READ_ONLY));
    // A project beside the home directory (whose parent holds it), and one below the home.
    for (const [cwd, shown] of [[beside, beside], [under, '~/code/app']] as const) {
      const r = await srt(['--suggest', '--', 'mkdir', '-p', 'dist/js'], { home, cwd });
      expect(r.exitCode).not.toBe(0);
      expect(r.stderr).toContain(`srt: refused 1 write under ${shown} (read-only): to allow, add "${shown}" to filesystem.allowWrite in ~/.srt/settings.json`);
      expect(r.stderr).not.toContain('home directory');
      const snippet = JSON.parse(r.stderr.slice(r.stderr.indexOf('\n{') + 1, r.stderr.lastIndexOf('}') + 1)) as unknown;
      expect(snippet).toEqual({ filesystem: { allowWrite: [shown] } });
      mkdirSync(join(home, '.srt'), { recursive: true });
      writeFileSync(join(home, '.srt', 'settings.json'), JSON.stringify(snippet));
      const again = await srt(['--', 'mkdir', '-p', 'dist/js'], { home, cwd });
      expect(again.exitCode, again.stderr).toBe(0);
      expect(existsSync(join(cwd, 'dist', 'js'))).toBe(true);
    }
    // The entry opened that project, not its neighbour.
    const neighbour = await srt(['-c', attempt('cwd', 'touch ./new-file')], { home, cwd: other });
    expect(results(neighbour.stdout)).toEqual({ cwd: 'no' });
  });

  it('the same list given with --settings FILE named srt-settings.json means the same', async () => {
    const { home, cwd } = fresh();
    const file = join(home, 'srt-settings.json');
    writeFileSync(file, JSON.stringify({ filesystem: { allowWrite: ['src/'] } }));
    const r = await srt(['--settings', file, '-c', probe], { home, cwd });
    expect(results(r.stdout)).toMatchObject({ cwd: 'no', src: 'yes' });
    const config = await srt(['--settings', file, 'config'], { home, cwd });
    expect(config.stdout).toContain('is a reference-tool file whose filesystem.allowWrite lists every writable path');
  });

  it('the MCP example ~/.srt-settings.json: the current directory is writable because it lists ".", ~/sensitive-folder is not', async () => {
    const { home, cwd } = fresh();
    writeFileSync(join(home, '.srt-settings.json'), JSON.stringify(MCP));
    const r = await srt(['-c', probe], { home, cwd });
    expect(results(r.stdout)).toEqual({ cwd: 'yes', src: 'yes', sensitive: 'no', tmpdir: 'yes' });
    expect(r.stderr).not.toContain('warning');
  });

  it('the complete example with --settings: its list applies, and the keys srt handles differently are one line', async () => {
    const { home, cwd } = fresh();
    const file = join(cwd, 'srt-settings.json');
    writeFileSync(file, JSON.stringify(COMPLETE));
    const r = await srt(['--settings', file, '-c', `${probe}; ${attempt('env', 'touch .env')}`], { home, cwd });
    expect(results(r.stdout), r.stderr).toMatchObject({ cwd: 'yes', src: 'yes', env: 'no' });
    const lines = r.stderr.split('\n');
    expect(lines[0]).toBe(`srt: ${file}: 2 reference-tool keys handled differently (srt config lists them)`);
    // The example makes /tmp writable, which holds this test's home (and, in the unprivileged
    // pass, srt's own copy): those warnings are srt's own, as are those about protected files
    // other tests running beside this one keep in /tmp (hard links, say).
    const others = (l: string) => l.startsWith('srt: warning: protected file ') && !l.includes(tmp.path);
    expect(lines.filter((l) => l.includes('warning') && !l.includes('the whole home directory') && !l.includes('srt is installed inside a path this sandbox may write') && !others(l))).toEqual([]);
  });

  it("srt's own files keep srt's meaning: allowWrite adds to the current directory", async () => {
    const { home, cwd } = fresh();
    mkdirSync(join(home, '.srt'));
    writeFileSync(join(home, '.srt', 'settings.json'), JSON.stringify({ filesystem: { allowWrite: [] } }));
    const file = join(home, 'build.json');
    writeFileSync(file, JSON.stringify({ filesystem: { allowWrite: [join(home, 'sensitive-folder')] } }));
    const r = await srt(['--settings', file, '-c', probe], { home, cwd });
    expect(results(r.stdout)).toEqual({ cwd: 'yes', src: 'yes', sensitive: 'yes', tmpdir: 'yes' });
  });
});
