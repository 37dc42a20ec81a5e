// Browser e2e steps for issue 26's Act III and the shell: the kernel cards' metadata from the
// registry, "Compile and read the facts" off (with its reason) where NVRTC is missing, the
// ladder's CPU rows in GFLOP/s with their own batch and no empty columns, the step anatomy's
// statement of its clock, the newest saved GPU run shown on a machine without a GPU, the
// walk's first step keeping the act's label clear of its bar, and the front end sent
// gzip-compressed. Called by browser.cjs:
//
//   await require('./act3.cjs').run(page, { ok, base, shots });
//
// `base` is the app's address (the page holds its token), `ok(cond, what)` records a check,
// `shots` is the screenshot folder. A second server of its own (no token, a fresh data folder
// holding one saved GPU run, NVRTC off its library path) checks what a machine without a GPU
// or without NVRTC shows.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const root = path.resolve(__dirname, '..', '..');
const bin = process.env.SHOWDOWN_BIN || path.join(root, 'target/release/showdown');
const uiDir = process.env.UI_DIR || path.join(root, 'app-ui/dist');

// The saved GPU run the second server's history holds: the committed H100 ladder, saved at
// 2026-11-18 11:06 UTC.
const SAVED_ID = 'lab-e2e-h100-ladder';
const SAVED_AT = 1795000000;

/// GET or POST `url`; resolves { status, headers, body (Buffer) }.
function request(url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.setTimeout(60000, () => req.destroy(new Error(`${url}: no answer in 60 s`)));
    if (body) req.write(body);
    req.end();
  });
}

/// `showdown serve --http 127.0.0.1:0` over `home`, without NVRTC's pip folder on its library
/// path; resolves { child, url }.
function startOwnServer(home) {
  const env = { ...process.env, SHOWDOWN_DATA_HOME: home };
  delete env.LD_LIBRARY_PATH;
  const child = spawn(bin, ['serve', '--http', '127.0.0.1:0', '--ui-dir', uiDir], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the second server did not listen in 30 s')), 30000);
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /^listening on (http:\/\/\S+)/.exec(line);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1] }); }
    });
    child.on('exit', (code) => reject(new Error(`the second server exited (${code})`)));
  });
}

/// The tables of `page` wider than its 1,280-px window (each as `id-or-key: width`), and the
/// page's own scroll width.
async function tooWide(page) {
  return page.evaluate(() => ({
    page: document.documentElement.scrollWidth,
    tables: [...document.querySelectorAll('table')]
      .map((t) => ({ t, r: t.getBoundingClientRect() }))
      .filter(({ r }) => r.width > 0 && r.right > window.innerWidth + 1)
      .map(({ t, r }) => `${t.id || t.dataset.key || t.className || t.closest('[id]')?.id}: ${Math.round(r.right)} px`),
  }));
}

async function run(page, { ok, base, shots }) {
  await page.setViewportSize({ width: 1280, height: 800 });
  const origin = new URL(base).origin;
  const shot = async (p, name) => {
    const file = path.join(shots, name);
    await p.screenshot({ path: file, fullPage: true });
    ok(fs.statSync(file).size > 1000, `act3: screenshot ${file}`);
  };

  // --- The front end sent compressed: the WASM with Accept-Encoding gzip.
  const gz = await request(`${origin}/app_ui_bg.wasm`, { headers: { 'Accept-Encoding': 'gzip, deflate, br' } });
  const raw = await request(`${origin}/app_ui_bg.wasm`);
  ok(gz.status === 200 && gz.headers['content-encoding'] === 'gzip', `shell: the WASM is sent gzip-compressed to a browser that accepts it (Content-Encoding ${gz.headers['content-encoding']})`);
  ok(/accept-encoding/i.test(gz.headers.vary || '') && /accept-encoding/i.test(raw.headers.vary || ''), `shell: the WASM's responses say Vary: Accept-Encoding (${gz.headers.vary})`);
  ok(raw.status === 200 && !raw.headers['content-encoding'] && gz.body.length < raw.body.length * 0.6, `shell: transfer ${(gz.body.length / 1e6).toFixed(2)} MB gzip against ${(raw.body.length / 1e6).toFixed(2)} MB uncompressed`);
  ok(/wasm/.test(gz.headers['content-type'] || ''), `shell: the compressed WASM keeps its type (${gz.headers['content-type']})`);

  // --- Act III on this server: the cards.
  await page.goto(`${base}#/kernels`);
  await page.locator('#kernel-families article.family').first().waitFor({ timeout: 20000 });
  const ladderCard = page.locator('article.family[data-family="conv_ladder"]');
  const meta = (await ladderCard.locator('.family-meta').innerText()).trim();
  ok(/^dtypes: f32, f16 · \d+ lines/.test(meta) && !/dtypes:\s+·/.test(meta), `act3: conv_ladder.cu's card names its dtypes (${meta})`);
  const rungs = await ladderCard.locator('ol.rungs li[data-rung]').allInnerTexts();
  ok(rungs.length === 5 && /^Rung 5: /.test(rungs[4] || '') && /pinned host memory/.test(rungs[4] || ''), `act3: conv_ladder.cu's card lists its five rungs (${rungs.map((r) => r.slice(0, 7)).join(' | ')})`);
  for (const fam of ['train', 'activations', 'norm', 'cnn_infer']) {
    const m = (await page.locator(`article.family[data-family="${fam}"] .family-meta`).innerText()).trim();
    ok(/^dtypes: [a-z0-9]+/.test(m), `act3: ${fam}.cu's card names its dtypes (${m})`);
  }

  // The doctor of this server: a GPU, NVRTC.
  await page.locator('#this-machine .machine-gpu').waitFor({ timeout: 20000 });
  const noGpu = (await page.locator('#this-machine .machine-gpu.no-gpu').count()) > 0;

  // --- The ladder's CPU rows: GFLOP/s, their own batch, no column of dashes.
  for (const l of ['lab_conv1', 'lab_conv2', 'lenet_c1', 'lenet_c3']) {
    const box = page.locator(`#ladder-layer-${l}`);
    if ((await box.isChecked()) !== (l === 'lab_conv1')) await box.click();
  }
  await page.fill('#ladder-cpu-batch', '3');
  if (noGpu) {
    ok(await page.locator('#ladder-batch').isDisabled(), 'act3: without a GPU the ladder\'s GPU batch field is off');
    ok(/GPU rows only/.test(await page.locator('#ladder-batch-gpu-note').innerText()), 'act3: ... and says it is for the GPU rows only');
  }
  await page.click('#ladder-run');
  await page.locator('#ladder-result.lab-result[data-saved-run]').waitFor({ timeout: 180000 });
  const measured = await page.locator('#ladder-result p.measured-on').innerText();
  ok(/3 image\(s\) per pass on the CPU/.test(measured) && (!noGpu || !/1024/.test(measured)), `act3: the ladder states the CPU rows' own batch (${measured.slice(0, 140)})`);
  const table = page.locator('#ladder-result table[data-key="lab_conv1"]');
  const head = await table.locator('thead th').allInnerTexts();
  const cpuRows = table.locator('tbody tr.cpu');
  const n = await cpuRows.count();
  const flops = [];
  const batches = [];
  const fi = head.indexOf('FLOP/s');
  const bi = head.findIndex((h) => /^batch/.test(h));
  for (let i = 0; i < n; i += 1) {
    const cells = await cpuRows.nth(i).locator('td').allInnerTexts();
    flops.push(cells[fi]);
    batches.push(cells[bi]);
  }
  ok(n === 2 && flops.every((f) => / GFLOP\/s$/.test(f) && !/^0\.00 /.test(f)), `act3: the CPU rows read in GFLOP/s (${flops.join(', ')})`);
  ok(batches.every((b) => b === '3'), `act3: each CPU row states its own batch (${batches.join(', ')})`);
  if (noGpu) {
    ok(!head.some((h) => /rung|cuDNN|reference|H100/.test(h)), `act3: a table of CPU rows shows no empty column (${head.join(' | ')})`);
    const dashes = await table.locator('tbody td').evaluateAll((tds) => tds.filter((t) => t.textContent.trim() === '–').length);
    ok(dashes === 0, `act3: ... and no dash (${dashes})`);
  }
  await shot(page, 'act3-ladder-cpu.png');

  // --- The step anatomy states what its clock measures and how it relates to a duel's step.
  await page.fill('#anatomy-batch', '32');
  await page.fill('#anatomy-steps', '2');
  await page.click('#anatomy-run');
  await page.locator('#anatomy-result.lab-result[data-saved-run]').waitFor({ timeout: 180000 });
  const clock = await page.locator('#anatomy-result p.anatomy-clock').innerText();
  ok(/What the clock measures/.test(clock) && /(synchronised|one at a time)/.test(clock) && /duel/.test(clock), `act3: the anatomy states its clock and the duel's step (${clock.slice(0, 120)}…)`);
  // No role under 1 µs in both precisions is called slower.
  const tiny = await page.locator('#anatomy-table tbody tr').evaluateAll((rows) => rows.filter((r) => {
    const c = [...r.querySelectorAll('td')];
    if (c.length < 5 || !c[4].classList.contains('slower')) return false;
    return Math.max(parseFloat(c[2].textContent), parseFloat(c[3].textContent)) < 1.0;
  }).length);
  ok(tiny === 0, `act3: no sub-µs role is called slower (${tiny})`);
  // Issue 37: the anatomy has no reference run and the page no longer promises one for it.
  const scope = await page.locator('#lab-reference-scope').innerText();
  ok(/step anatomy has no reference run/.test(scope) && !/H100/.test(scope), `act3: the reference column is promised only where there is one (${scope.slice(0, 140)})`);
  // Issue 37: the page fits 1,280 px (a kernel table was 1,370 px wide).
  const wide = await tooWide(page);
  ok(wide.page <= 1280 && wide.tables.length === 0, `act3: every table fits the 1,280-px window (page ${wide.page} px; too wide: ${wide.tables.join(', ') || 'none'})`);

  // --- A second server: a fresh history holding one saved GPU run, NVRTC off its path.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'showdown-e2e-act3-'));
  fs.mkdirSync(path.join(home, 'lab-runs'), { recursive: true });
  const report = JSON.parse(fs.readFileSync(path.join(root, 'docs/results/conv-ladder-h100-2026-11-23.json'), 'utf8'));
  fs.writeFileSync(path.join(home, 'lab-runs', `${SAVED_ID}.json`), JSON.stringify({ id: SAVED_ID, saved_at: SAVED_AT, kind: 'ladder', report }));
  // Issue 37: a saved kernel-lab run, whose table (16 columns) was 1,370 px wide at 1,280.
  const kernelsReport = JSON.parse(fs.readFileSync(path.join(root, 'docs/results/kernels-bench-h200-2026-11-28.json'), 'utf8'));
  fs.writeFileSync(path.join(home, 'lab-runs', 'lab-e2e-h200-kernels.json'), JSON.stringify({ id: 'lab-e2e-h200-kernels', saved_at: SAVED_AT, kind: 'kernels', report: kernelsReport }));
  const own = await startOwnServer(home);
  const p2 = await page.context().browser().newPage({ viewport: { width: 1280, height: 800 } });
  try {
    const doctor = JSON.parse((await request(`${own.url}/api/call`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ op: 'doctor' }) })).body.toString());
    const nvrtc = doctor.nvrtc && doctor.nvrtc.ok;
    const gpu = doctor.auto_backend === 'cuda';
    await p2.goto(`${own.url}/#/kernels`);
    await p2.locator('#kernel-families article.family').first().waitFor({ timeout: 20000 });
    if (nvrtc) {
      ok(true, `act3: skipped the no-NVRTC checks: NVRTC is found here even off the pip folder (${doctor.nvrtc.detail})`);
    } else {
      const button = p2.locator('article.family[data-family="train"] .facts-button');
      await p2.locator('article.family[data-family="train"] .facts-off').waitFor({ timeout: 20000 });
      const why = await p2.locator('article.family[data-family="train"] .facts-off').innerText();
      ok(await button.isDisabled(), 'act3: without NVRTC "Compile and read the facts" is off');
      ok(/NVRTC/.test(why) && !/cuobjdump/.test(why), `act3: ... with the reason, naming NVRTC (${why.slice(0, 100)})`);
      const facts = await request(`${own.url}/api/call`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ op: 'kernel_facts', name: 'train' }) });
      const text = facts.body.toString();
      ok(facts.status >= 400 && facts.status < 500 && /NVRTC/.test(text) && !/cuobjdump/.test(text), `act3: the facts without NVRTC answer ${facts.status} naming NVRTC (${text.slice(0, 100)})`);
    }
    if (gpu) {
      ok(true, 'act3: skipped the saved-GPU-run checks: this machine has a GPU');
    } else {
      const saved = p2.locator('#ladder-result .history-run');
      await saved.waitFor({ timeout: 30000 });
      const said = await saved.innerText();
      ok(/NVIDIA H100/.test(said) && /2026-11-18 11:06 UTC/.test(said) && /H200 reference/.test(said), `act3: without a GPU the newest saved GPU ladder is shown with its device and date (${said.slice(0, 160)})`);
      const where = await p2.locator('#ladder-result p.measured-on').innerText();
      ok(/not this machine/.test(where) && !/, this machine/.test(where), `act3: ... and its numbers are not called this machine's (${where.slice(0, 120)})`);
      ok((await p2.locator('#ladder-result').getAttribute('data-saved-run')) === SAVED_ID, 'act3: ... naming the saved run');
      const h = await p2.locator('#ladder-result table[data-key="lab_conv1"] thead th').allInnerTexts();
      ok(h.some((x) => /H200 reference/.test(x)) && h.includes('rung'), `act3: ... beside the labelled H200 reference (${h.join(' | ')})`);
      ok((await p2.locator('#ladder-result .reference-note').count()) === 1, 'act3: ... whose reference note names the committed run');
      await p2.locator('#kernels-table').waitFor({ timeout: 30000 }).catch(() => {});
      ok((await p2.locator('#kernels-table').count()) === 1, 'act3: without a GPU the newest saved kernel-lab run is shown with its table');
      const wide2 = await tooWide(p2);
      ok(wide2.page <= 1280 && wide2.tables.length === 0, `act3: the saved GPU runs' tables (the kernel lab's too) fit the 1,280-px window (page ${wide2.page} px; too wide: ${wide2.tables.join(', ') || 'none'})`);
      await shot(p2, 'act3-saved-gpu-run.png');
      // The kernel table in the 1,280 × 800 window, light and dark.
      await p2.locator('#kernels-table').evaluate((e) => e.scrollIntoView()).catch(() => {});
      await p2.screenshot({ path: path.join(shots, 'act3-kernels-table.png') });
      await p2.emulateMedia({ colorScheme: 'dark' });
      await p2.screenshot({ path: path.join(shots, 'act3-kernels-table-dark.png') });
      await p2.emulateMedia({ colorScheme: 'light' });
    }
  } finally {
    await p2.close();
    own.child.removeAllListeners('exit');
    own.child.kill('SIGINT');
    fs.rmSync(home, { recursive: true, force: true });
  }

  // --- The walk's first step: the act's label clear of the walk's sticky bar.
  await page.goto(`${base}#/`);
  await page.evaluate(() => sessionStorage.setItem('showdown.walk', 'off'));
  await page.reload();
  await page.locator('#walk-start').waitFor({ timeout: 20000 });
  await page.locator('#walk-start').click();
  await page.waitForFunction(() => location.hash === '#/setup', null, { timeout: 10000 });
  await page.locator('#walk-intro').waitFor({ timeout: 10000 });
  await page.waitForTimeout(400);
  const rects = await page.evaluate(() => {
    const bar = document.getElementById('walk-bar').getBoundingClientRect();
    const intro = document.getElementById('walk-intro').getBoundingClientRect();
    return { barBottom: bar.bottom, introTop: intro.top, vh: innerHeight };
  });
  ok(rects.introTop >= rects.barBottom - 1 && rects.introTop < rects.vh / 2, `walk: the first step shows the act's label below the walk's bar (label at ${Math.round(rects.introTop)} px, bar ends at ${Math.round(rects.barBottom)} px)`);
  await page.evaluate(() => sessionStorage.setItem('showdown.walk', 'off'));
}

module.exports = { run };
