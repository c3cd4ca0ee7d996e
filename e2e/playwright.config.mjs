// Playwright configuration for the end-to-end suite (`npx playwright test --config
// e2e/playwright.config.mjs`). Two workers, one per core: a test mostly waits (on the page,
// the companion, the worker's timers), so two at once take about two thirds of one's time
// (docs/BENCH-LOG.md "e2e with two workers"); each test has its own sandbox, and the files
// of a worker run one after another (`fullyParallel: false`: a file's `beforeAll` and
// module state stay in one process). No retries: a flaky test is a bug.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './specs',
  testMatch: /.*\.spec\.mjs$/,
  workers: 2,
  fullyParallel: false,
  retries: 0,
  timeout: 90_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  outputDir: './test-results',
  forbidOnly: !!process.env.CI,
});
