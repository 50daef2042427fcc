// Files srt ships beside its code, found from the package root so that they resolve the same
// from src/ (tests), dist/ (tsc output) and dist/bundle/ (the bundled CLI).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5 && !existsSync(join(dir, 'package.json')); i++) dir = dirname(dir);
  return dir;
}

export const PACKAGE_ROOT = packageRoot();
export const PACKAGE_JSON = join(PACKAGE_ROOT, 'package.json');
/** Built from init/*.c by scripts/build-init.sh. */
export const INIT_HELPER_PATH = join(PACKAGE_ROOT, 'init', 'build', 'srt-init');
/** Compiled from src/proxy/node-preload.cts by tsc. */
export const NODE_PRELOAD_PATH = join(PACKAGE_ROOT, 'dist', 'proxy', 'node-preload.cjs');
