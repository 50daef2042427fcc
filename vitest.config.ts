import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Generous: CI machines are shared, and at a load average of 13 on 2 cores a test that runs
    // srt a dozen times needs well over 30 s. A hang still fails, named, within two minutes.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // e2e files spawn real sandboxes; two workers match the 2-core CI machine.
    maxWorkers: 2,
  },
});
