// The desktop app end to end: the Tauri shell (WebKitGTK) driven through tauri-driver's
// WebDriver endpoint under Xvfb. Started by `cargo xtask e2e --desktop`, which sets:
//   APP          the app binary (the installed .deb's /usr/bin/precision-showdown, or a build)
//   DRIVER_URL   tauri-driver's endpoint (http://127.0.0.1:4444)
//   SCREENSHOTS  where page screenshots go (desktop-*.png)
// Plain WebDriver over fetch: no npm dependency.
//
// Checks: the window is interactive (navigation drawn) and how long that took; every page
// renders; the UI reaches the compute sidecar through the Tauri bridge (the doctor answers);
// a tiny CPU duel runs to its result table with progress through the ipc channel; killing the
// sidecar (SIGKILL) in the middle of a duel shows an error naming it, and the next duel runs on
// a restarted sidecar.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const app = process.env.APP;
const driver = process.env.DRIVER_URL || 'http://127.0.0.1:4444';
const shots = process.env.SCREENSHOTS || 'screenshots';
if (!app) {
  console.error('desktop.cjs: set APP to the app binary');
  process.exit(2);
}

let failures = 0;
const t0 = Date.now();
function ok(cond, what) {
  const s = ((Date.now() - t0) / 1000).toFixed(1).padStart(5);
  console.log(`${s}s ${cond ? 'ok  ' : 'FAIL'} ${what}`);
  if (!cond) failures += 1;
}

async function wd(method, route, body) {
  const res = await fetch(`${driver}${route}`, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${method} ${route}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  }
  if (!res.ok || (json.value && json.value.error)) {
    const v = json.value || {};
    throw new Error(`${method} ${route}: ${v.error || res.status}: ${v.message || text.slice(0, 300)}`);
  }
  return json.value;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  const launched = Date.now();
  const session = await wd('POST', '/session', {
    capabilities: { alwaysMatch: { browserName: 'wry', 'tauri:options': { application: app } } },
  });
  const sid = session.sessionId;
  const js = (script, ...args) => wd('POST', `/session/${sid}/execute/sync`, { script, args });
  // An async script: the last argument is the callback.
  const jsAsync = (script, ...args) => wd('POST', `/session/${sid}/execute/async`, { script, args });
  const waitFor = async (what, script, timeoutMs, ...args) => {
    const end = Date.now() + timeoutMs;
    let last;
    while (Date.now() < end) {
      try {
        last = await js(script, ...args);
        if (last) return last;
      } catch (e) {
        last = String(e);
      }
      await sleep(100);
    }
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
  };
  const text = (sel) => js('const e = document.querySelector(arguments[0]); return e ? e.textContent : null;', sel);
  const shot = async (name) => {
    const png = await wd('GET', `/session/${sid}/screenshot`);
    const file = path.join(shots, name);
    fs.writeFileSync(file, Buffer.from(png, 'base64'));
    ok(fs.statSync(file).size > 1000, `screenshot ${file}`);
  };
  const status = () => jsAsync(
    'const done = arguments[arguments.length - 1];' +
    "window.__TAURI__.core.invoke('sidecar_status').then(done, (e) => done({ error: JSON.stringify(e) }));");

  try {
    // Launch → the navigation is drawn (the WASM app mounted).
    await waitFor('the navigation', "return document.querySelectorAll('#nav a').length > 0;", 30000);
    const interactiveMs = Date.now() - launched;
    console.log(`window interactive ${interactiveMs} ms after the session request (launch included)`);
    ok(true, `window interactive in ${(interactiveMs / 1000).toFixed(2)} s`);
    ok(await js('return typeof window.__TAURI__?.core?.invoke === "function";'), 'the Tauri bridge is present');

    // Home: the doctor answers through the shell's `call` command and the sidecar.
    await waitFor('the doctor', "return /Backend: (cpu|cuda)/.test(document.querySelector('#auto-backend')?.textContent || '');", 30000);
    ok(true, `home: ${(await text('#auto-backend')).trim().slice(0, 80)}`);
    const st0 = await status();
    ok(st0 && st0.running && st0.pid > 0, `the sidecar runs (pid ${st0 && st0.pid})`);
    await shot('desktop-home.png');

    // Every page renders.
    const pages = await js("return [...document.querySelectorAll('#nav a')].map((a) => a.getAttribute('href'));");
    for (const hash of pages) {
      await js('location.hash = arguments[0];', hash);
      await waitFor(`page ${hash}`, "return !!document.querySelector('main h2, main article, main section');", 10000);
      const name = hash.replace(/^#\/?/, '') || 'home';
      if (name !== 'home') await shot(`desktop-${name.replace(/\W+/g, '-')}.png`);
    }
    ok(pages.length >= 6, `every page renders (${pages.join(' ')})`);

    // Act II: a tiny CPU duel to the result table, progress through the ipc channel.
    const setForm = async (epochs, limit) => {
      await js('location.hash = "#/duel";');
      await waitFor('the duel form', "const b = document.querySelector('#run-duel'); return !!b && !b.disabled;", 20000);
      await js(`
        const set = (sel, v) => { const e = document.querySelector(sel); e.value = v;
          e.dispatchEvent(new Event('input', { bubbles: true })); e.dispatchEvent(new Event('change', { bubbles: true })); };
        set('#backend', 'cpu'); set('#epochs', arguments[0]); set('#train-limit', arguments[1]);`, epochs, limit);
    };
    await setForm('1', '1024');
    await js("document.querySelector('#run-duel').click();");
    await waitFor('the result table', "return document.querySelectorAll('#result-table tbody tr').length >= 2 || !!document.querySelector('#duel-error');", 120000);
    const err = await text('#duel-error');
    ok(!err, `act II: no duel error${err ? ` (${err})` : ''}`);
    const rows = await js("return [...document.querySelectorAll('#result-table tbody tr')].map((r) => r.textContent);");
    ok(rows.length === 2 && rows[0].startsWith('fp32') && rows[1].startsWith('fp16'), `act II: result table ${JSON.stringify(rows)}`);
    const savedNote = await text('#duel-saved');
    ok(/^Saved to the run history as /.test(savedNote || ''), `act II: the duel's reply says where it was saved (${savedNote})`);
    await shot('desktop-duel.png');

    // Kill the sidecar in the middle of a duel: an error naming the sidecar, then recovery.
    await setForm('5', '');
    await js("document.querySelector('#run-duel').click();");
    await waitFor('training steps', "return /step/.test(document.querySelector('#duel-progress')?.textContent || '');", 60000);
    const st1 = await status();
    ok(st1 && st1.pid > 0, `mid-duel sidecar pid ${st1 && st1.pid}`);
    process.kill(st1.pid, 'SIGKILL');
    await waitFor('the duel error', "return !!document.querySelector('#duel-error');", 30000);
    const killed = await text('#duel-error');
    ok(/sidecar/i.test(killed), `act II: the killed sidecar is reported (${killed.trim().slice(0, 160)})`);
    await shot('desktop-sidecar-killed.png');
    await setForm('1', '1024');
    await js("document.querySelector('#run-duel').click();");
    await waitFor('the result table after the restart', "return (document.querySelectorAll('#result-table tbody tr').length >= 2 && !document.querySelector('#duel-error')) || /failed/.test(document.querySelector('#duel-error')?.textContent || '');", 240000);
    const err2 = await text('#duel-error');
    ok(!err2, `act II: the next duel runs on a restarted sidecar${err2 ? ` (${err2})` : ''}`);
    const st2 = await status();
    ok(st2 && st2.running && st2.pid !== st1.pid && st2.crashes >= 1, `a new sidecar (pid ${st2 && st2.pid}, crashes ${st2 && st2.crashes})`);
  } catch (e) {
    // What the window showed when it went wrong, for the log and the screenshots folder.
    console.log(`page text: ${JSON.stringify(await js('return document.querySelector("main")?.innerText?.slice(0, 1500);').catch(String))}`);
    await shot('desktop-failure.png').catch(() => {});
    throw e;
  } finally {
    await wd('DELETE', `/session/${sid}`).catch(() => {});
  }
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  if (failures) {
    console.log(`desktop e2e: ${failures} check(s) failed in ${secs} s`);
    process.exit(1);
  }
  console.log(`desktop e2e: all checks passed in ${secs} s`);
}

main().catch((e) => {
  console.error(`desktop e2e: ${e.stack || e}`);
  process.exit(1);
});
