// Making a run's plan real: its private directory under ~/.srt/run and the files srt puts there
// before the command starts (SpawnPlan.files). The directory is new (an existing one, another
// run's or planted, stops the run) and where the plan says (a symlink swapped in meanwhile stops
// it too: every path of the plan must reach its file without one).

import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { SandboxError } from './backend.js';
import type { SpawnPlan } from './spawn-plan.js';

export function materialise(plan: Pick<SpawnPlan, 'runDir' | 'files'>): void {
  const runRoot = dirname(plan.runDir);
  try {
    mkdirSync(runRoot, { recursive: true, mode: 0o700 });
    mkdirSync(plan.runDir, { mode: 0o700 });
  } catch (e) {
    throw new SandboxError(`cannot create the run directory ${plan.runDir}: ${(e as Error).message}`);
  }
  if (realpathSync(plan.runDir) !== plan.runDir) {
    throw new SandboxError(`${runRoot} was moved or replaced while srt was starting; nothing ran, try again`);
  }
  for (const f of plan.files) {
    if (f.path === plan.runDir) continue;
    if (f.content === undefined) mkdirSync(f.path, { mode: f.mode });
    else writeFileSync(f.path, f.content, { mode: f.mode });
  }
}
