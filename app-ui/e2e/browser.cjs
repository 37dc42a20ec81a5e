// Browser-mode end-to-end test: `showdown serve --http 127.0.0.1:0` + headless Chromium
// (Debian's /usr/bin/chromium driven by npm playwright-core). Run it with `cargo xtask e2e`,
// which builds everything and sets the environment below.
//
//   SHOWDOWN_BIN    the showdown binary            (default target/release/showdown)
//   UI_DIR          the built web UI               (default app-ui/dist)
//   NCU_FIXTURE     an ncu details CSV export      (default compute/tests/data/ncu/torch_cupy_set_full_details.csv)
//   SCREENSHOTS     where the page PNGs go         (default screenshots)
//   PLAYWRIGHT_DIR  a folder whose node_modules has playwright-core (default target/e2e-node)
//   CHROMIUM        the browser                    (default /usr/bin/chromium)
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
const fixture = env('NCU_FIXTURE', 'compute/tests/data/ncu/torch_cupy_set_full_details.csv');
const shots = env('SCREENSHOTS', 'screenshots');
const pwDir = env('PLAYWRIGHT_DIR', 'target/e2e-node');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const { chromium } = require(require.resolve('playwright-core', { paths: [pwDir] }));

const XSS = '<img src=x onerror=window.__xss=1>';
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

function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--http', '127.0.0.1:0', '--ui-dir', uiDir], {
      stdio: ['ignore', 'pipe', 'inherit'],
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
  const { child, url } = await startServer();
  console.log(`server: ${url}`);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
    page.on('dialog', (d) => { pageErrors.push(`dialog: ${d.message()}`); d.dismiss(); });
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
    await shot('home.png');

    // Act I
    await page.click('nav a[href="#/setup"]');
    await page.locator('#model-table tbody tr').first().waitFor();
    ok((await page.locator('#model-table tbody tr').count()) === 7, 'act I: 7 layers in the table');
    await page.click('#diagram button:has-text("conv2")');
    const det = await page.locator('#layer-details').innerText();
    ok(det.includes('conv2') && det.includes('18496') && det.includes('64 × 11 × 11'), 'act I: clicking conv2 shows its shapes and parameters');
    await shot('act1-setup.png');

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
    ok((await train.locator('li.tensor-core').count()) === 9, 'act III: nine tensor-core entry points (3 convolutions x fp16/bf16/tf32) flagged in train.cu');
    await train.locator('button.facts-button').click();
    await train.locator('table.facts tr[data-entry="conv_mma_fwd_f16"]').waitFor({ timeout: 180000 });
    const hmma = Number(await train.locator('tr[data-entry="conv_mma_fwd_f16"] td.hmma').innerText());
    const noHmma = Number(await train.locator('tr[data-entry="conv_block_fwd_f32"] td.hmma').innerText());
    ok(hmma > 0 && noHmma === 0, `act III: HMMA in conv_mma_fwd_f16's SASS (${hmma}), none in conv_block_fwd_f32's (${noHmma})`);
    await shot('act3-kernels.png', { fullPage: true });

    // Act IV: occupancy
    await page.click('nav a[href="#/profiling"]');
    await page.locator('#occ-pct').waitFor();
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

    // Act IV: ncu import of the shared fixture
    await page.setInputFiles('#ncu-file', fixture);
    await page.locator('#panels article.panel').first().waitFor({ timeout: 20000 });
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

    // Act IV: a hostile kernel name is text
    await page.setInputFiles('#ncu-file', { name: 'xss.csv', mimeType: 'text/csv', buffer: Buffer.from(xssCsv()) });
    await page.waitForFunction((x) => document.querySelector('#kernel-name')?.textContent === x, XSS, { timeout: 10000 });
    ok(true, 'act IV: the kernel name <img src=x onerror=...> shows as text');
    ok((await page.locator('#ncu img, #ncu script').count()) === 0, 'act IV: no <img>/<script> element was created');
    const xss = await page.evaluate(() => typeof window.__xss);
    ok(xss === 'undefined', `act IV: window.__xss is ${xss}`);

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
    ok((await page.locator('#duel-error').count()) === 0, 'act II: no error');
    await shot('act2-duel.png', { fullPage: true });

    ok(pageErrors.length === 0, `no page errors or dialogs ${JSON.stringify(pageErrors)}`);
  } finally {
    await browser.close();
    child.removeAllListeners('exit');
    child.kill();
  }
  console.log(failures === 0 ? `e2e: all checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s` : `e2e: ${failures} check(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(`e2e: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
