// `npm run bench`: every benchmark in this directory, one after another, in one process tree.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
let failed = false;
for (const file of readdirSync(here).sort()) {
  if (!file.endsWith('.mjs') || file === 'run.mjs' || file === 'lib.mjs') continue;
  if (only.length && !only.some((o) => file.startsWith(o))) continue;
  console.log(`\n== ${file}`);
  const r = spawnSync(process.execPath, [`${here}/${file}`], { stdio: 'inherit' });
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
