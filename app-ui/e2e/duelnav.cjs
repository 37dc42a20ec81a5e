// Act II's duel outlives its page (issue 37): a CPU duel started on Act II goes on while the
// user visits Act III, and back on Act II its live loss chart, epoch table and progress are
// there and still growing (no "started before the reload" note, "Run duel" still disabled);
// the form keeps its settings across the visit and after a reload.
//
// Called by browser.cjs: run(page, { ok, base, shots }).
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { pngText } = require('./origin.cjs');

async function run(page, { ok, base, shots }) {
  const text = async (sel) => ((await page.locator(sel).first().innerText().catch(() => '')) || '').replace(/\s+/g, ' ').trim();
  const steps = async () => {
    const s = (await page.locator('#loss-chart').getAttribute('data-steps').catch(() => '')) || '';
    // `fp32:1,2,3;fp16:1,2` -> the number of points drawn in all.
    return s.split(';').filter(Boolean).map((x) => (x.split(':')[1] || '').split(',').filter(Boolean).length)
      .reduce((a, b) => a + b, 0);
  };
  const inked = () => page.locator('#loss-chart').evaluate((c) => {
    if (getComputedStyle(c).display === 'none') return 0;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) n += 1;
    }
    return n;
  }).catch(() => 0);

  await page.goto(`${base}#/duel`);
  await page.locator('#run-duel').waitFor({ timeout: 30000 });
  await page.waitForFunction(() => {
    const b = document.querySelector('#run-duel');
    return b && !b.disabled;
  }, null, { timeout: 60000 });

  // A duel long enough to leave mid-run: fp32 and fp16 on the CPU, 5 epochs of 2,048 images
  // (the contestants train one after the other).
  for (const p of ['fp32', 'fp16', 'tf32', 'bf16', 'fp8']) {
    const want = p === 'fp32' || p === 'fp16';
    const b = page.locator(`#prec-${p}`);
    if ((await b.isChecked()) !== want) await (want ? b.check() : b.uncheck());
  }
  await page.selectOption('#backend', 'cpu');
  await page.selectOption('#dataset', 'mnist-sample');
  await page.selectOption('#activation', 'gelu');
  await page.fill('#epochs', '5');
  await page.fill('#batch', '64');
  await page.fill('#train-limit', '2048');
  await page.click('#run-duel');
  await page.waitForFunction(() => document.querySelectorAll('#epoch-table tbody tr').length >= 1,
    null, { timeout: 120000 }).catch(() => {});
  const before = await steps();
  const rowsBefore = await page.locator('#epoch-table tbody tr').count();
  ok(before > 0 && rowsBefore >= 1, `duelnav: the duel runs, its loss chart and epoch table fill (${before} points, ${rowsBefore} epoch rows)`);

  // To Act III and back, through the navigation, as a user would.
  await page.click('#nav a[href="#/kernels"]');
  await page.locator('h2').first().waitFor({ timeout: 20000 });
  const away = await text('h2');
  await page.waitForTimeout(3000);
  await page.click('#nav a[href="#/duel"]');
  await page.locator('#run-duel').waitFor({ timeout: 30000 });
  ok(!/Duel/.test(away), `duelnav: the visit left Act II (${away})`);
  await page.waitForTimeout(500);
  const notes = await page.locator('#duel-reload-note').count();
  ok(notes === 0, `duelnav: back on Act II there is no note about a reload (${notes ? await text('#duel-reload-note') : 'none'})`);
  const running = await page.locator('#run-duel').isDisabled();
  const cancelEnabled = await page.locator('#cancel-duel').isEnabled();
  ok(running && cancelEnabled, `duelnav: the duel is still running: Run disabled, Cancel enabled (${running}, ${cancelEnabled})`);
  const back = await steps();
  const rowsBack = await page.locator('#epoch-table tbody tr').count();
  const ink = await inked();
  ok(back > before && rowsBack >= rowsBefore && ink > 300,
    `duelnav: back on Act II the live chart kept its curves and grew while away (${before} -> ${back} points, ${rowsBefore} -> ${rowsBack} epoch rows, ${ink} coloured pixels)`);
  const progress = await text('#duel-progress');
  ok(/step|epoch/.test(progress), `duelnav: the progress line follows the duel (${progress})`);
  await page.screenshot({ path: path.join(shots, 'act2-duel-after-visit.png') });
  await page.waitForTimeout(1500);
  ok(await steps() > back, 'duelnav: the chart keeps growing after the return');

  // The form after a visit and after a reload: the settings the duel was started with.
  const form = async () => ({
    epochs: await page.inputValue('#epochs'),
    batch: await page.inputValue('#batch'),
    limit: await page.inputValue('#train-limit'),
    backend: await page.inputValue('#backend'),
    activation: await page.inputValue('#activation'),
    fp16: await page.locator('#prec-fp16').isChecked(),
    bf16: await page.locator('#prec-bf16').isChecked(),
  });
  const want = { epochs: '5', batch: '64', limit: '2048', backend: 'cpu', activation: 'gelu', fp16: true, bf16: false };
  const same = (f) => JSON.stringify(f) === JSON.stringify(want);
  const visited = await form();
  ok(same(visited), `duelnav: the form kept its settings across the visit (${JSON.stringify(visited)})`);

  // The duel finishes on the page it was left and found again: its result and saved run.
  await page.locator('#duel-saved').waitFor({ timeout: 300000 }).catch(() => {});
  const saved = await text('#duel-saved');
  ok(/^Saved to the run history as \S+\.$/.test(saved), `duelnav: the duel finished and was saved after the visit (${saved})`);

  // The live page's PNG export carries its caption (the saved run, data set, batch, date).
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), page.click('#export-png')]);
  const caption = pngText(fs.readFileSync(await dl.path()), 'Description');
  const savedId = (saved.match(/as (\S+)\.$/) || [])[1] || '?';
  ok(caption.startsWith(`Run ${savedId} · `) && /mnist-sample/.test(caption) && /batch 64\b/.test(caption) && /\d{4}-\d\d-\d\d/.test(caption),
    `duelnav: the exported loss PNG carries its caption (${caption})`);

  // The loss chart's "difference from FP32" draws fp16 minus fp32; the accuracy chart's axis
  // is zoomed to its data, not 0–100 %.
  await page.check('#loss-difference');
  await page.waitForTimeout(300);
  const diff = await page.locator('#loss-chart').getAttribute('data-difference').catch(() => null);
  ok(diff === 'fp16' && await inked() > 100, `duelnav: "difference from FP32" draws fp16 minus fp32 (${diff})`);
  await page.locator('#loss-chart').scrollIntoViewIfNeeded().catch(() => {});
  await page.screenshot({ path: path.join(shots, 'act2-loss-difference-light.png') });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(shots, 'act2-loss-difference-dark.png') });
  await page.emulateMedia({ colorScheme: 'light' });
  await page.uncheck('#loss-difference');
  const yRange = (await page.locator('#accuracy-chart').getAttribute('data-y-range').catch(() => '')) || '';
  const [y0, y1] = yRange.split('-').map(Number);
  ok(y1 - y0 < 100 && y1 <= 100 && y0 >= 0, `duelnav: the accuracy axis is zoomed to the data (${yRange} %)`);

  await page.reload();
  await page.locator('#run-duel').waitFor({ timeout: 30000 });
  await page.waitForTimeout(500);
  const reloaded = await form();
  ok(same(reloaded), `duelnav: the form kept its settings after a reload (${JSON.stringify(reloaded)})`);
}

module.exports = { run };
