// Making a run's plan real: its private directory under ~/.srt/run and the files srt puts there
// before the command starts (SpawnPlan.files). The directory is new (an existing one, another
// run's or planted, stops the run) and where the plan says (a symlink swapped in meanwhile stops
// it too: every path of the plan must reach its file without one). A library sandbox's later
// commands use the directory its first one made (`kept`): each file is written anew, and its
// directories (TMPDIR) must be there and empty, as the command before left them.

import { lstatSync, mkdirSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SandboxError } from './backend.js';
import { removeFile } from './remove.js';
import type { SpawnPlan } from './spawn-plan.js';

export function materialise(plan: Pick<SpawnPlan, 'runDir' | 'files'>, kept = false): void {
  const runRoot = dirname(plan.runDir);
  if (!kept) {
    try {
      mkdirSync(runRoot, { recursive: true, mode: 0o700 });
      mkdirSync(plan.runDir, { mode: 0o700 });
    } catch (e) {
      throw new SandboxError(`cannot create the run directory ${plan.runDir}: ${(e as Error).message}`);
    }
  }
  let real;
  try {
    real = realpathSync(plan.runDir);
  } catch (e) {
    throw new SandboxError(`the run directory ${plan.runDir} is gone: ${(e as Error).message}`);
  }
  if (real !== plan.runDir) {
    throw new SandboxError(`${runRoot} was moved or replaced while srt was starting; nothing ran, try again`);
  }
  for (const f of plan.files) {
    if (f.path === plan.runDir) continue;
    if (f.content !== undefined) {
      // Read-only files (0400, 0444): written anew, never through an existing name.
      if (kept) removeFile(f.path);
      writeFileSync(f.path, f.content, { mode: f.mode, flag: 'wx' });
    } else if (!kept || !lstatSync(f.path, { throwIfNoEntry: false })) {
      mkdirSync(f.path, { mode: f.mode });
    } else if (!lstatSync(f.path).isDirectory() || readdirSync(f.path).length > 0) {
      throw new SandboxError(`${f.path} is not the empty directory the command before left; nothing ran`);
    }
  }
}
