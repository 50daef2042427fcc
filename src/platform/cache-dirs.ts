// A preset's cache directories (src/settings/presets.ts) are made before the run when missing: a
// path that does not exist cannot be mounted writable, and the tool would fail on its first write.

import { lstatSync, mkdirSync } from 'node:fs';
import type { Policy } from '../policy.js';

/** Create each missing `create` entry of allowWrite, empty and private; what fails is a warning. */
export function createCacheDirs(policy: Policy): string[] {
  const warnings: string[] = [];
  for (const r of policy.filesystem.allowWrite) {
    if (!r.create || r.glob || lstatSync(r.path, { throwIfNoEntry: false })) continue;
    try {
      mkdirSync(r.path, { recursive: true, mode: 0o700 });
    } catch (e) {
      warnings.push(`could not create ${r.path} for preset ${r.source.preset} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): it stays missing and unwritable in the sandbox`);
    }
  }
  return warnings;
}
