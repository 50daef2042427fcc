// srt's CLI chunks run with V8 bytecode cached in ~/.srt/cache/code (src/code-cache.ts). Bytecode
// is code that runs outside the sandbox: these tests plant a forged entry (bytecode of other code
// with the same length, which V8 cannot tell apart) and check it runs only from where nobody but
// the user could have put it, only for the exact source and node it was made by, and that a
// broken entry costs nothing but time.
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { entryName } from '../../src/code-cache.js';
import { CHUNK, chunkEntry, forgedBytecode, forgedSource, NODE } from './code-cache-fixtures.js';
import { REPO, scratchDirs, srt, tempDir } from './helpers.js';

const tmp = tempDir('srt-code-cache-');
afterAll(() => tmp.cleanup());
const scratch = scratchDirs(() => tmp.path);

const cacheDir = (home: string) => join(home, '.srt', 'cache', 'code');
const entries = (home: string) => (existsSync(cacheDir(home)) ? readdirSync(cacheDir(home)).sort() : []);
const run = (home: string, cwd: string, env: Record<string, string> = {}) => srt(['--', 'true'], { home, cwd, env });

describe('the code cache (~/.srt/cache/code)', () => {
  it('keeps the bytecode of the chunks a run used, private to the user, and reuses it unchanged', async () => {
    const { home, cwd } = scratch();
    expect((await run(home, cwd)).exitCode).toBe(0);
    const first = entries(home);
    expect(first.length).toBeGreaterThan(3);
    expect(first).toContain(entryName(CHUNK, NODE));
    expect(statSync(cacheDir(home)).mode & 0o777).toBe(0o700);
    const mtimes = first.map((e) => {
      const st = statSync(join(cacheDir(home), e));
      expect(st.mode & 0o777).toBe(0o600);
      return st.mtimeMs;
    });
    // Accepted by V8 the second time: nothing is compiled from source, so nothing is written.
    expect((await run(home, cwd)).exitCode).toBe(0);
    expect(entries(home)).toEqual(first);
    expect(first.map((e) => statSync(join(cacheDir(home), e)).mtimeMs)).toEqual(mtimes);
  });

  it('entries of another format (an older srt\'s) are removed when srt writes its own', async () => {
    const { home, cwd } = scratch();
    mkdirSync(cacheDir(home), { recursive: true, mode: 0o700 });
    const old = join(cacheDir(home), 'ab'.repeat(32));
    writeFileSync(old, 'bytecode of an older srt', { mode: 0o600 });
    expect((await run(home, cwd)).exitCode).toBe(0);
    expect(existsSync(old)).toBe(false);
    expect(entries(home)).toContain(entryName(CHUNK, NODE));
  });

  it('SRT_NO_CODE_CACHE compiles from source and writes nothing', async () => {
    const { home, cwd } = scratch();
    expect((await run(home, cwd, { SRT_NO_CODE_CACHE: '1' })).exitCode).toBe(0);
    expect(entries(home)).toEqual([]);
  });

  it('runs cached bytecode only from an entry that nobody else can write; a broken entry is compiled from source and replaced', async () => {
    const { base, home, cwd } = scratch();
    expect((await run(home, cwd)).exitCode).toBe(0);
    const entry = chunkEntry(home);
    const mark = join(base, 'FORGED_RAN');
    const forged = forgedBytecode(mark);
    const plant = (mode = 0o600, bytes = forged) => {
      rmSync(entry, { force: true });
      writeFileSync(entry, bytes, { mode });
      chmodSync(entry, mode);
    };
    /** Did the planted bytecode run? srt itself must work either way when it did not. */
    const ran = async () => {
      rmSync(mark, { force: true });
      const r = await run(home, cwd);
      const did = existsSync(mark);
      if (!did) expect(r.exitCode, r.stderr).toBe(0);
      return did;
    };

    // The control: an entry only the user can write is used (so the refusals below are real).
    plant();
    expect(await ran()).toBe(true);

    // Writable by the group or by others: not used.
    for (const mode of [0o620, 0o602]) {
      plant(mode);
      expect(await ran(), mode.toString(8)).toBe(false);
    }
    // A directory on the way that others may write: not used.
    for (const dir of [cacheDir(home), join(home, '.srt', 'cache'), join(home, '.srt')]) {
      plant();
      chmodSync(dir, 0o777);
      expect(await ran(), dir).toBe(false);
      chmodSync(dir, 0o700);
    }
    // A symlink to bytecode elsewhere: not followed.
    const elsewhere = join(base, 'elsewhere');
    writeFileSync(elsewhere, forged, { mode: 0o600 });
    rmSync(entry, { force: true });
    symlinkSync(elsewhere, entry);
    expect(await ran()).toBe(false);
    // Another user's entry or directory (`sudo -E srt` with someone's HOME): not used.
    if (process.getuid!() === 0) {
      plant();
      chownSync(entry, 65534, 65534);
      expect(await ran()).toBe(false);
      plant();
      chownSync(cacheDir(home), 65534, 65534);
      expect(await ran()).toBe(false);
      chownSync(cacheDir(home), 0, 0);
    }

    // Made from another source of the same length (the chunk as another build had it), or by
    // another node or with other flags: not used, and the entry made anew.
    for (const claims of [{ source: forgedSource(mark) }, { node: { ...NODE, execArgv: ['--no-opt'] } }, { node: { ...NODE, version: 'v0.0.0' } }]) {
      plant(0o600, forgedBytecode(mark, claims));
      expect(await ran(), JSON.stringify(claims)).toBe(false);
      expect(readFileSync(entry).includes(readFileSync(CHUNK)), JSON.stringify(claims)).toBe(true);
    }

    // Garbage of any length: rejected by V8, compiled from source, and the entry made anew.
    rmSync(entry, { force: true });
    writeFileSync(entry, 'not bytecode', { mode: 0o600 });
    expect(await ran()).toBe(false);
    expect(readFileSync(entry).length).toBeGreaterThan(100);
  });

  // A chunk compiled from cached bytecode has no dynamic-import callback in Node 20: an import()
  // left in the bundle (rolldown keeps those of builtins) fails only when its path runs.
  it('the bundle has no import() left', () => {
    const dir = join(REPO, 'dist', 'bundle');
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.cjs'))) {
      const code = readFileSync(join(dir, f), 'utf8').split('\n').filter((l) => !/^\s*(\/\/|\*|\/\*)/.test(l)).join('\n');
      expect(code.match(/(?<![\w$.])import\s*\(/g), f).toBeNull();
    }
  });

  it('srt doctor says whether the cache is used, and why not', async () => {
    const { home, cwd } = scratch();
    const check = async (env: Record<string, string> = {}) => {
      const r = await srt(['doctor', '--json'], { home, cwd, env });
      return (JSON.parse(r.stdout) as { checks: { id: string; status: string; detail: string }[] }).checks.find((c) => c.id === 'code-cache')!;
    };
    expect(await check()).toMatchObject({ status: 'ok' });
    expect((await run(home, cwd)).exitCode).toBe(0);
    expect((await check()).detail).toMatch(/^[1-9]\d* chunk\(s\) of srt's bytecode kept in /);
    chmodSync(join(home, '.srt', 'cache'), 0o775);
    expect(await check()).toMatchObject({ status: 'warn', detail: expect.stringContaining(`${join(home, '.srt', 'cache')}: others may write it`) });
    chmodSync(join(home, '.srt', 'cache'), 0o700);
    expect(await check({ SRT_NO_CODE_CACHE: '1' })).toMatchObject({ status: 'warn', detail: expect.stringContaining('SRT_NO_CODE_CACHE is set') });
  });

  it('a cache directory srt cannot create costs nothing but time', async () => {
    const { home, cwd } = scratch();
    mkdirSync(join(home, '.srt'));
    writeFileSync(join(home, '.srt', 'cache'), 'a file where the directory would go');
    const r = await run(home, cwd);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/cache/);
  });
});
