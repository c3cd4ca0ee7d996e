// `npm run bench` (after setup + build): sizes of the wasm bundles, wasm init time in an
// extension page, and the native round trip worker → host → runtime → worker next to a
// minimal echo host, measured in the same browser run. Prints readable tables; exits 1
// with a plain sentence when something needed is missing.
import { readdirSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Sandbox } from './lib/sandbox.mjs';
import { EXTENSION_DIR, EXTENSION_ID, EXTENSION_ORIGIN, NATIVE_HOST_NAME, REPO_ROOT } from './lib/paths.mjs';

const ECHO_HOST_NAME = 'dev.herdr.bench_echo';
const ECHO_HOST_PATH = path.join(REPO_ROOT, 'e2e', 'bench', 'echo-host.py');
const INIT_RUNS = Number(process.env.BENCH_INIT_RUNS ?? 15);
const ROUND_TRIPS = Number(process.env.BENCH_ROUND_TRIPS ?? 500);
const WARMUP = 50;

function table(title, header, rows) {
  const all = [header, ...rows].map((r) => r.map(String));
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  const fmt = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(`\n${title}`);
  console.log(fmt(all[0]));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of all.slice(1)) console.log(fmt(r));
}

function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index];
}

const ms = (x) => `${x.toFixed(3)} ms`;

function wasmSizes() {
  const pkgDir = path.join(EXTENSION_DIR, 'pkg');
  let files;
  try {
    files = readdirSync(pkgDir).filter((f) => f.endsWith('.wasm'));
  } catch {
    throw new Error(`${pkgDir} does not exist. Build the extension first: bash scripts/build.sh`);
  }
  if (files.length === 0) throw new Error(`${pkgDir} holds no .wasm bundle. Build the extension first: bash scripts/build.sh`);
  return files.map((f) => {
    const bytes = readFileSync(path.join(pkgDir, f));
    return { file: `pkg/${f}`, raw: statSync(path.join(pkgDir, f)).size, gzip: gzipSync(bytes, { level: 9 }).length };
  });
}

/** Runs in an extension page: N fresh imports + init() of each wasm-bindgen glue module. */
async function measureInit(page, glueFiles, runs) {
  return page.evaluate(
    async ({ glueFiles, runs }) => {
      const results = {};
      for (const glue of glueFiles) {
        const times = [];
        for (let i = 0; i < runs; i++) {
          // A query string makes a fresh module instance, so init() compiles and instantiates again.
          const t0 = performance.now();
          const mod = await import(chrome.runtime.getURL(`${glue}?bench=${i}-${Math.random()}`));
          await mod.default();
          times.push(performance.now() - t0);
        }
        results[glue] = times;
      }
      return results;
    },
    { glueFiles, runs },
  );
}

/**
 * Runs in the extension's service worker: `count` sequential request/response round trips
 * over a fresh connectNative port (worker → host → … → worker).
 */
async function measureRoundTrips(worker, hostName, count, warmup) {
  return worker.evaluate(
    async ({ hostName, count, warmup }) => {
      const port = chrome.runtime.connectNative(hostName);
      const pending = new Map();
      let closed = null;
      port.onMessage.addListener((msg) => {
        const resolve = pending.get(msg?.id);
        if (resolve) {
          pending.delete(msg.id);
          resolve(msg);
        }
      });
      port.onDisconnect.addListener(() => {
        closed = chrome.runtime.lastError?.message ?? 'port closed';
        for (const resolve of pending.values()) resolve(null);
        pending.clear();
      });
      const call = (id) =>
        new Promise((resolve, reject) => {
          if (closed) return reject(new Error(closed));
          const timer = setTimeout(() => reject(new Error(`no answer to ${id} within 5 s`)), 5000);
          pending.set(id, (msg) => {
            clearTimeout(timer);
            if (msg === null) reject(new Error(`the port closed: ${closed}`));
            else resolve(msg);
          });
          port.postMessage({ id, method: 'ping', params: {} });
        });
      // hello first, as the extension does (the echo host simply echoes it back).
      await call('bench-hello');
      const times = [];
      for (let i = 0; i < warmup + count; i++) {
        const t0 = performance.now();
        const reply = await call(`bench-${i}`);
        const dt = performance.now() - t0;
        if (reply.error) throw new Error(`${hostName} answered an error: ${JSON.stringify(reply.error)}`);
        if (i >= warmup) times.push(dt);
      }
      port.disconnect();
      return times;
    },
    { hostName, count, warmup },
  );
}

async function main() {
  const sizes = wasmSizes();
  table(`wasm bundles (${path.relative(REPO_ROOT, EXTENSION_DIR)}/pkg)`, ['bundle', 'raw bytes', 'gzip -9 bytes'], sizes.map((s) => [s.file, s.raw, s.gzip]));

  const glueFiles = sizes
    .map((s) => s.file.replace(/_bg\.wasm$/, '.js'))
    .filter((f) => {
      try {
        return statSync(path.join(EXTENSION_DIR, f)).isFile();
      } catch {
        return false;
      }
    });

  const sandbox = new Sandbox({ autostart: false });
  try {
    await sandbox.startHerdr();
    await sandbox.installHost();
    // The baseline host, registered next to ours in the same profile.
    const hostsDir = path.join(sandbox.userDataDir, 'NativeMessagingHosts');
    mkdirSync(hostsDir, { recursive: true });
    writeFileSync(
      path.join(hostsDir, `${ECHO_HOST_NAME}.json`),
      JSON.stringify({ name: ECHO_HOST_NAME, description: 'bench echo', path: ECHO_HOST_PATH, type: 'stdio', allowed_origins: [EXTENSION_ORIGIN] }),
    );
    await sandbox.startRuntime();
    const { context, worker } = await sandbox.launchBrowser();
    const page = await context.newPage();
    const extensionPage = readdirSync(EXTENSION_DIR).find((f) => f.endsWith('.html'));
    if (!extensionPage) throw new Error('dist/extension has no .html page to measure from; build the extension first');
    await page.goto(`chrome-extension://${EXTENSION_ID}/${extensionPage}`);

    const init = await measureInit(page, glueFiles, INIT_RUNS);
    table(
      `wasm import + init() in an extension page (${INIT_RUNS} fresh runs each)`,
      ['module', 'median', 'min', 'max'],
      Object.entries(init).map(([glue, times]) => {
        const s = [...times].sort((a, b) => a - b);
        return [glue, ms(quantile(s, 0.5)), ms(s[0]), ms(s[s.length - 1])];
      }),
    );

    const ours = (await measureRoundTrips(worker, NATIVE_HOST_NAME, ROUND_TRIPS, WARMUP)).sort((a, b) => a - b);
    const echo = (await measureRoundTrips(worker, ECHO_HOST_NAME, ROUND_TRIPS, WARMUP)).sort((a, b) => a - b);
    const p50 = [quantile(ours, 0.5), quantile(echo, 0.5)];
    const p99 = [quantile(ours, 0.99), quantile(echo, 0.99)];
    table(
      `native round trip, ${ROUND_TRIPS} sequential pings after ${WARMUP} warm-up`,
      ['path', 'p50', 'p99'],
      [
        [`worker → ${NATIVE_HOST_NAME} host → runtime → worker`, ms(p50[0]), ms(p99[0])],
        [`worker → ${ECHO_HOST_NAME} (echo host) → worker`, ms(p50[1]), ms(p99[1])],
        ['ratio companion / echo', `${(p50[0] / p50[1]).toFixed(2)}x`, `${(p99[0] / p99[1]).toFixed(2)}x`],
      ],
    );
    console.log('\nbench: done');
  } finally {
    await sandbox.dispose();
  }
}

main().catch((error) => {
  console.error(`bench: failed — ${error.message}`);
  process.exit(1);
});
