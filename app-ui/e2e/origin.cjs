// Browser e2e for issue 37, "whose machine, which numbers": a data home holding runs made on
// another machine (the committed fixture compute/tests/data/data-home-h200-2026-11-28: two
// duels and four lab runs made on an H200 on 2026-11-28) opened by a server of its own on this
// machine (no GPU here). Checked: no "this GPU" or "this machine" said of them on any page; their
// device and date named; the verdict's "Repeat 3×" disabled with the reason; a quick CPU duel
// run here, then the verdict's HTML export separating the two machines; the CSV of the duel
// "with PyTorch" holding PyTorch's rows; a lab run's CSV naming its device and date; the loss
// PNG carrying its caption (its iTXt Description); the reopened GPU run's saved telemetry.
// Screenshots (1280×800, light and dark) of the history and the verdict.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const root = path.resolve(__dirname, '..', '..');
const bin = process.env.SHOWDOWN_BIN || path.join(root, 'target/release/showdown');
const uiDir = process.env.UI_DIR || path.join(root, 'app-ui/dist');
const FIXTURE = path.join(root, 'compute/tests/data/data-home-h200-2026-11-28');
const DUEL = '20261128-130103-019-00hn';
const PEER_DUEL = '20261128-130411-950-05ht';
const LADDER = 'lab-20261128-130225-104-02p9';

/// `showdown serve --http 127.0.0.1:0` over `home`; resolves { child, url }.
function startOwnServer(home) {
  const env = { ...process.env, SHOWDOWN_DATA_HOME: home };
  const child = spawn(bin, ['serve', '--http', '127.0.0.1:0', '--ui-dir', uiDir], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the origin server did not listen in 30 s')), 30000);
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const m = /^listening on (http:\/\/\S+)/.exec(line);
      if (m) { clearTimeout(timer); resolve({ child, url: m[1] }); }
    });
    child.on('exit', (code) => reject(new Error(`the origin server exited (${code})`)));
  });
}

/// The text of the first iTXt chunk `key` of the PNG `bytes`, or ''.
function pngText(bytes, key) {
  let at = 8;
  while (at + 12 <= bytes.length) {
    const len = bytes.readUInt32BE(at);
    const kind = bytes.subarray(at + 4, at + 8).toString('latin1');
    const data = bytes.subarray(at + 8, at + 8 + len);
    if (kind === 'iTXt' && data.subarray(0, key.length).toString('latin1') === key && data[key.length] === 0) {
      const rest = data.subarray(key.length + 3);
      const a = rest.indexOf(0);
      const b = rest.indexOf(0, a + 1);
      return rest.subarray(b + 1).toString('utf8');
    }
    at += 12 + len;
  }
  return '';
}

/// `text` without the words that name another machine ("not this machine").
const saysHere = (text) => /this GPU|this machine/i.test(text.replace(/not this machine/g, ''));

async function run(page, { ok, base, shots }) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'showdown-e2e-origin-'));
  // The fixture's files are gzip-compressed in the repository; the store reads `ID.json`.
  for (const dir of ['runs', 'lab-runs']) {
    fs.mkdirSync(path.join(home, dir), { recursive: true });
    for (const f of fs.readdirSync(path.join(FIXTURE, dir)).filter((x) => x.endsWith('.json.gz'))) {
      const json = require('node:zlib').gunzipSync(fs.readFileSync(path.join(FIXTURE, dir, f)));
      fs.writeFileSync(path.join(home, dir, f.replace(/\.gz$/, '')), json);
    }
  }
  const own = await startOwnServer(home);
  const p = await page.context().browser().newPage({ viewport: { width: 1280, height: 800 } });
  const text = async (sel) => ((await p.locator(sel).first().innerText().catch(() => '')) || '').replace(/\s+/g, ' ').trim();
  const download = async (click) => {
    const [d] = await Promise.all([p.waitForEvent('download', { timeout: 30000 }), click()]);
    return fs.readFileSync(await d.path());
  };
  try {
    // --- The history, before any run here: both H200 duels name their device and date.
    await p.goto(`${own.url}/#/duel`);
    const row = (id) => p.locator(`#run-history #history-table tbody tr[data-run="${id}"]`);
    await row(PEER_DUEL).waitFor({ timeout: 30000 });
    for (const id of [DUEL, PEER_DUEL]) {
      const origin = (await row(id).locator('.run-origin').innerText()).trim();
      ok(/NVIDIA H200/.test(origin) && /2026-11-28/.test(origin) && /not this machine/.test(origin) && !saysHere(origin),
        `origin: the H200 duel ${id} names its device and date, not this machine (${origin})`);
      const settings = (await row(id).locator('td.settings').innerText()).trim();
      ok(/60,000 train \/ 10,000 test images/.test(settings) && /batch 128/.test(settings),
        `origin: its settings name the training images (${settings})`);
    }

    // Reopened: its origin, telemetry, and the PNG's caption.
    await row(PEER_DUEL).locator('button.run-show').click();
    await p.locator('#history-run').waitFor({ timeout: 30000 });
    const runText = await text('#history-run');
    ok(!saysHere(runText) && /NVIDIA H200/.test(await text('#history-run-origin')) && /2026-11-28/.test(await text('#history-run-origin')),
      `origin: the reopened H200 run says where and when it ran, never "this GPU/machine" (${await text('#history-run-origin')})`);
    const telemetry = await text('#history-run-telemetry');
    ok(/\d\.\d\d GHz/.test(telemetry) && /\d W/.test(telemetry) && /°C/.test(telemetry) && /samples/.test(telemetry),
      `origin: the reopened GPU run shows its saved telemetry (${telemetry.slice(0, 160)})`);
    const png = await download(() => p.click('#history-export-png'));
    const caption = pngText(png, 'Description');
    ok(caption.includes(`Run ${PEER_DUEL}`) && /NVIDIA H200/.test(caption) && /fashion-mnist/.test(caption) && /batch 128/.test(caption) && /2026-11-28/.test(caption),
      `origin: the exported loss PNG carries its caption (${caption})`);
    ok((await text('#history-png-caption')) === caption, 'origin: ... the same caption the page shows under the button');
    for (const theme of ['light', 'dark']) {
      await p.emulateMedia({ colorScheme: theme });
      await p.evaluate(() => document.querySelector('#run-history').scrollIntoView());
      await p.screenshot({ path: path.join(shots, `origin-history-${theme}.png`) });
      await p.locator('#history-run').scrollIntoViewIfNeeded();
      await p.screenshot({ path: path.join(shots, `origin-history-run-${theme}.png`) });
    }
    await p.emulateMedia({ colorScheme: 'light' });

    // The CSV of the duel with PyTorch: its PyTorch rows.
    const csv = (await download(() => row(PEER_DUEL).locator('button.run-csv').click())).toString('utf8');
    const lines = csv.split('\n').filter((l) => l.trim() !== '');
    const pytorchRows = lines.slice(1).filter((l) => /,pytorch,/.test(l)).length;
    ok(/(^|,)source(,|$)/.test(lines[0]) && pytorchRows >= 8 && lines.some((l) => /,ours,/.test(l)),
      `origin: the CSV of the run with PyTorch has its PyTorch rows (${pytorchRows} of ${lines.length - 1})`);
    ok(lines.slice(1).every((l) => /2026-11-28 13:04 UTC/.test(l)), 'origin: ... every row names the run\'s date');

    // A lab run: its CSV names its device and date, its report where it ran.
    const lab = p.locator(`#lab-runs tr[data-lab-run="${LADDER}"]`);
    await lab.waitFor({ timeout: 30000 });
    const labOrigin = (await lab.locator('.run-origin').innerText()).trim();
    ok(/NVIDIA H200/.test(labOrigin) && /2026-11-28/.test(labOrigin) && !saysHere(labOrigin), `origin: the lab run names its device and date (${labOrigin})`);
    const labCsv = (await download(() => lab.locator('button.lab-csv').click())).toString('utf8').split('\n').filter((l) => l.trim() !== '');
    const head = labCsv[0].split(',');
    ok(head.includes('device') && head.includes('date') && head.includes('batch')
      && labCsv.slice(1).every((l) => l.includes('NVIDIA H200 (sm_90)') && /2026-11-28 \d\d:\d\d UTC/.test(l)),
      `origin: the ladder's CSV names its device, date and batch on every row (${labCsv[0]})`);
    ok(labCsv.filter((l) => /,pytorch,/.test(l)).length === 16, 'origin: ... with the 16 PyTorch cuDNN rows');
    await lab.locator('button.lab-open').click();
    await p.locator('#lab-run-report').waitFor({ timeout: 30000 });
    const labReport = await text('#lab-run-report');
    ok(!saysHere(labReport) && /not this machine/.test(await text('#lab-run-report .lab-run-origin')),
      `origin: the opened lab run never says "this GPU/machine" (${await text('#lab-run-report .lab-run-origin')})`);

    // Act III without a GPU shows the saved H200 runs: never "this GPU".
    await p.goto(`${own.url}/#/kernels`);
    await p.locator('#lab-title').waitFor({ timeout: 30000 });
    await p.waitForTimeout(3000);
    const act3 = await text('main');
    ok(!/this GPU/.test(act3), `origin: Act III never calls the saved H200 runs "this GPU" (${(act3.match(/.{0,60}this GPU.{0,60}/) || [''])[0]})`);

    // The verdict: the newest duel is the H200's: repeat disabled, with the reason.
    await p.goto(`${own.url}/#/verdict`);
    await p.locator('#verdict-headline').waitFor({ timeout: 30000 });
    ok(await p.locator('#verdict-repeat').isDisabled(), 'origin: the verdict\'s Repeat 3× is disabled for the H200 duel');
    const why = await text('#verdict-repeat-blocked');
    ok(/needs the hardware/.test(why) && /NVIDIA H200/.test(why) && /2026-11-28/.test(why), `origin: ... with the reason (${why})`);
    const verdictText = await text('#verdict');
    ok(!saysHere(verdictText.replace(/Where the verdict is made.*?Backend \(auto\)/, '')), 'origin: the verdict calls none of the H200 results this machine\'s');
    ok(/Ran on NVIDIA H200/.test(await text('#verdict-origin')), `origin: the verdict names where the newest duel ran (${await text('#verdict-origin')})`);

    // A quick CPU duel here: two origins.
    await p.goto(`${own.url}/#/duel`);
    await p.waitForFunction(() => { const b = document.querySelector('#run-duel'); return b && !b.disabled; }, null, { timeout: 60000 });
    await p.selectOption('#backend', 'cpu');
    await p.fill('#epochs', '1');
    await p.fill('#batch', '64');
    await p.fill('#train-limit', '256');
    await p.click('#run-duel');
    await p.locator('#duel-saved').waitFor({ timeout: 180000 });
    const cpuId = ((await text('#duel-saved')).match(/as (\S+)\.$/) || [])[1];
    ok(!!cpuId, `origin: a CPU duel ran here and was saved (${cpuId})`);
    await row(cpuId).waitFor({ timeout: 30000 });
    const cpuOrigin = (await row(cpuId).locator('.run-origin').innerText()).trim();
    ok(/^this machine/.test(cpuOrigin), `origin: the duel run here is this machine's (${cpuOrigin})`);

    await p.goto(`${own.url}/#/verdict`);
    await p.locator('#verdict-groups').waitFor({ timeout: 30000 });
    const here = await p.locator('#verdict-groups li.origin-group[data-here="true"]').count();
    const away = await p.locator('#verdict-groups li.origin-group[data-here="false"]').allInnerTexts();
    ok(here >= 1 && away.length >= 1 && away.every((t) => /^Another machine: NVIDIA H200/.test(t.trim()) && /2026-11-28/.test(t)),
      `origin: the verdict groups the runs by machine (${here} here, elsewhere: ${away.map((t) => t.split('\n')[0]).join(' | ')})`);
    const html = (await download(() => p.click('#export-html'))).toString('utf8');
    ok(/data-here="true"/.test(html) && /data-here="false"/.test(html) && /This machine: /.test(html) && /Another machine: NVIDIA H200/.test(html)
      && !/from runs on this machine/.test(html),
      'origin: the verdict\'s HTML export separates this machine\'s runs from the H200\'s, each with its machine line');
    for (const theme of ['light', 'dark']) {
      await p.emulateMedia({ colorScheme: theme });
      await p.screenshot({ path: path.join(shots, `origin-verdict-${theme}.png`) });
      await p.locator('#verdict-groups').scrollIntoViewIfNeeded();
      await p.screenshot({ path: path.join(shots, `origin-verdict-groups-${theme}.png`) });
    }
  } finally {
    await p.close().catch(() => {});
    own.child.kill();
  }
}

module.exports = { run, pngText };
