// Child processes the end-to-end tests own: the Herdr stand-in and the companion runtime.
// Invariant: every process started here is stopped by `stop()` (SIGTERM, then SIGKILL after
// a grace period), and `stop()` resolves only once the process has exited.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { binaryProblem, COMPANION_BIN, STANDIN_BIN } from './paths.mjs';

/** A child process with its collected output, for error messages. */
export class OwnedProcess {
  constructor(name, child) {
    this.name = name;
    this.child = child;
    this.output = '';
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    this.exitInfo = null;
    this.exited.then((info) => { this.exitInfo = info; });
    const collect = (chunk) => {
      this.output += chunk.toString();
      if (this.output.length > 64_000) this.output = this.output.slice(-32_000);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
  }

  get running() {
    return this.exitInfo === null;
  }

  /** Waits until `predicate(output)` holds; fails with the output when the process exits first. */
  async waitForOutput(predicate, what, timeoutMs = 15_000) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (predicate(this.output)) return;
      if (!this.running) {
        throw new Error(`${this.name} exited (${JSON.stringify(this.exitInfo)}) before ${what}. Its output:\n${this.output}`);
      }
      await sleep(25);
    }
    throw new Error(`${this.name} did not report ${what} within ${timeoutMs} ms. Its output:\n${this.output}`);
  }

  /** SIGTERM, wait up to `graceMs`, then SIGKILL. Resolves with the exit info. */
  async stop(graceMs = 5_000) {
    if (!this.running) return this.exitInfo;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => { if (this.running) this.child.kill('SIGKILL'); }, graceMs);
    const info = await this.exited;
    clearTimeout(timer);
    return info;
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Fails when `bin` is missing or older than its sources (checked once per binary and run). */
const checkedBinaries = new Set();
function requireBinary(bin) {
  if (checkedBinaries.has(bin)) return;
  const problem = binaryProblem(bin);
  if (problem) throw new Error(problem);
  checkedBinaries.add(bin);
}

/**
 * Starts `herdr-standin --socket PATH` and waits for its `ready <socket>` line.
 * `extraArgs` lets a test or the demo ask the stand-in for a prepared workspace.
 */
export async function startStandin({ socketPath, env, extraArgs = [] }) {
  requireBinary(STANDIN_BIN);
  const child = spawn(STANDIN_BIN, ['--socket', socketPath, ...extraArgs], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = new OwnedProcess('herdr-standin', child);
  await proc.waitForOutput((out) => out.includes(`ready ${socketPath}`), `"ready ${socketPath}"`);
  return proc;
}

/**
 * Starts `herdr-companion runtime` with the sandbox's environment and waits until its
 * socket (`$HERDR_CONTINUITY_HOME/run/companion.sock`) exists.
 */
export async function startRuntime({ home, env }) {
  requireBinary(COMPANION_BIN);
  const socket = `${home}/run/companion.sock`;
  const child = spawn(COMPANION_BIN, ['runtime'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const proc = new OwnedProcess('herdr-companion runtime', child);
  await proc.waitForOutput(() => existsSync(socket), `its socket ${socket}`);
  return proc;
}

/** Runs a companion subcommand to completion (install, uninstall, doctor). */
export function runCompanion(args, env) {
  requireBinary(COMPANION_BIN);
  return new Promise((resolve, reject) => {
    const child = spawn(COMPANION_BIN, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c) => { output += c; });
    child.stderr.on('data', (c) => { output += c; });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code === 0) resolve(output);
      else reject(new Error(`herdr-companion ${args.join(' ')} exited with ${code}:\n${output}`));
    });
  });
}
