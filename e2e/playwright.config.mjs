// Playwright configuration for the end-to-end suite (`npx playwright test --config
// e2e/playwright.config.mjs`). One worker: the machine has 2 cores and each test runs
// Chromium, the companion and the Herdr stand-in. No retries: a flaky test is a bug.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './specs',
  testMatch: /.*\.spec\.mjs$/,
  workers: 1,
  fullyParallel: false,
  retries: 0,
  timeout: 90_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  outputDir: './test-results',
  forbidOnly: !!process.env.CI,
});
