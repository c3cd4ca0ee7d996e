// The worker's side of site profile overrides (issue 25; docs/PROTOCOL.md "Site profile
// files"), with the real worker, wasm and companion: the options page's `profile_get`,
// `profile_import` and `profile_reset` answered through ext-core's validation, stored only
// when valid, refused from any other page; a companion file in `<home>/profiles/` in force
// below an import, a refused one named. The options page's own section and a page waking
// under an imported profile are issue 25's acceptance-2 spec.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test, expect } from '../lib/test.mjs';
import { EXTENSION_ORIGIN } from '../lib/paths.mjs';
import { startSeededHerdr } from '../lib/continuity.mjs';

const KEY = 'herdrContinuityProfileOverridesV1';

async function world(sandbox) {
  await startSeededHerdr(sandbox);
  await sandbox.installHost();
  await sandbox.startRuntime();
  return sandbox.launchBrowser();
}

/** `chrome.runtime.sendMessage` from an extension page of `context` (`page` names it). */
async function messenger(context, page = 'options.html') {
  const tab = await context.newPage();
  await tab.goto(`${EXTENSION_ORIGIN}${page}`);
  return (message) => tab.evaluate((m) => chrome.runtime.sendMessage(m), message);
}

test('the options page imports, reads and resets a profile through the worker; a bad file changes nothing and names its first problem', async ({ sandbox }) => {
  const { context, worker } = await world(sandbox);
  const send = await messenger(context);
  const builtin = await send({ type: 'profile_get', site: 'chatgpt' });
  expect(builtin).toMatchObject({ ok: true, source: 'builtin', problem: null });
  expect(builtin.profile).toMatchObject({ schema: 1, site: 'chatgpt', version: 'builtin' });

  const malformed = await send({ type: 'profile_import', site: 'chatgpt', text: '{"schema": 1,' });
  expect(malformed.ok).toBe(false);
  expect(malformed.problem).toMatch(/^not JSON \(.+\): save the profile as a JSON file$/);
  const codeBearing = { ...builtin.profile, on_load: 'fetch("https://evil.example/x")' };
  expect(await send({ type: 'profile_import', site: 'chatgpt', text: JSON.stringify(codeBearing) })).toEqual({
    ok: false,
    problem: 'unknown field "on_load": a profile holds selector and label tables only; remove it',
  });
  const styled = structuredClone(builtin.profile);
  styled.facts.send[0].css = 'button{background:url(x)}';
  const refused = await send({ type: 'profile_import', site: 'chatgpt', text: JSON.stringify(styled) });
  expect(refused.problem).toMatch(/^facts\.send\[0\]\.css: not a valid selector \("\{" is not allowed/);
  const elsewhere = { ...builtin.profile, origin: 'https://evil.example' };
  expect((await send({ type: 'profile_import', site: 'chatgpt', text: JSON.stringify(elsewhere) })).problem).toMatch(/^origin: must be https:\/\/chatgpt\.com/);
  expect((await worker.evaluate((key) => chrome.storage.local.get(key), KEY))[KEY], 'nothing stored').toBeUndefined();

  const mine = { ...structuredClone(builtin.profile), version: 'my-fix-1', date: '2026-12-06' };
  expect(await send({ type: 'profile_import', site: 'chatgpt', text: JSON.stringify(mine) })).toEqual({ ok: true, version: 'my-fix-1', date: '2026-12-06' });
  const stored = (await worker.evaluate((key) => chrome.storage.local.get(key), KEY))[KEY];
  expect(Object.keys(stored)).toEqual(['chatgpt']);
  expect(JSON.parse(stored.chatgpt.text)).toEqual(mine);
  expect(stored.chatgpt.imported_at).toBeGreaterThan(1_700_000_000_000);
  const inForce = await send({ type: 'profile_get', site: 'chatgpt' });
  expect([inForce.source, inForce.profile.version]).toEqual(['options', 'my-fix-1']);
  expect((await send({ type: 'profile_get', site: 'zai' })).source, 'other sites keep theirs').toBe('builtin');

  expect(await send({ type: 'profile_reset', site: 'chatgpt' })).toEqual({ ok: true });
  expect((await worker.evaluate((key) => chrome.storage.local.get(key), KEY))[KEY]).toEqual({});
  expect((await send({ type: 'profile_get', site: 'chatgpt' })).source).toBe('builtin');
  expect((await send({ type: 'profile_get', site: 'gemini' })).ok).toBe(false);

  // Another extension page is refused, and nothing changes.
  const panel = await messenger(context, 'sidepanel.html');
  const fromPanel = await panel({ type: 'profile_import', site: 'chatgpt', text: JSON.stringify(mine) });
  expect(fromPanel).toEqual({ ok: false, problem: "refused: only the extension's options page may read or change site profiles" });
  expect((await send({ type: 'profile_get', site: 'chatgpt' })).source).toBe('builtin');
});

test('a companion profile file is in force below an options import; a file the companion refuses is named', async ({ sandbox }) => {
  let { context } = await world(sandbox);
  let send = await messenger(context);
  const builtin = (await send({ type: 'profile_get', site: 'deepseek' })).profile;
  const dir = path.join(sandbox.home, 'profiles');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'deepseek.json'), JSON.stringify({ ...builtin, version: 'home-1' }));
  writeFileSync(path.join(sandbox.home, 'elsewhere.json'), JSON.stringify(builtin));
  symlinkSync(path.join(sandbox.home, 'elsewhere.json'), path.join(dir, 'zai.json'));
  // The worker asks after every hello: a new worker start reads the files.
  await sandbox.context.close();
  sandbox.context = null;
  ({ context } = await sandbox.launchBrowser());
  send = await messenger(context);
  await expect.poll(async () => (await send({ type: 'profile_get', site: 'deepseek' })).source, { timeout: 15_000 }).toBe('companion');
  expect((await send({ type: 'profile_get', site: 'deepseek' })).profile.version).toBe('home-1');
  const zai = await send({ type: 'profile_get', site: 'zai' });
  expect(zai.source).toBe('builtin');
  expect(zai.problem).toMatch(/^companion: profiles\/zai\.json is a symbolic link/);

  const imported = { ...builtin, version: 'mine' };
  expect((await send({ type: 'profile_import', site: 'deepseek', text: JSON.stringify(imported) })).ok).toBe(true);
  expect((await send({ type: 'profile_get', site: 'deepseek' })).source).toBe('options');
  await send({ type: 'profile_reset', site: 'deepseek' });
  expect((await send({ type: 'profile_get', site: 'deepseek' })).source).toBe('companion');
});
