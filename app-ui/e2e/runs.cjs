// Act II's run history and Act V's verdict (issue 26, "the history and the verdict"): a duel
// reloaded mid-run is said to be cancelled; two short CPU duels (GELU at batch 32, ReLU at a
// batch larger than the training set) are listed with their activation and batch, the larger
// batch labelled with the batch it really was; a reopened run draws its curves (another run
// overlaid) and exports them as PNG; its CSV carries the configuration; Delete asks first, in
// the page; the verdict says how many runs its speed-up rests on and their spread, and its
// "Repeat 3×" runs the same duel three more times.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

/// Pixels of `canvas` near each RGB colour of `colors` (by name).
async function colourCounts(page, selector, colors) {
  return page.evaluate(([sel, cs]) => {
    const c = document.querySelector(sel);
    if (!c || c.width === 0) return null;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const out = {};
    for (const [name, [r, g, b]] of Object.entries(cs)) {
      let n = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (Math.abs(d[i] - r) < 30 && Math.abs(d[i + 1] - g) < 30 && Math.abs(d[i + 2] - b) < 30) n += 1;
      }
      out[name] = n;
    }
    return out;
  }, [selector, colors]);
}

const PRECISION_COLORS = { fp32: [0, 114, 178], fp16: [213, 94, 0] };

async function run(page, { ok, base, shots }) {
  const text = async (sel) => ((await page.locator(sel).first().innerText().catch(() => '')) || '').replace(/\s+/g, ' ').trim();
  const ready = () => page.waitForFunction(() => {
    const b = document.querySelector('#run-duel');
    return b && !b.disabled;
  }, null, { timeout: 60000 });

  await page.goto(`${base}#/duel`);
  await page.locator('#run-duel').waitFor({ timeout: 30000 });
  await ready();

  // A reload mid-duel: the reloaded page says the duel was cancelled by the reload.
  await page.selectOption('#backend', 'cpu');
  await page.fill('#epochs', '5');
  await page.fill('#train-limit', '');
  await page.click('#run-duel');
  await page.waitForFunction(() => /step/.test(document.querySelector('#duel-progress')?.textContent || ''), null, { timeout: 60000 });
  await page.reload();
  await page.locator('#run-duel').waitFor({ timeout: 30000 });
  const reloadNote = await page.waitForFunction(() => {
    const t = document.querySelector('#duel-reload-note')?.textContent || '';
    return /cancelled by the reload|finished and was saved/.test(t) ? t : false;
  }, null, { timeout: 60000 }).then((h) => h.jsonValue(), () => '');
  ok(/was cancelled by the reload/.test(reloadNote), `runs: a reload mid-duel says the duel was cancelled (${reloadNote})`);
  await ready();

  // Two short CPU duels with different settings.
  const duel = async (activation, batch, epochs) => {
    await page.selectOption('#backend', 'cpu');
    await page.selectOption('#activation', activation);
    await page.fill('#epochs', String(epochs));
    await page.fill('#batch', String(batch));
    await page.fill('#train-limit', '256');
    await page.click('#run-duel');
    await page.locator('#duel-saved').waitFor({ timeout: 180000 });
    const saved = await text('#duel-saved');
    await ready();
    return (saved.match(/^Saved to the run history as (\S+)\.$/) || [])[1];
  };
  const geluId = await duel('gelu', 32, 2);
  ok(!!geluId, `runs: the GELU duel (batch 32) is saved (${geluId})`);
  // The live curves: every contestant's points at the same steps (8 steps an epoch, 2 epochs).
  const steps = (s) => Object.fromEntries((s || '').split(';').filter(Boolean).map((x) => x.split(':')));
  const live = steps(await page.locator('#loss-chart').getAttribute('data-steps'));
  ok(live.fp32 && live.fp32 === live.fp16 && live.fp32.split(',').length === 16 && live.fp32.endsWith(',16'),
    `runs: the live loss curves of fp32 and fp16 have their points at the same steps (${JSON.stringify(live)})`);
  const settings = await text('#duel-settings');
  ok(/GELU/.test(settings) && /batch 32\b/.test(settings), `runs: the duel's result names its activation and batch (${settings})`);
  const bigId = await duel('relu', 100000, 1);
  ok(!!bigId, `runs: the ReLU duel (batch 100000) is saved (${bigId})`);
  const batchNote = await text('#duel-batch-note');
  ok(/batch 100000 is larger than the 256 training images: each epoch is one step of 256 images/.test(batchNote),
    `runs: a batch larger than the training set is said to be one step an epoch (${batchNote})`);
  const memoryNote = await text('#memory-batch-note');
  ok(/each step held 256/.test(memoryNote), `runs: the memory panel labels the batch it measured (${memoryNote})`);

  // The history lists the settings.
  const row = (id) => page.locator(`#run-history #history-table tbody tr[data-run="${id}"]`);
  await row(geluId).waitFor({ timeout: 20000 });
  await row(bigId).waitFor({ timeout: 20000 });
  const geluSettings = (await row(geluId).locator('td.settings').innerText()).trim();
  const bigSettings = (await row(bigId).locator('td.settings').innerText()).trim();
  ok(/GELU/.test(geluSettings) && /batch 32\b/.test(geluSettings) && /2 epochs/.test(geluSettings),
    `runs: the history row shows the activation, batch and epochs (${geluSettings})`);
  ok(/ReLU/.test(bigSettings) && /batch 100000 \(effective 256\)/.test(bigSettings),
    `runs: the history row labels the effective batch (${bigSettings})`);

  // Reopened: curves drawn, overlay, PNG export enabled and working.
  await row(geluId).locator('button.run-show').click();
  await page.locator('#history-loss-chart').waitFor({ timeout: 20000 });
  const runSettings = await text('#history-run-settings');
  ok(/GELU/.test(runSettings) && /batch 32\b/.test(runSettings), `runs: the reopened run states its settings (${runSettings})`);
  const curvesNote = await text('#history-curves-note');
  ok(/same steps for every contestant/.test(curvesNote), `runs: the reopened run has its per-step curves (${curvesNote})`);
  await page.waitForFunction((sel) => {
    const c = document.querySelector(sel);
    if (!c || c.width === 0) return false;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let ink = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i] < 200 || d[i + 1] < 200 || d[i + 2] < 200) ink += 1;
    return ink > 500;
  }, '#history-loss-chart', { timeout: 20000 }).catch(() => {});
  const drawn = await colourCounts(page, '#history-loss-chart', PRECISION_COLORS);
  const saved = steps(await page.locator('#history-loss-chart').getAttribute('data-steps'));
  ok(drawn && drawn.fp16 > 100 && saved.fp32 === live.fp32 && saved.fp16 === live.fp16,
    `runs: the reopened run draws both contestants' loss curves at the live curves' steps (${JSON.stringify(drawn)}, ${JSON.stringify(saved)})`);
  const acc = await colourCounts(page, '#history-accuracy-chart', PRECISION_COLORS);
  ok(acc && acc.fp32 > 10 && acc.fp16 > 10, `runs: the reopened run draws its accuracy curves (${JSON.stringify(acc)})`);
  ok(await page.locator('#history-export-png').isEnabled(), 'runs: the reopened run\'s PNG export is enabled');
  const [png] = await Promise.all([
    page.waitForEvent('download', { timeout: 20000 }),
    page.click('#history-export-png'),
  ]);
  const pngBytes = fs.readFileSync(await png.path());
  ok(png.suggestedFilename().endsWith('.png') && pngBytes.subarray(1, 4).toString() === 'PNG',
    `runs: Export PNG saves the reopened run's chart (${png.suggestedFilename()}, ${pngBytes.length} bytes)`);
  await row(bigId).locator('button.run-overlay').click();
  await page.locator('#history-overlays').waitFor({ timeout: 20000 });
  const overlays = await text('#history-overlays');
  ok(/ReLU, batch 100000/.test(overlays), `runs: another saved run is overlaid on the reopened one (${overlays})`);
  await page.locator('#history-run').screenshot({ path: path.join(shots, 'act2-history-run.png') }).catch(() => {});

  // Its CSV carries the configuration.
  const [csv] = await Promise.all([
    page.waitForEvent('download', { timeout: 20000 }),
    row(geluId).locator('button.run-csv').click(),
  ]);
  const lines = fs.readFileSync(await csv.path(), 'utf8').split('\n').filter((l) => l.trim() !== '');
  const head = lines[0].split(',');
  const col = (k) => head.indexOf(k);
  const first = (lines[1] || '').split(',');
  ok(col('activation') > 0 && first[col('activation')] === 'gelu' && first[col('batch')] === '32',
    `runs: the CSV rows carry the activation and batch (${lines[0]} | ${lines[1]})`);

  // Delete asks first (in the page, no dialog), Keep keeps, Delete again removes.
  await row(bigId).locator('button.run-delete').click();
  const asking = await row(bigId).locator('.confirm-delete').innerText().catch(() => '');
  ok(/Delete this run/.test(asking) && (await row(bigId).count()) === 1, `runs: Delete asks before removing (${asking.trim()})`);
  await row(bigId).locator('button.run-delete-keep').click();
  ok((await row(bigId).locator('button.run-delete').count()) === 1, 'runs: Keep leaves the run in the history');
  await row(bigId).locator('button.run-delete').click();
  await row(bigId).locator('button.run-delete-confirm').click();
  await page.waitForFunction((id) => !document.querySelector(`#history-table tr[data-run="${id}"]`), bigId, { timeout: 20000 })
    .then(() => ok(true, 'runs: confirming Delete removes the run'), () => ok(false, 'runs: confirming Delete removes the run'));
  // A saved lab run: made here (a tiny CPU step anatomy) unless the history has one.
  if ((await page.locator('#lab-runs tr[data-lab-run]').count()) === 0) {
    await page.click('nav a[href="#/kernels"]');
    await page.locator('#anatomy-run').waitFor({ timeout: 30000 });
    await page.waitForFunction(() => !document.querySelector('#anatomy-run').disabled, null, { timeout: 60000 });
    await page.fill('#anatomy-batch', '16');
    await page.fill('#anatomy-steps', '2');
    await page.click('#anatomy-run');
    await page.locator('#anatomy-result.lab-result').waitFor({ timeout: 120000 });
    await page.click('nav a[href="#/duel"]');
    await page.locator('#lab-runs tr[data-lab-run]').first().waitFor({ timeout: 30000 });
  }
  const labDelete = page.locator('#lab-runs button.lab-delete').first();
  {
    const labRow = page.locator('#lab-runs tr[data-lab-run]').first();
    const labId = await labRow.getAttribute('data-lab-run');
    await labDelete.click();
    const labAsk = await page.locator(`#lab-runs tr[data-lab-run="${labId}"] .confirm-delete`).innerText().catch(() => '');
    ok(/Delete this lab run/.test(labAsk), `runs: a lab run's Delete asks too (${labAsk.trim()})`);
    await page.locator(`#lab-runs tr[data-lab-run="${labId}"] button.lab-delete-keep`).click();
    // A saved lab run reopens with the charts its live section draws.
    await page.locator(`#lab-runs tr[data-lab-run="${labId}"] button.lab-open`).click();
    await page.locator('#lab-run-report .lab-run-drawn .lab-result').waitFor({ timeout: 20000 }).catch(() => {});
    const labCanvases = await page.locator('#lab-run-report .lab-run-drawn canvas').count();
    const labTables = await page.locator('#lab-run-report .lab-run-drawn table').count();
    ok(labCanvases + labTables > 0, `runs: a saved lab run reopens as its live section draws it (${labCanvases} chart(s), ${labTables} table(s))`);
  }

  // The verdict: the newest duel is the GELU one, from one run: not yet a verdict; it says so,
  // offers to repeat, and after Repeat 3× rests on four runs with their spread.
  await page.click('nav a[href="#/verdict"]');
  await page.locator('#verdict-headline').waitFor({ timeout: 30000 });
  const headline = await text('#verdict-headline');
  ok(/Not yet a verdict/.test(headline) && /in the only run/.test(headline) && /GELU, batch 32/.test(headline),
    `runs: a single run's speed-up is not stated as the verdict (${headline})`);
  const basis = await text('#verdict-basis');
  ok(/rests on 1 run of this duel/.test(basis), `runs: the verdict says how many runs it rests on (${basis})`);
  const rule = await text('#verdict-epoch-rule');
  ok(/more than 1\.25× its fastest/.test(rule), `runs: the verdict states its epoch-variation rule (${rule})`);
  const vSettings = await text('#verdict-settings');
  ok(/GELU/.test(vSettings) && /batch 32\b/.test(vSettings), `runs: the verdict shows the settings (${vSettings})`);
  ok(/^Repeat 3×$/.test(await text('#verdict-repeat')), 'runs: the verdict offers "Repeat 3×"');
  await page.click('#verdict-repeat');
  const after = await page.waitForFunction(() => {
    const b = document.querySelector('#verdict-basis')?.textContent || '';
    return /rests on 4 runs/.test(b) ? b : false;
  }, null, { timeout: 300000 }).then((h) => h.jsonValue(), () => '');
  ok(/rests on 4 runs of this duel: median [0-9.]+×, spread [0-9.]+–[0-9.]+×/.test(after), `runs: after Repeat 3× the speed-up rests on 4 runs and their spread (${after})`);
  const stated = await text('#verdict-headline');
  ok(/4 runs/.test(stated) && !/Not yet a verdict/.test(stated), `runs: with 4 runs the headline states runs and spread (${stated})`);
  ok((await page.locator('#verdict-repeat-error').count()) === 0, 'runs: the repeats ran without an error');
  await page.screenshot({ path: path.join(shots, 'verdict-runs.png'), fullPage: true }).catch(() => {});
}

module.exports = { run };
