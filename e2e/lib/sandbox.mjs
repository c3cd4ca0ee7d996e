// One isolated world per test: a temp dir holding a companion home, a Herdr stand-in
// socket, and a Chromium profile with the companion's Native Messaging host installed.
//
// Invariants:
// - Nothing outside the sandbox's temp dir is written by the companion or the stand-in:
//   `HERDR_CONTINUITY_HOME` and `HERDR_SOCKET_PATH` point inside it, and Chromium reads the
//   host manifest from `<userDataDir>/NativeMessagingHosts/`.
// - `dispose()` stops every process the sandbox started, including a runtime the native host
//   autostarted (found by its environment, which names this sandbox's home), and removes the
//   dir (in a detached `rm -rf`, so the next test does not wait for it).
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { chromium } from '@playwright/test';
import { CHROMIUM_BIN, EXTENSION_DIR, EXTENSION_ID } from './paths.mjs';
import { runCompanion, sleep, startRuntime, startStandin } from './processes.mjs';
import { recordSecurityPolicyViolations } from './csp-recorder.mjs';

export class Sandbox {
  /**
   * @param {object} options
   * @param {boolean} [options.autostart] whether the native host may start a runtime itself
   *   (`HERDR_COMPANION_AUTOSTART`, docs/PROTOCOL.md). Default true.
   */
  constructor({ autostart = true } = {}) {
    // A short base path: Unix socket paths are limited to 108 bytes.
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'hc-e2e-'));
    this.home = path.join(this.dir, 'home');
    this.herdrSocket = path.join(this.dir, 'herdr.sock');
    this.userDataDir = path.join(this.dir, 'profile');
    mkdirSync(this.home, { mode: 0o700 });
    mkdirSync(this.userDataDir);
    this.env = {
      ...process.env,
      HERDR_CONTINUITY_HOME: this.home,
      HERDR_SOCKET_PATH: this.herdrSocket,
      HERDR_COMPANION_AUTOSTART: autostart ? '1' : '0',
    };
    delete this.env.HERDR_SESSION;
    this.standin = null;
    this.runtime = null;
    this.context = null;
  }

  /** Starts the Herdr stand-in on this sandbox's socket. */
  async startHerdr(extraArgs = []) {
    this.standin = await startStandin({ socketPath: this.herdrSocket, env: this.env, extraArgs });
    return this.standin;
  }

  async stopHerdr() {
    await this.standin?.stop();
    this.standin = null;
  }

  /** Starts `herdr-companion runtime` as a child of the test. */
  async startRuntime() {
    this.runtime = await startRuntime({ home: this.home, env: this.env });
    return this.runtime;
  }

  /** SIGTERM to the runtime and wait until it has exited. */
  async stopRuntime() {
    await this.runtime?.stop();
    this.runtime = null;
  }

  /** `herdr-companion install --browser chromium --user-data-dir <profile>`. */
  async installHost() {
    return runCompanion(['install', '--browser', 'chromium', '--user-data-dir', this.userDataDir], this.env);
  }

  /**
   * Launches headless Chromium with the built extension and this sandbox's environment
   * (Chromium hands it to the native host it spawns); `lang` (e.g. `zh-CN`) sets the
   * browser's UI language, which `chrome.i18n` and the core's language follow. Returns
   * `{ context, worker }`.
   */
  async launchBrowser({ lang = null } = {}) {
    this.context = await chromium.launchPersistentContext(this.userDataDir, {
      executablePath: CHROMIUM_BIN,
      headless: true,
      // Chromium on Linux takes its UI language from the environment, not from --lang.
      env: lang ? { ...this.env, LANGUAGE: lang.replace('-', '_'), LANG: `${lang.replace('-', '_')}.UTF-8` } : this.env,
      ...(lang && { locale: lang }),
      args: [
        ...(lang ? [`--lang=${lang}`] : []),
        `--disable-extensions-except=${EXTENSION_DIR}`,
        `--load-extension=${EXTENSION_DIR}`,
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
        '--disable-quic',
      ],
    });
    await recordSecurityPolicyViolations(this.context);
    const worker = await this.extensionWorker();
    return { context: this.context, worker };
  }

  /** The extension's MV3 service worker (waits for it to register). */
  async extensionWorker(timeoutMs = 15_000) {
    const isOurs = (w) => w.url().startsWith(`chrome-extension://${EXTENSION_ID}/`);
    const found = this.context.serviceWorkers().find(isOurs);
    if (found) return found;
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const remaining = deadline - Date.now();
      const w = await this.context.waitForEvent('serviceworker', { timeout: remaining }).catch(() => null);
      if (w && isOurs(w)) return w;
      const again = this.context.serviceWorkers().find(isOurs);
      if (again) return again;
    }
    throw new Error(
      `The extension's service worker (id ${EXTENSION_ID}) did not start within ${timeoutMs} ms. ` +
        'Check that dist/extension exists (bash scripts/build.sh) and that its manifest loads.',
    );
  }

  /** Pids of processes whose environment names this sandbox's companion home. */
  processesOfThisHome() {
    const needle = `HERDR_CONTINUITY_HOME=${this.home}\0`;
    const pids = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      try {
        const environ = readFileSync(`/proc/${entry}/environ`, 'latin1');
        if ((environ + '\0').includes(needle)) pids.push(Number(entry));
      } catch {
        // The process exited or is not ours to read: nothing to clean up.
      }
    }
    return pids;
  }

  /**
   * Ends the sandbox at once: the test is over and nothing these processes still do is
   * observed, so there is no graceful shutdown to wait out. Every process whose environment
   * names this sandbox's home (Chromium and its helpers, the native host, the runtime and the
   * stand-in this sandbox started, a runtime the host autostarted) gets SIGKILL; dispose
   * waits until they are gone, lets Playwright see its browser's end, and removes the dir
   * with a detached `rm -rf` that outlives this process, so no test waits for the disk.
   */
  async dispose() {
    // The runtime and stand-in this sandbox started, by pid too: a test may have changed their env.
    const owned = [this.runtime, this.standin].filter((proc) => proc?.running).map((proc) => proc.child.pid);
    let pids = [...new Set([...this.processesOfThisHome(), ...owned])];
    for (const pid of pids) safeKill(pid, 'SIGKILL');
    for (let i = 0; i < 500 && pids.length > 0; i++) {
      await sleep(10);
      pids = pids.filter(isAlive);
    }
    if (pids.length > 0) {
      throw new Error(`Processes of ${this.home} survived SIGKILL for 5 s: ${pids.join(', ')}; ${this.dir} was kept for a look.`);
    }
    await this.context?.close().catch(() => {});
    this.context = null;
    await Promise.all([this.runtime?.exited, this.standin?.exited]);
    this.runtime = null;
    this.standin = null;
    removeInBackground(this.dir);
  }
}

/** `rm -rf dir` in a detached process: done even when the test process exits first. */
function removeInBackground(dir) {
  const child = spawn('rm', ['-rf', '--', dir], { detached: true, stdio: 'ignore' });
  child.on('error', () => rmSync(dir, { recursive: true, force: true }));
  child.unref();
}

function safeKill(pid, signal) {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** Whether `pid` still runs: a zombie (killed, not yet reaped by its parent) does not. */
function isAlive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
