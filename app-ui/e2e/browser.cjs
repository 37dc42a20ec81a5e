// Browser-mode end-to-end test: `showdown serve --http 127.0.0.1:0` + headless Chromium
// (Debian's /usr/bin/chromium driven by npm playwright-core). Run it with `cargo xtask e2e`,
// which builds everything and sets the environment below.
//
//   SHOWDOWN_BIN    the showdown binary            (default target/release/showdown)
//   UI_DIR          the built web UI               (default app-ui/dist)
//   NCU_FIXTURE     an ncu details CSV export      (default compute/core/tests/data/ncu/torch_cupy_set_full_details.csv)
//   NCU_FIXTURE2    a second export, to compare    (default compute/core/tests/data/ncu/ours_details_base.csv)
//   SHOWDOWN_DATA_HOME the server's data folder    (default: a new temporary folder)
//   SCREENSHOTS     where the page PNGs go         (default screenshots)
//   PLAYWRIGHT_DIR  a folder whose node_modules has playwright-core (default target/e2e-node)
//   CHROMIUM        the browser                    (default /usr/bin/chromium)
//   E2E_PARTS       only these parts, comma-separated (e.g. `act2peer,runs`): the checks of this
//                   file are left out and the parts run against the first server
//   SHOWDOWN_PYTHON the PyTorch peer's interpreter (the server inherits it); else
//   PEER_SKIP_REASON says why there is none, and act2peer.cjs is skipped
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const root = path.resolve(__dirname, '..', '..');
const env = (k, d) => process.env[k] || path.resolve(root, d);
const bin = env('SHOWDOWN_BIN', 'target/release/showdown');
const uiDir = env('UI_DIR', 'app-ui/dist');
const fixture = env('NCU_FIXTURE', 'compute/core/tests/data/ncu/torch_cupy_set_full_details.csv');
// ours_details.csv itself is the lab's example report (already in the library): the same
// report exported in base units is a different file.
const fixture2 = env('NCU_FIXTURE2', 'compute/core/tests/data/ncu/ours_details_base.csv');
// The saved imports go to a fresh folder unless the caller (cargo xtask e2e) chose one: the
// test never touches the user's own library.
const dataHome = process.env.SHOWDOWN_DATA_HOME || fs.mkdtempSync(path.join(os.tmpdir(), 'showdown-e2e-data-'));
const shots = env('SCREENSHOTS', 'screenshots');
const pwDir = env('PLAYWRIGHT_DIR', 'target/e2e-node');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const { chromium } = require(require.resolve('playwright-core', { paths: [pwDir] }));
// The parts, each in its own file beside this one, in the order they run.
const PARTS = ['story', 'inside', 'act1', 'walk', 'profiling', 'act3', 'runs', 'duelnav', 'crossover', 'look', 'act2peer', 'act2fp8', 'origin'];
const onlyParts = (process.env.E2E_PARTS || '').split(',').map((p) => p.trim()).filter(Boolean);
for (const p of onlyParts) {
  if (!PARTS.includes(p)) throw new Error(`E2E_PARTS: no part ${p} (parts: ${PARTS.join(', ')})`);
}

const XSS = '<img src=x onerror=window.__xss=1>';
// An 8x6 PNG, attached to a panel as a screenshot.
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAGCAIAAABxZ0isAAAAEUlEQVR4nGM4YaOBFTEMpAQAmkY4QXj/pr4AAAAASUVORK5CYII=';
let failures = 0;
const t0 = Date.now();
function ok(cond, what) {
  const s = ((Date.now() - t0) / 1000).toFixed(1).padStart(5);
  if (cond) {
    console.log(`${s}s ok   ${what}`);
  } else {
    failures += 1;
    console.log(`${s}s FAIL ${what}`);
  }
}

// The server runs with an access token (as a remote GPU box would): the page opened without it
// must ask for it, and one opened with `?token=` (as `showdown serve` prints it) must not.
const TOKEN = require('node:crypto').randomBytes(12).toString('hex');

// "Get full MNIST" (issue 18) fetches from a loopback mirror: the four standard MNIST file
// names served with the embedded sample's bytes (valid IDX, 8,000 train / 2,000 test digits),
// 64 KiB every 50 ms so that progress and Cancel can be seen. The server learns the mirror and
// the files' SHA-256 (the test hook's manifest) from its environment, never from the page; its
// user data folder (XDG_DATA_HOME) is a fresh one, so no MNIST of the user's is found.
function startMirror() {
  const crypto = require('node:crypto');
  const http = require('node:http');
  const names = ['train-images-idx3-ubyte.gz', 'train-labels-idx1-ubyte.gz', 't10k-images-idx3-ubyte.gz', 't10k-labels-idx1-ubyte.gz'];
  const files = new Map(names.map((n) => [n, fs.readFileSync(path.join(root, 'compute', 'data', `mnist10k-${n}`))]));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'showdown-e2e-mirror-'));
  const manifest = path.join(dir, 'manifest.json');
  fs.writeFileSync(manifest, JSON.stringify(names.map((name) => ({ name, sha256: crypto.createHash('sha256').update(files.get(name)).digest('hex') }))));
  const asked = [];
  const server = http.createServer((req, res) => {
    asked.push(req.url);
    const body = files.get(req.url.replace(/^\//, ''));
    if (!body) { res.writeHead(404, { 'Content-Length': 0 }); res.end(); return; }
    res.writeHead(200, { 'Content-Length': body.length, 'Content-Type': 'application/octet-stream' });
    let at = 0;
    const next = () => {
      if (res.destroyed) return;
      if (at >= body.length) { res.end(); return; }
      res.write(body.subarray(at, at + 65536));
      at += 65536;
      setTimeout(next, 50);
    };
    next();
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve({
      server,
      asked,
      env: {
        SHOWDOWN_MNIST_MIRRORS: `http://127.0.0.1:${server.address().port}/`,
        SHOWDOWN_MNIST_MANIFEST: manifest,
        XDG_DATA_HOME: fs.mkdtempSync(path.join(os.tmpdir(), 'showdown-e2e-xdg-')),
      },
    }));
  });
}

function startServer(extraEnv = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--http', '127.0.0.1:0', '--ui-dir', uiDir, '--token', TOKEN], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, SHOWDOWN_DATA_HOME: dataHome, ...extraEnv },
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`showdown serve exited with ${code}`)));
    const rl = readline.createInterface({ input: child.stdout });
    rl.once('line', (line) => {
      const m = /^listening on (http:\/\/\S+)$/.exec(line.trim());
      if (m) resolve({ child, url: m[1] });
      else reject(new Error(`unexpected first line from showdown serve: ${line}`));
    });
  });
}

function xssCsv() {
  const header = ['ID', 'Process ID', 'Process Name', 'Host Name', 'Kernel Name', 'Context', 'Stream',
    'Block Size', 'Grid Size', 'Device', 'CC', 'Section Name', 'Metric Name', 'Metric Unit',
    'Metric Value', 'Rule Name', 'Rule Type', 'Rule Description', 'Estimated Speedup Type',
    'Estimated Speedup'];
  const q = (v) => `"${String(v).replace(/"/g, '""')}"`;
  const row = (section, name, unit, value, rule = ['', '', '', '', '']) =>
    ['0', '1', 'evil', 'localhost', XSS, '1', '7', '(256, 1, 1)', '(16, 1, 1)', '0', '9.0',
      section, name, unit, value, ...rule].map(q).join(',');
  const sol = 'GPU Speed Of Light Throughput';
  return [header.map(q).join(','),
    row(sol, 'Duration', 'usecond', '12.5'),
    row(sol, 'Compute (SM) Throughput', '%', '40'),
    row(sol, 'Memory Throughput', '%', '75'),
    row(sol, '', '', '', ['SOLBottleneck', 'OPT', `<script>window.__xss=2</script>${XSS}`, 'global', '10']),
  ].join('\n') + '\n';
}

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  const mirror = await startMirror();
  const { child, url } = await startServer(mirror.env);
  let restarted = null;
  console.log(`server: ${url} (data in ${dataHome})`);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  // Runs `parts` (each on a page of its own) against the server at `serverUrl`.
  const runParts = async (parts, serverUrl, pageErrors) => {
    for (const part of parts) {
      const p = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      p.on('pageerror', (e) => pageErrors.push(`${part}: ${e}`));
      p.on('console', (m) => { if (m.type() === 'error') pageErrors.push(`${part}: ${m.text()}`); });
      p.on('dialog', (d) => { pageErrors.push(`${part}: dialog: ${d.message()}`); d.dismiss(); });
      await p.goto(`${serverUrl}/?token=${TOKEN}#/`);
      await p.locator('#auto-backend').waitFor({ timeout: 20000 });
      try {
        await require(`./${part}.cjs`).run(p, { ok, base: `${serverUrl}/`, shots });
      } catch (e) {
        ok(false, `${part}: ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e}`);
        await p.screenshot({ path: path.join(shots, `failed-${part}.png`) }).catch(() => {});
      }
      await p.close();
    }
  };
  try {
    if (onlyParts.length > 0) {
      const pageErrors = [];
      await runParts(onlyParts, url, pageErrors);
      ok(pageErrors.length === 0, `no page errors or dialogs ${JSON.stringify(pageErrors)}`);
      return;
    }
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    // The one 401 before the user gives the token is expected; Chromium logs it as an error.
    page.on('console', (m) => { if (m.type() === 'error' && !/status of 401/.test(m.text())) pageErrors.push(m.text()); });
    let tokenAsked = 0;
    page.on('dialog', (d) => {
      if (d.type() === 'prompt' && /access token/.test(d.message())) {
        tokenAsked += 1;
        d.accept(TOKEN);
      } else {
        pageErrors.push(`dialog: ${d.message()}`);
        d.dismiss();
      }
    });
    const shot = async (name, opts = {}) => {
      const file = path.join(shots, name);
      await page.screenshot({ path: file, ...opts });
      ok(fs.statSync(file).size > 1000, `screenshot ${file}`);
    };

    // Home / Doctor
    await page.goto(`${url}/#/`);
    const backend = page.locator('#auto-backend');
    await backend.waitFor({ timeout: 20000 });
    ok(/Backend: (cpu|cuda)/.test(await backend.innerText()), `home: doctor says "${(await backend.innerText()).slice(0, 80)}"`);
    ok((await page.locator('#doctor tr').count()) >= 6, 'home: driver / NVRTC / NVML rows');
    ok(tokenAsked === 1, `token: opened without it, the page asked for the server's access token (${tokenAsked} time(s)) and then worked`);
    await shot('home.png');

    // Act I
    await page.click('nav a[href="#/setup"]');
    await page.locator('#model-table tbody tr').first().waitFor();
    ok((await page.locator('#model-table tbody tr').count()) === 7, 'act I: 7 layers in the table');
    await page.click('#diagram button:has-text("conv2")');
    const det = await page.locator('#layer-details').innerText();
    ok(det.includes('conv2') && det.includes('18496') && det.includes('64 × 11 × 11'), 'act I: clicking conv2 shows its shapes and parameters');
    await shot('act1-setup.png');

    // Act I: a grid of real digits from the data set, 64 a page, with paging
    const gridState = () => page.evaluate(() => {
      const c = document.querySelector('#digit-grid');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let ink = 0; let hash = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] < 128) { ink += 1; hash = (hash * 31 + i) >>> 0; }
      return { ink, hash, labels: c.dataset.labels || '' };
    });
    const gridShows = (first) => page.waitForFunction((f) => {
      const c = document.querySelector('#digit-grid');
      const r = document.querySelector('#digit-range');
      return c && c.dataset.labels && c.dataset.labels.split(',').length === 64 && r && r.textContent.includes(`${f}–`);
    }, first, { timeout: 20000 });
    await gridShows(1);
    const grid1 = await gridState();
    const labels1 = grid1.labels.split(',');
    ok(grid1.ink > 10000, `act I: the digit grid is drawn (${grid1.ink} ink pixels)`);
    ok(labels1.length === 64 && labels1.every((l) => /^[0-9]$/.test(l)), `act I: 64 digits with their labels (${labels1.slice(0, 8).join(' ')} ...)`);
    const served = await page.evaluate(async (token) => {
      const r = await fetch('/api/call', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` }, body: JSON.stringify({ op: 'dataset_samples', dataset: 'mnist-sample' }) });
      return r.json();
    }, TOKEN);
    const unauthorised = await page.evaluate(async () => (await fetch('/api/call', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: '{"op":"doctor"}' })).status);
    ok(unauthorised === 401, `token: a call without it is refused (${unauthorised})`);
    ok(served.labels && served.labels.join(',') === grid1.labels && served.total === 2000, 'act I: the grid shows the first 64 test digits of mnist-sample as the server reads them');
    await page.click('#digits-next');
    await gridShows(65);
    const grid2 = await gridState();
    ok(grid2.ink > 10000 && grid2.hash !== grid1.hash && grid2.labels !== grid1.labels, `act I: "Next 64" draws other digits (${(await page.locator('#digit-range').innerText()).trim()})`);
    await page.click('#digits-prev');
    await gridShows(1);
    ok((await gridState()).hash === grid1.hash, 'act I: "Previous" draws the first page again');
    await page.locator('#digit-grid').scrollIntoViewIfNeeded();
    await shot('act1-digits.png');

    // Docs: the layer's documentation link opens its page, rendered at build time
    await page.click('#layer-details a.doc-link');
    await page.locator('#docs article.doc[data-doc="layers/conv2d"] h1').waitFor({ timeout: 10000 });
    ok(/conv/i.test(await page.locator('#docs article.doc h1').innerText()), 'docs: conv2\'s link opens the Conv2d page');
    ok((await page.locator('#docs .doc-toc li').count()) >= 13, 'docs: every docs-content page is in the contents');
    await page.click('#docs article.doc a[href="#/docs/layers/maxpool"]');
    await page.locator('#docs article.doc[data-doc="layers/maxpool"]').waitFor({ timeout: 10000 });
    ok(true, 'docs: a link between pages stays in the app');
    ok((await page.locator('#docs article.doc table, #docs article.doc pre, #docs article.doc code').count()) > 0, 'docs: tables/code are rendered');
    await shot('docs.png');

    // Act III: the kernel registry, and the train family's facts compiled by the server
    await page.click('nav a[href="#/kernels"]');
    await page.locator('#kernel-families article.family').first().waitFor();
    ok((await page.locator('#kernel-families article.family').count()) === 5, 'act III: five kernel families');
    ok((await page.locator('article.family[data-family="cnn_infer"]').count()) === 1, 'act III: the CNN inference family');
    const ladder = page.locator('article.family[data-family="conv_ladder"]');
    ok((await ladder.locator('li.tensor-core').count()) === 5, 'act III: the conv ladder flags its five tensor-core rungs (conv_tc_f16 + four conv_tc_opt_*)');
    const train = page.locator('article.family[data-family="train"]');
    ok((await train.locator('li.tensor-core').count()) === 12, 'act III: twelve tensor-core entry points (3 convolutions + the clustered weight gradient, x fp16/bf16/tf32) flagged in train.cu');
    // Act III: the sources highlighted at build time, and the committed H100 measurements
    const keywords = await train.locator('pre.source.hl .hl-keyword').count();
    ok(keywords > 10, `act III: train.cu is highlighted (${keywords} keyword spans)`);
    ok((await train.locator('pre.source.hl .hl-builtin').count()) > 10, 'act III: CUDA built-ins (__global__, threadIdx, ...) are highlighted');
    ok((await train.locator('pre.source.hl .hl-tensor').count()) > 0, 'act III: mma.sync in the asm strings is marked as a tensor-core instruction');
    // Act III's live lab on this machine (CI has no GPU): the GPU-only jobs say what a GPU adds,
    // the ladder's CPU rows and the CPU step anatomy run to drawn charts, a cancel stops a job.
    const darkPixels = (sel) => page.evaluate((sel) => {
      const c = document.querySelector(sel);
      if (!c) return -1;
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i] < 200) n++;
      return n;
    }, sel);
    await page.locator('#this-machine').waitFor({ timeout: 20000 });
    const hasGpu = (await page.locator('#this-machine .machine-gpu').count()) > 0;
    if (!hasGpu) {
      await page.locator('#lab-kernels .gpu-needed').waitFor({ timeout: 20000 });
      ok(/GPU/.test(await page.locator('#lab-kernels .gpu-needed').innerText()), 'act III: without a GPU the kernel benchmark says what a GPU adds');
      ok((await page.locator('#lab-infer .gpu-needed').count()) === 1, 'act III: without a GPU inference latency says it needs one');
    }
    await page.locator('#peer-panel .peer-status').waitFor({ timeout: 60000 });
    ok((await page.locator('#peer-panel .peer-status').innerText()).length > 10, 'act III: the PyTorch peer panel says what it found or how to enable it');
    for (const l of ['lenet_c1', 'lenet_c3']) {
      const box = page.locator(`#ladder-layer-${l}`);
      if (await box.count() && await box.isChecked()) await box.uncheck();
    }
    await page.click('#ladder-run');
    await page.locator('#ladder-result.lab-result').waitFor({ timeout: 120000 });
    await page.waitForTimeout(300);
    const ladderRun = await page.locator('#ladder-result').getAttribute('data-saved-run');
    ok(/^lab-/.test(ladderRun || ''), `act III: the ladder job ran and was kept in the run history (${ladderRun})`);
    ok((await page.locator('#ladder-result table[data-key="lab_conv1"] tbody tr').count()) >= 2, 'act III: the ladder lists the CPU rows of lab conv1 (naive f64, im2col)');
    const ladderPx = await darkPixels('#ladder-chart');
    ok(ladderPx > 500, `act III: the ladder's speed-up chart is drawn (${ladderPx} dark pixels)`);
    await shot('act3-ladder.png', { fullPage: true });
    // The step anatomy on the CPU: a timeline and stacked bars per precision, a table per kernel role.
    await page.fill('#anatomy-batch', '64');
    await page.fill('#anatomy-steps', '3');
    await page.click('#anatomy-run');
    await page.locator('#anatomy-result.lab-result').waitFor({ timeout: 120000 });
    await page.waitForTimeout(300);
    const anatomyRun = await page.locator('#anatomy-result').getAttribute('data-saved-run');
    ok(/^lab-/.test(anatomyRun || ''), `act III: the step anatomy ran and was kept (${anatomyRun})`);
    const tl = await darkPixels('#anatomy-timeline');
    const bars = await darkPixels('#anatomy-bars');
    ok(tl > 500 && bars > 500, `act III: the anatomy's timeline and stacked bars are drawn (${tl}, ${bars} dark pixels)`);
    const roles = await page.locator('#anatomy-table tbody tr').count();
    ok(roles >= 10, `act III: the anatomy table has a row per kernel role (${roles})`);
    ok(/ms/.test(await page.locator('#anatomy-gap').innerText()), 'act III: the anatomy states the kernels\' sum against the step');
    const [traceDownload] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), page.click('#anatomy-export')]);
    const trace = JSON.parse(fs.readFileSync(await traceDownload.path(), 'utf8'));
    const complete = trace.traceEvents.filter((e) => e.ph === 'X');
    ok(complete.length > 20 && complete.every((e) => typeof e.ts === 'number' && typeof e.dur === 'number'),
      `act III: the exported trace is trace-event JSON Perfetto opens (${complete.length} complete events, ${traceDownload.suggestedFilename()})`);
    await page.locator('#lab-anatomy').scrollIntoViewIfNeeded();
    await shot('act3-anatomy.png');
    // Cancel: a long anatomy stops when asked.
    await page.fill('#anatomy-steps', '1000');
    await page.fill('#anatomy-batch', '128');
    await page.click('#anatomy-run');
    await page.locator('#lab-progress').waitFor({ timeout: 20000 });
    await page.click('#anatomy-cancel');
    await page.locator('#lab-anatomy .lab-error').waitFor({ timeout: 60000 });
    ok(/cancel/i.test(await page.locator('#lab-anatomy .lab-error').innerText()), `act III: cancel stops the job (${(await page.locator('#lab-anatomy .lab-error').innerText()).slice(0, 80)})`);
    globalThis.labRunsKept = [ladderRun, anatomyRun];
    await train.locator('button.facts-button').click();
    await train.locator('table.facts tr[data-entry="conv_mma_fwd_f16"]').waitFor({ timeout: 180000 });
    const hmma = Number(await train.locator('tr[data-entry="conv_mma_fwd_f16"] td.hmma').innerText());
    const noHmma = Number(await train.locator('tr[data-entry="conv_block_fwd_f32"] td.hmma').innerText());
    ok(hmma > 0 && noHmma === 0, `act III: HMMA in conv_mma_fwd_f16's SASS (${hmma}), none in conv_block_fwd_f32's (${noHmma})`);
    const excerpt = train.locator('tr[data-excerpt-of="conv_mma_fwd_f16"]');
    // textContent: the excerpt sits in a closed <details>, where innerText is empty.
    const tcLines = await excerpt.locator('.asm-line.tensor-core').evaluateAll((els) => els.map((e) => e.textContent));
    ok(tcLines.some((l) => /HMMA/.test(l)) && tcLines.some((l) => /mma/.test(l)),
      `act III: the PTX/SASS excerpt highlights the tensor-core lines (${tcLines.length}: ${tcLines.slice(0, 2).join(' | ').slice(0, 120)})`);
    await shot('act3-kernels.png', { fullPage: true });

    // Act IV: occupancy
    await page.click('nav a[href="#/profiling"]');
    await page.locator('#occ-pct').waitFor();
    // This GPU first: the calculator says which GPU its default is (none here: an example).
    await page.waitForFunction(() => (document.querySelector('#cc-this-gpu')?.textContent || '').length > 0, null, { timeout: 20000 });
    const ccNote = (await page.locator('#cc-this-gpu').innerText()).trim();
    const ccValue = await page.locator('#cc').inputValue();
    ok((/no GPU on this machine/.test(ccNote) && ccValue === '9.0') || /this machine's GPU: .*compute capability/.test(ccNote),
      `act IV: the calculator opens on this machine's GPU or says why not (${ccValue}: ${ccNote})`);
    const before = await page.locator('#occ-pct').innerText();
    await page.locator('#registers').fill('128');
    await page.waitForFunction((b) => document.querySelector('#occ-pct')?.textContent !== b, before, { timeout: 5000 }).catch(() => {});
    const after = await page.locator('#occ-pct').innerText();
    ok(before !== after, `act IV: moving the registers slider changes the occupancy (${before} -> ${after})`);
    ok((await page.locator('#occ-limiter').innerText()).includes('registers'), 'act IV: limiter is registers at 128 registers/thread');
    const chartPixels = await page.evaluate(() => {
      const c = document.querySelector('#occ-chart');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] < 200) n++;
      return n;
    });
    ok(chartPixels > 500, `act IV: the sweep chart is drawn (${chartPixels} dark pixels)`);
    await shot('act4-occupancy.png');

    // Act IV: a new user's library opens with the example report (a real export of our kernels)
    await page.locator('#ncu-library').waitFor();
    const exampleRow = page.locator('#ncu-library li.import.example');
    await exampleRow.waitFor({ timeout: 20000 });
    ok((await exampleRow.count()) === 1 && /example/.test(await exampleRow.innerText()), `act IV: the library opens with the example report, marked as an example (${(await exampleRow.innerText()).replace(/\s+/g, ' ').slice(0, 90)})`);
    await page.waitForFunction(() => [...document.querySelectorAll('#kernel option')].some((o) => o.textContent.includes('relu_f32')), null, { timeout: 20000 });
    ok((await page.locator('#panels article.panel').count()) === 7, 'act IV: the example\'s seven panels are open before anything was imported: our relu_f32 among its kernels');

    // Act IV: ncu import of the shared fixture, through the service into the saved library
    await page.setInputFiles('#ncu-file', fixture);
    await page.waitForFunction(() => document.querySelectorAll('#kernel option').length === 16, null, { timeout: 20000 });
    ok((await page.locator('#panels article.panel').count()) === 7, 'act IV: the fixture shows seven panels');
    ok((await page.locator('#kernel option').count()) === 16, 'act IV: 16 kernels in the picker');
    await page.selectOption('#kernel', '7');
    await page.waitForFunction(() => document.querySelector('#kernel-name')?.textContent.includes('GeluCUDAKernelImpl'));
    ok(true, 'act IV: picking kernel #7 shows the GELU kernel');
    const narratives = await page.locator('#panels .narrative').allInnerTexts();
    ok(narratives.length === 7 && narratives.every((t) => t.trim().length > 10), 'act IV: every panel has a narrative');
    ok((await page.locator('#panels canvas').count()) >= 3, 'act IV: panels have bar charts');
    await page.locator('#ncu').evaluate((e) => e.scrollIntoView());
    await shot('act4-ncu.png');

    // Act IV: a hostile kernel name (and file name) is text
    await page.setInputFiles('#ncu-file', { name: `${XSS}.csv`, mimeType: 'text/csv', buffer: Buffer.from(xssCsv()) });
    await page.waitForFunction((x) => document.querySelector('#kernel-name')?.textContent === x, XSS, { timeout: 10000 });
    ok(true, 'act IV: the kernel name <img src=x onerror=...> shows as text');
    ok((await page.locator('#ncu img:not(.screenshot-image), #ncu script').count()) === 0, 'act IV: no <img>/<script> element was created');
    const xss = await page.evaluate(() => typeof window.__xss);
    ok(xss === 'undefined', `act IV: window.__xss is ${xss}`);

    // Act IV: the library lists both imports, and still does after a reload
    const imports = page.locator('#ncu-library li.import');
    const fixtureName = path.basename(fixture);
    const listed = async (name) => imports.filter({ hasText: name }).count();
    await imports.filter({ hasText: `${XSS}.csv` }).waitFor({ timeout: 10000 });
    ok(await listed(fixtureName) === 1, `act IV: #ncu-library lists ${fixtureName}`);
    ok(await listed(`${XSS}.csv`) === 1, 'act IV: the hostile file name is listed as text');
    await page.reload();
    await imports.first().waitFor({ timeout: 20000 });
    ok(await listed(fixtureName) === 1 && await listed(`${XSS}.csv`) === 1, 'act IV: after a reload both imports are still listed');

    // Act IV: a screenshot attached to a panel is shown beside it
    await imports.filter({ hasText: fixtureName }).locator('button.open-import').click();
    await page.locator('#panel-occupancy input.attach-shot').waitFor({ timeout: 20000 });
    const pngFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'showdown-e2e-png-')), 'occupancy.png');
    fs.writeFileSync(pngFile, Buffer.from(PNG_BASE64, 'base64'));
    const caption = 'occupancy <b>before</b>';
    await page.fill('#panel-occupancy input.attach-caption', caption);
    await page.setInputFiles('#panel-occupancy input.attach-shot', pngFile);
    const shotImg = page.locator('#panel-occupancy img.screenshot-image');
    await shotImg.waitFor({ timeout: 20000 });
    await page.waitForFunction(() => document.querySelector('#panel-occupancy img.screenshot-image')?.naturalWidth === 8, null, { timeout: 10000 });
    ok((await shotImg.getAttribute('src')).startsWith('data:image/png;base64,'), 'act IV: the attached PNG is shown from a data: URL, 8 px wide');
    ok((await page.locator('#panel-occupancy .screenshot-caption').innerText()) === caption, 'act IV: the caption is text');
    ok((await page.locator('#panel-launch img.screenshot-image').count()) === 0, 'act IV: the screenshot is on its own panel only');

    // Act IV: a second report dropped on #ncu-drop, and the comparison of the two
    const fixture2Name = path.basename(fixture2);
    const dataTransfer = await page.evaluateHandle(({ name, text }) => {
      const dt = new DataTransfer();
      dt.items.add(new File([text], name, { type: 'text/csv' }));
      return dt;
    }, { name: fixture2Name, text: fs.readFileSync(fixture2, 'utf8') });
    await page.dispatchEvent('#ncu-drop', 'drop', { dataTransfer });
    await imports.filter({ hasText: fixture2Name }).waitFor({ timeout: 20000 });
    ok(true, `act IV: ${fixture2Name} dropped on #ncu-drop is imported`);
    const optionFor = (select, name) => page.$eval(select, (s, n) => [...s.options].find((o) => o.textContent.startsWith(n))?.value, name);
    await page.selectOption('#compare-a', await optionFor('#compare-a', fixtureName));
    await page.selectOption('#compare-b', await optionFor('#compare-b', fixture2Name));
    await page.locator('#ncu-compare #compare-table tbody tr.delta').first().waitFor({ timeout: 20000 });
    const ratios = (await page.locator('#compare-table td.ratio').allInnerTexts()).filter((r) => /^\d+(\.\d+)?×$/.test(r.trim()));
    ok(ratios.length >= 3, `act IV: #ncu-compare shows B / A for ${ratios.length} metrics (${ratios.slice(0, 3).join(', ')})`);
    ok(await page.locator('#compare-chart').isVisible(), 'act IV: the ratios are drawn as bars');
    await page.locator('#ncu-compare').evaluate((e) => e.scrollIntoView());
    await shot('act4-compare.png');

    // Act IV: removing an import takes it out of the library
    await imports.filter({ hasText: `${XSS}.csv` }).locator('button.remove-import').click();
    await page.waitForFunction((n) => ![...document.querySelectorAll('#ncu-library li.import')].some((li) => li.textContent.includes(n)), `${XSS}.csv`, { timeout: 10000 });
    ok(await listed(fixtureName) === 1, 'act IV: Remove takes out that import only');
    await exampleRow.locator('button.remove-import').click();
    await page.locator('#ncu-add-example').waitFor({ timeout: 10000 });
    ok((await exampleRow.count()) === 0 && await listed(fixtureName) === 1, 'act IV: the example is removed like any other import, and can be added back');

    // Act II: a CPU duel to the result table
    await page.click('nav a[href="#/duel"]');
    await page.locator('#run-duel').waitFor();
    await page.selectOption('#backend', 'cpu');
    const acts = await page.locator('#activation option').allInnerTexts();
    ok(acts.join(',') === 'ReLU,GELU,Swish', `act II: the CNN variant switch offers ${acts.join(', ')}`);
    // Cancel: a long duel stops with a "cancelled" error and the form comes back.
    await page.fill('#epochs', '5');
    await page.fill('#train-limit', '');
    await page.click('#run-duel');
    await page.waitForFunction(() => /step/.test(document.querySelector('#duel-progress')?.textContent || ''), null, { timeout: 60000 });
    await page.click('#cancel-duel');
    await page.locator('#duel-error').waitFor({ timeout: 60000 });
    const cancelled = await page.locator('#duel-error').innerText();
    ok(/cancel/i.test(cancelled), `act II: Cancel stops the duel (${cancelled})`);
    await page.waitForFunction(() => !document.querySelector('#run-duel').disabled, null, { timeout: 10000 });
    await page.fill('#epochs', '1');
    await page.fill('#train-limit', '1024');
    ok(await page.locator('#prec-fp32').isChecked() && await page.locator('#prec-fp16').isChecked(), 'act II: fp32 and fp16 are the default contestants');
    await page.click('#run-duel');
    await page.locator('#result-table tbody tr').first().waitFor({ timeout: 240000 });
    const rows = await page.locator('#result-table tbody tr').allInnerTexts();
    ok(rows.length === 2 && rows[0].startsWith('fp32') && rows[1].startsWith('fp16'), `act II: result table ${JSON.stringify(rows)}`);
    const heads = await page.locator('#result-table thead th').allInnerTexts();
    ok(['Precision', 'Epoch Time (ms)', 'Max Memory (MB)', 'Test accuracy'].every((h) => heads.includes(h)), 'act II: the table has the seed columns');
    ok(await page.locator('#loss-chart').isVisible(), 'act II: the loss curves are drawn');
    // Act II: test accuracy per epoch, and the telemetry strip
    const accuracy = await page.evaluate(() => {
      const c = document.querySelector('#accuracy-chart');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      const near = (i, r, g, b) => Math.abs(d[i] - r) < 30 && Math.abs(d[i + 1] - g) < 30 && Math.abs(d[i + 2] - b) < 30;
      let dark = 0; let fp32 = 0; let fp16 = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i] < 200 && d[i + 1] < 200 && d[i + 2] < 200) dark += 1;
        if (near(i, 0, 114, 178)) fp32 += 1;
        if (near(i, 213, 94, 0)) fp16 += 1;
      }
      return { dark, fp32, fp16 };
    });
    ok(await page.locator('#accuracy-chart').isVisible() && accuracy.dark > 500 && accuracy.fp32 > 20 && accuracy.fp16 > 20,
      `act II: the accuracy chart is drawn (${JSON.stringify(accuracy)})`);
    ok((await page.locator('#telemetry-strip article.contestant').count()) === 2, 'act II: the telemetry strip has a card per contestant');
    for (const p of ['fp32', 'fp16']) {
      const card = page.locator(`#telemetry-strip article.contestant[data-precision="${p}"]`);
      const epochTime = (await card.locator('.epoch-time').innerText()).trim();
      const peak = (await card.locator('.peak-memory').innerText()).trim();
      const gpu = (await card.locator('.gpu-telemetry').innerText()).trim();
      ok(/^\d+(\.\d+)? ms$/.test(epochTime) && /MB$/.test(peak) && /samples|\d/.test(await card.locator('.samples-per-s').innerText()),
        `act II: telemetry strip ${p}: epoch time ${epochTime}, peak memory ${peak}`);
      ok(gpu === 'GPU telemetry: none (CPU backend)', `act II: telemetry strip ${p} says "${gpu}"`);
    }
    ok((await page.locator('#duel-error').count()) === 0, 'act II: no error');
    const savedNote = (await page.locator('#duel-saved').innerText()).trim();
    ok(/^Saved to the run history as \d{8}-\d{6}-/.test(savedNote), `act II: the duel's typed reply says where it was saved (${savedNote})`);
    await shot('act2-duel.png', { fullPage: true });

    // Act II: the run history keeps the duel (newest first), also after a reload
    const accs = (await page.locator('#result-table tbody tr td:nth-child(4)').allInnerTexts()).map((t) => t.trim());
    const historyListsDuel = () => page.waitForFunction((want) => {
      const row = document.querySelector('#run-history #history-table tbody tr');
      return !!row && want.length > 0 && want.every((a) => row.textContent.includes(a));
    }, accs, { timeout: 20000 }).then(() => true, () => false);
    const duelInHistory = await historyListsDuel();
    const firstRun = page.locator('#run-history #history-table tbody tr').first();
    const historyRow = duelInHistory ? (await firstRun.innerText()).replace(/\s+/g, ' ') : '';
    ok(accs.length === 2 && duelInHistory, `act II: the run history lists the duel with its accuracies ${accs.join(', ')} (${historyRow})`);
    if (duelInHistory) {
      await firstRun.locator('button.run-show').click();
      await page.locator('#history-run-table tbody tr').first().waitFor({ timeout: 10000 }).catch(() => {});
      const shown = (await page.locator('#history-run-table tbody tr td:nth-child(4)').allInnerTexts()).map((t) => t.trim());
      ok(JSON.stringify(shown) === JSON.stringify(accs), `act II: clicking the saved run shows its result table (${shown.join(', ')})`);
      const [csvDownload] = await Promise.all([
        page.waitForEvent('download', { timeout: 20000 }),
        firstRun.locator('button.run-csv').click(),
      ]);
      const csvText = fs.readFileSync(await csvDownload.path(), 'utf8');
      const csvRows = csvText.split('\n').filter((l) => l.trim() !== '');
      ok(csvDownload.suggestedFilename().endsWith('.csv') && csvRows[0].startsWith('precision,epoch,') && csvRows.length === 3,
        `act II: the CSV export has a header and one row per contestant and epoch (${csvDownload.suggestedFilename()}, ${csvRows.length} lines)`);
    }
    await page.reload();
    await page.click('nav a[href="#/"]');
    await page.locator('#auto-backend').waitFor({ timeout: 20000 });
    await page.click('nav a[href="#/duel"]');
    ok(await historyListsDuel(), 'act II: after a reload the run history still lists the duel');

    // Act II: "Get full MNIST" (issue 18): the data_fetch job from the loopback mirror, with
    // progress and Cancel, makes mnist available to a duel in the same session
    const mnistOption = page.locator('#dataset option[value="mnist"]');
    await mnistOption.waitFor({ state: 'attached', timeout: 20000 });
    ok(await mnistOption.isDisabled() && await page.locator('#get-mnist').isVisible(), 'full MNIST: not available at first, and Act II offers "Get full MNIST"');
    await page.click('#get-mnist');
    await page.waitForFunction(() => /MB/.test(document.querySelector('#fetch-progress')?.textContent || ''), null, { timeout: 30000 });
    const fetchProgress = (await page.locator('#fetch-progress').innerText()).trim();
    ok(/train-images-idx3-ubyte\.gz \(1\/4\): [0-9.]+ \/ 1\.3 MB/.test(fetchProgress), `full MNIST: progress per file in MB (${fetchProgress})`);
    await page.click('#cancel-fetch');
    await page.locator('#fetch-error').waitFor({ timeout: 30000 });
    const fetchCancelled = (await page.locator('#fetch-error').innerText()).trim();
    ok(/cancelled/i.test(fetchCancelled) && await mnistOption.isDisabled() && await page.locator('#get-mnist').isEnabled(),
      `full MNIST: Cancel stops the download and mnist stays unavailable (${fetchCancelled})`);
    const partial = fs.readdirSync(path.join(dataHome, 'mnist'));
    ok(!partial.some((f) => f.endsWith('.part') || f.startsWith('train-images')), `full MNIST: no partial file kept (${JSON.stringify(partial)})`);
    await page.click('#get-mnist');
    await page.locator('#fetch-status').waitFor({ timeout: 60000 });
    const fetched = (await page.locator('#fetch-status').innerText()).trim();
    ok(/SHA-256/.test(fetched) && fetched.includes(path.join(dataHome, 'mnist')), `full MNIST: fetched through the job service (${fetched})`);
    ok(!(await mnistOption.isDisabled()) && (await page.locator('#get-mnist').count()) === 0, 'full MNIST: mnist is now selectable in Act II');
    ok(mirror.asked.every((u) => /^\/(train|t10k)-(images-idx3|labels-idx1)-ubyte\.gz$/.test(u)), `full MNIST: only the manifest's files were asked of the mirror (${mirror.asked.length} requests)`);
    await page.selectOption('#dataset', 'mnist');
    await page.selectOption('#backend', 'cpu');
    await page.uncheck('#prec-fp16');
    await page.fill('#epochs', '1');
    await page.fill('#train-limit', '256');
    await page.click('#run-duel');
    await page.waitForFunction(() => /mnist: 256 training/.test(document.querySelector('#duel-result')?.textContent || ''), null, { timeout: 120000 });
    const mnistRows = await page.locator('#result-table tbody tr').allInnerTexts();
    ok(mnistRows.length === 1 && mnistRows[0].startsWith('fp32') && (await page.locator('#duel-error').count()) === 0,
      `full MNIST: a duel on mnist finishes (${JSON.stringify(mnistRows)})`);
    // The mnist duel leaves the history as it was, so the verdict below reads the CPU duel.
    const mnistRun = page.locator('#run-history #history-table tbody tr', { has: page.locator('td:nth-child(2)', { hasText: /^mnist$/ }) });
    await mnistRun.first().waitFor({ timeout: 20000 });
    ok((await mnistRun.count()) === 1, 'full MNIST: the run history keeps the mnist duel');
    await mnistRun.first().locator('button.run-delete').click();
    // Delete asks in the page first (issue 26).
    await mnistRun.first().locator('button.run-delete-confirm').click();
    await page.waitForFunction(() => ![...document.querySelectorAll('#run-history #history-table tbody tr td:nth-child(2)')].some((td) => td.textContent.trim() === 'mnist'), null, { timeout: 20000 });
    ok(await historyListsDuel(), 'full MNIST: removing it leaves the CPU duel first in the run history');
    await page.check('#prec-fp16');
    await page.click('nav a[href="#/setup"]');
    await page.locator('#digit-dataset option[value="mnist"]').waitFor({ state: 'attached', timeout: 20000 });
    await page.selectOption('#digit-dataset', 'mnist');
    await page.waitForFunction(() => /^mnist test images 1–64 of 2000/.test(document.querySelector('#digit-range')?.textContent || ''), null, { timeout: 20000 });
    const mnistHere = (await page.locator('#mnist-location').innerText()).trim();
    ok(mnistHere.includes(path.join(dataHome, 'mnist')) && (await page.locator('#get-mnist').count()) === 0,
      `full MNIST: Act I pages through it and says where it is read from (${mnistHere})`);

    // Act V: the verdict from the saved run, exported as one HTML file
    await page.click('nav a[href="#/verdict"]');
    await page.locator('#verdict-table tbody tr').first().waitFor({ timeout: 30000 }).catch(() => {});
    const verdictAccs = (await page.locator('#verdict-table tbody tr td:nth-child(4)').allInnerTexts()).map((t) => t.trim());
    ok(verdictAccs.length === 2 && JSON.stringify(verdictAccs) === JSON.stringify(accs), `act V: the verdict shows the duel's accuracies (${verdictAccs.join(', ')})`);
    const verdictHeads = await page.locator('#verdict-table thead th').allInnerTexts();
    ok(['Precision', 'Epoch Time (ms)', 'Max Memory (MB)', 'Test accuracy'].every((h) => verdictHeads.includes(h)), 'act V: the verdict table has the seed columns');
    const verdictSpeedup = (await page.locator('#verdict-speedup').count()) ? await page.locator('#verdict-speedup').innerText() : '';
    ok(/fp16 vs fp32: [0-9.]+×/.test(verdictSpeedup), `act V: the speed-up line (${verdictSpeedup})`);
    const [htmlDownload] = await Promise.all([
      page.waitForEvent('download', { timeout: 30000 }),
      page.click('#export-html'),
    ]);
    const verdictHtml = fs.readFileSync(await htmlDownload.path(), 'utf8');
    ok(htmlDownload.suggestedFilename() === 'precision-showdown-verdict.html', `act V: the export is named ${htmlDownload.suggestedFilename()}`);
    ok(verdictHtml.includes('Precision Showdown') && accs.length > 0 && accs.every((a) => verdictHtml.includes(a)), 'act V: the exported HTML names Precision Showdown and the accuracies');
    ok(!/<script|<link|https?:\/\//i.test(verdictHtml), 'act V: the exported HTML is self-contained (no script, no link, no URL)');
    ok((await page.locator('#verdict-error').count()) === 0, 'act V: no error');
    await shot('verdict.png', { fullPage: true });

    // A saved lab run survives a restart of the server (the compute process and its state).
    // The first page stops polling the server about to go (its refused requests would count
    // as page errors once the parts after the restart run long enough for a poll to fire).
    await page.goto('about:blank');
    child.removeAllListeners('exit');
    child.kill();
    const again = await startServer(mirror.env);
    const page3 = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page3.goto(`${again.url}/?token=${TOKEN}#/duel`);
    for (const id of globalThis.labRunsKept) {
      await page3.locator(`#lab-runs tr[data-lab-run="${id}"]`).waitFor({ timeout: 30000 });
    }
    ok(true, `history: the lab runs ${globalThis.labRunsKept.join(', ')} are listed after a restart`);
    await page3.locator(`#lab-runs tr[data-lab-run="${globalThis.labRunsKept[1]}"] .lab-open`).click();
    await page3.locator('#lab-run-report').waitFor({ timeout: 20000 });
    ok(/anatomy|launches|fp32/.test(await page3.locator('#lab-run-report').innerText()), 'history: a kept step anatomy opens after the restart');
    await page3.close();
    restarted = again;
    // A page opened with the token in its address (as `showdown serve` prints it) never asks,
    // and drops the token from the address bar.
    const page2 = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    let asked2 = 0;
    page2.on('dialog', (d) => { asked2 += 1; d.dismiss(); });
    await page2.goto(`${restarted.url}/?token=${TOKEN}#/`);
    await page2.locator('#auto-backend').waitFor({ timeout: 20000 });
    ok(asked2 === 0 && !page2.url().includes(TOKEN), `token: ?token= in the address works without asking and leaves the address bar (${page2.url()})`);
    await page2.close();
    // The visual explainer (issue 16), each part in its own file beside this one: Act II's
    // mixed-precision story after a CPU duel (which keeps its models), Act I inside the network
    // on those models, then the guided walk Home → Act V; last, PyTorch beside the duel.
    await runParts(PARTS, restarted.url, pageErrors);
    ok(pageErrors.length === 0, `no page errors or dialogs ${JSON.stringify(pageErrors)}`);
  } finally {
    await browser.close();
    mirror.server.close();
    child.removeAllListeners('exit');
    child.kill();
    if (restarted) { restarted.child.removeAllListeners('exit'); restarted.child.kill(); }
  }
}

main().then(() => {
  console.log(failures === 0 ? `e2e: all checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s` : `e2e: ${failures} check(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}, (e) => {
  console.error(`e2e: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
