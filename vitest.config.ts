import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS (main) and ESM (module) builds without an exports map: Node (and so
    // Pothos/Yoga, loaded by Node) takes the CJS one, Vite would take the ESM one, and two
    // copies of graphql refuse each other's schema. Resolve our imports to the CJS build too.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'rest-compat/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: run files two at a time; each file makes its own database.
    maxWorkers: 2,
    pool: 'forks',
  },
});
