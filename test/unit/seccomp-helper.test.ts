import { chmodSync, copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SECCOMP_HELPER_PATH, findSeccompHelper, hostSeccompArch } from '../../src/platform/seccomp-helper.js';
import { tempDir } from '../e2e/helpers.js';

const arch = hostSeccompArch();
const dir = tempDir('srt-seccomp-helper-');
afterAll(() => dir.cleanup());

function elf(machine: number, cls = 2): Buffer {
  const b = Buffer.alloc(64);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = cls;
  b[5] = 1;
  b.writeUInt16LE(machine, 18);
  return b;
}

describe.skipIf(!arch)('findSeccompHelper', () => {
  it('points at seccomp/build/srt-seccomp by default', () => {
    expect(SECCOMP_HELPER_PATH.endsWith('/seccomp/build/srt-seccomp')).toBe(true);
  });

  it('accepts the built helper', () => {
    if (!existsSync(SECCOMP_HELPER_PATH)) return; // built by `npm run build`; e2e tests require it
    expect(findSeccompHelper()).toEqual({ path: SECCOMP_HELPER_PATH, arch });
  });

  it('says how to build it when it is missing', () => {
    const r = findSeccompHelper(join(dir.path, 'absent'));
    expect(r).toEqual({ error: expect.stringMatching(/^seccomp helper not built .*npm run build/) });
  });

  it('refuses a file that is not executable', () => {
    const file = join(dir.path, 'noexec');
    writeFileSync(file, elf(arch === 'x86_64' ? 62 : 183));
    chmodSync(file, 0o644);
    // even root passes X_OK only when some execute bit is set
    expect(findSeccompHelper(file)).toEqual({ error: expect.stringMatching(/^seccomp helper not built/) });
  });

  it('refuses a non-ELF file and an ELF for another architecture or class', () => {
    const other = arch === 'x86_64' ? 183 : 62;
    const native = arch === 'x86_64' ? 62 : 183;
    for (const [name, content] of [
      ['script', Buffer.from('#!/bin/sh\nexit 0\n'.padEnd(64, ' '))],
      ['foreign', elf(other)],
      ['elf32', elf(native, 1)],
      ['short', Buffer.from([0x7f, 0x45])],
    ] as const) {
      const file = join(dir.path, name);
      writeFileSync(file, content);
      chmodSync(file, 0o755);
      expect(findSeccompHelper(file), name).toEqual({ error: expect.stringMatching(/npm run build/) });
    }
  });

  it('accepts a copy of a native ELF executable', () => {
    const file = join(dir.path, 'native');
    copyFileSync('/bin/true', file);
    chmodSync(file, 0o755);
    expect(findSeccompHelper(file)).toEqual({ path: file, arch });
  });
});
