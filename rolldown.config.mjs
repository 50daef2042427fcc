// The CLI as one bundle (plus lazily loaded chunks): Node 20 has no compile cache, and loading
// ~50 small modules costs more than the work srt does to start a sandbox. The library API
// (dist/index.js) stays the plain tsc output.
import { defineConfig } from 'rolldown';

export default defineConfig({
  input: 'dist/cli.js',
  platform: 'node',
  output: { dir: 'dist/bundle', format: 'esm', entryFileNames: 'cli.js', chunkFileNames: '[name].js' },
  logLevel: 'warn',
});
