// The CLI as one CommonJS bundle plus lazily loaded chunks, compiled with V8's cached bytecode
// by src/code-cache.ts (bin/srt loads that hook first): Node 20 has no compile cache, and
// compiling srt's modules from source cost more than the work srt does to start a sandbox.
// The library API (dist/index.js) stays the plain tsc output (ES modules).
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: { cli: 'dist/cli.js', 'code-cache': 'dist/code-cache.js' },
  platform: 'node',
  output: { dir: 'dist/bundle', format: 'cjs', entryFileNames: '[name].cjs', chunkFileNames: '[name].cjs' },
  logLevel: 'warn',
});
