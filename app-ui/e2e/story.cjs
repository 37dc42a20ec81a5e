// Act II's mixed-precision story (issue 16, items 3–5): a small CPU duel (fp32 + fp16, two
// epochs on 512 images), then the warm-up and step times, the gradient histograms against
// FP16's range with the loss-scale slider, the loss scale over the steps, and memory split by
// what holds it with the batch-size slider. Screenshots act2-histograms.png, act2-memory.png.
//
// Used by browser.cjs: `await require('./story.cjs').run(page, { ok, base, shots })`, `base`
// being the app's address with ?token=… and no hash, `shots` the screenshot folder.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

async function run(page, { ok, base, shots }) {
  await page.setViewportSize({ width: 1280, height: 800 });
  const shot = async (name, selector) => {
    await page.locator(selector).evaluate((e) => e.scrollIntoView({ block: 'start' }));
    const file = path.join(shots, name);
    await page.screenshot({ path: file });
    ok(fs.statSync(file).size > 1000, `screenshot ${file}`);
  };
  // The value of a range input, as a user dragging it would leave it.
  const setRange = (selector, value) => page.$eval(selector, (e, v) => {
    e.value = String(v);
    e.dispatchEvent(new Event('input', { bubbles: true }));
    e.dispatchEvent(new Event('change', { bubbles: true }));
  }, value);
  const text = async (selector) => (await page.locator(selector).innerText()).trim();

  await page.goto(`${base}#/duel`);
  await page.locator('#run-duel').waitFor({ timeout: 30000 });
  await page.waitForFunction(() => !document.querySelector('#run-duel').disabled, null, { timeout: 60000 });

  // Item 5: the defaults train the whole data set for two epochs (the first one the warm-up).
  const [epochsDefault, limitDefault] = [await page.inputValue('#epochs'), await page.inputValue('#train-limit')];
  ok(epochsDefault === '2' && limitDefault === '', `act II story: the defaults are 2 epochs on the whole training set (epochs "${epochsDefault}", train limit "${limitDefault}")`);

  // A small CPU duel, set through the form.
  await page.selectOption('#backend', 'cpu');
  for (const p of ['fp32', 'fp16', 'tf32', 'bf16']) {
    await page.locator(`#prec-${p}`).setChecked(p === 'fp32' || p === 'fp16');
  }
  await page.locator('#dataset option[value="mnist-sample"]').waitFor({ state: 'attached', timeout: 20000 });
  await page.selectOption('#dataset', 'mnist-sample');
  await page.fill('#epochs', '2');
  await page.fill('#batch', '128');
  await page.fill('#train-limit', '512');
  await page.click('#run-duel');
  // The loss-scale chart is drawn live, before the result.
  await page.locator('#loss-scale-chart').waitFor({ state: 'visible', timeout: 120000 });
  ok(true, 'act II story: #loss-scale-chart is shown while the duel runs');
  await page.locator('#result-table tbody tr').first().waitFor({ timeout: 300000 });
  ok((await page.locator('#duel-error').count()) === 0, 'act II story: the duel finishes without an error');
  const rows = await page.locator('#result-table tbody tr').allInnerTexts();
  ok(rows.length === 2 && rows[0].startsWith('fp32') && rows[1].startsWith('fp16'), `act II story: fp32 and fp16 in the result (${rows.length} rows)`);

  // Item 5: the warm-up epoch apart, and the step-time percentiles.
  const timing = await text('#duel-timing');
  ok(/epoch 1 \(warm-up[^)]*\): [0-9.]+ ms/.test(timing) && /median of epochs 2\.\.2: [0-9.]+ ms/.test(timing),
    `act II story: the warm-up epoch is reported apart from the median (${timing.split('\n')[1] || timing})`);
  ok(/p50 [0-9.]+ ms, p90 [0-9.]+ ms, p99 [0-9.]+ ms, max [0-9.]+ ms/.test(timing), 'act II story: the step-time percentiles are shown');
  const stepCells = (await page.locator('#result-table td.step-times').allInnerTexts()).map((t) => t.trim());
  ok(stepCells.length === 2 && stepCells.every((c) => /^[0-9.]+ \/ [0-9.]+ \/ [0-9.]+ \/ [0-9.]+$/.test(c)), `act II story: the result table has step times (${stepCells.join('; ')})`);

  // Item 3: the gradient histograms against FP16's range.
  await page.locator('#grad-histograms canvas').first().waitFor({ timeout: 30000 });
  const panels = await page.locator('#grad-histograms figure.grad-panel').count();
  ok(panels === 6, `act II story: #grad-histograms has a panel per layer and kind (${panels})`);
  const drawn = await page.$eval('#grad-histograms canvas', (c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let coloured = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) coloured += 1;
    }
    return coloured;
  });
  ok(drawn > 100, `act II story: the first histogram is drawn (${drawn} coloured pixels)`);
  const underflow = await text('#grad-underflow');
  ok(/\d/.test(underflow) && /flush to zero/.test(underflow), `act II story: #grad-underflow counts the values FP16 would flush (${underflow})`);
  const samples = await page.locator('#grad-sample option').allInnerTexts();
  ok(samples.length >= 1 && samples.every((s) => /^epoch \d+ step \d+ \(scale [0-9.e+]+\)/.test(s)), `act II story: the sampled steps are listed (${samples.slice(0, 3).join('; ')})`);
  const sentence = (await page.locator('#grad-histograms figure.grad-panel .grad-sentence').first().innerText()).trim();
  ok(/without scaling [0-9,]+ \([0-9.]+ %\) would flush to zero/.test(sentence), `act II story: each panel says what flushes (${sentence.slice(0, 120)}…)`);
  const scaleBefore = await page.inputValue('#grad-scale');
  const valueBefore = await text('#grad-scale-value');
  await setRange('#grad-scale', scaleBefore === '0' ? 12 : 0);
  await page.waitForFunction((v) => document.querySelector('#grad-scale-value')?.textContent.trim() !== v, valueBefore, { timeout: 10000 })
    .then(() => ok(true, `act II story: the loss-scale slider moves the histograms (${valueBefore} → ${scaleBefore === '0' ? '2¹²' : '2⁰'})`),
      () => ok(false, 'act II story: the loss-scale slider changes the shown scale'));
  await setRange('#grad-scale', scaleBefore);
  await page.waitForTimeout(200);
  await shot('act2-histograms.png', '#grad-histograms');

  // Item 3: the loss scale over the steps; fp32 has no scaler.
  ok(await page.locator('#loss-scale-chart').isVisible(), 'act II story: #loss-scale-chart is drawn after the duel');
  const fp32Scale = await text('#loss-scale-notes li[data-precision="fp32"]');
  const fp16Scale = await text('#loss-scale-notes li[data-precision="fp16"]');
  ok(/no loss scaler \(fixed at 1\)/.test(fp32Scale) && /loss scale 2/.test(fp16Scale), `act II story: the loss-scale notes (${fp32Scale} | ${fp16Scale})`);

  // Item 4: memory split by what holds it, and the batch-size slider.
  await page.locator('#memory-split').waitFor({ timeout: 20000 });
  const bars = await page.locator('#memory-split li[data-precision]').allInnerTexts();
  ok(bars.length === 2 && bars.every((b) => /sums to [0-9.]+ MB/.test(b)), `act II story: #memory-split has a bar per contestant (${bars.join(' | ')})`);
  ok(await page.locator('#memory-chart').isVisible(), 'act II story: the measured split is drawn as stacked bars');
  const memText = await text('#memory-sentences');
  ok(/at batch 128/.test(memText), `act II story: the memory sentences (${memText.split('\n')[0]})`);
  const before = await text('#memory-sentence');
  const max = await page.$eval('#memory-batch', (e) => e.max);
  await setRange('#memory-batch', max);
  await page.waitForFunction((b) => document.querySelector('#memory-sentence')?.textContent.trim() !== b, before, { timeout: 10000 })
    .then(() => true, () => false);
  const after = await text('#memory-sentence');
  ok(after !== before && /At batch 60000/.test(after) && /FP16 saves/.test(after), `act II story: moving #memory-batch recomputes the split (${after})`);
  await page.selectOption('#memory-data', 'mnist');
  await page.waitForFunction(() => /60000 training/.test(document.querySelector('#memory-sentence')?.textContent || ''), null, { timeout: 10000 })
    .then(() => ok(true, 'act II story: the slider computes for the whole of MNIST too'), () => ok(false, 'act II story: #memory-data switches to MNIST'));
  await shot('act2-memory.png', '#memory-split');

  // The run history opens the duel just run with the same panels, under history- ids, beside
  // the live duel's (which keep theirs).
  await page.locator('#duel-saved').waitFor({ timeout: 20000 }).catch(() => {});
  const savedNote = (await page.locator('#duel-saved').innerText().catch(() => '')).trim();
  const savedId = (savedNote.match(/^Saved to the run history as (\S+)\.$/) || [])[1];
  ok(!!savedId, `act II story: the duel is saved to the run history (${savedNote})`);
  const historyRow = savedId
    ? page.locator(`#run-history #history-table tbody tr[data-run="${savedId}"]`)
    : page.locator('#run-history #history-table tbody tr').first();
  await historyRow.waitFor({ timeout: 20000 });
  await historyRow.locator('button.run-show').click();
  await page.locator('#history-run-table tbody tr').first().waitFor({ timeout: 20000 });
  ok((await page.locator('#history-story-missing').count()) === 0, 'act II story: the saved duel is not said to predate the histograms');
  await page.locator('#history-grad-histograms canvas').first().waitFor({ timeout: 20000 });
  const historyDrawn = await page.waitForFunction((sel) => {
    const c = document.querySelector(sel);
    if (!c) return false;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let coloured = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) coloured += 1;
    }
    return coloured > 100 ? coloured : false;
  }, '#history-grad-histograms canvas', { timeout: 20000 }).then((h) => h.jsonValue(), () => 0);
  ok(historyDrawn > 100, `act II story: the saved duel's first histogram is drawn in #history-grad-histograms (${historyDrawn} coloured pixels)`);
  const historyPanels = await page.locator('#history-grad-histograms figure.grad-panel').count();
  ok(historyPanels === 6, `act II story: #history-grad-histograms has a panel per layer and kind (${historyPanels})`);
  const historyUnderflow = await text('#history-grad-underflow');
  ok(/\d/.test(historyUnderflow) && /flush to zero/.test(historyUnderflow), `act II story: #history-grad-underflow counts the values FP16 would flush (${historyUnderflow})`);
  ok(historyUnderflow === underflow, 'act II story: the saved duel\'s #history-grad-underflow reads as the live #grad-underflow');
  ok(await page.locator('#history-loss-scale-chart').isVisible(), 'act II story: #history-loss-scale-chart is drawn from the saved scale history');
  const historyFp16Scale = await text('#history-loss-scale-notes li[data-precision="fp16"]');
  ok(/loss scale 2/.test(historyFp16Scale), `act II story: the saved duel's loss-scale notes (${historyFp16Scale})`);
  await page.locator('#history-memory-split').waitFor({ timeout: 20000 });
  const historyBars = await page.locator('#history-memory-split li[data-precision]').allInnerTexts();
  ok(historyBars.length === 2 && historyBars.every((b) => /sums to [0-9.]+ MB/.test(b)), `act II story: #history-memory-split has a line per contestant (${historyBars.join(' | ')})`);
  ok(await page.locator('#history-memory-chart').isVisible(), 'act II story: the saved duel\'s measured split is drawn as stacked bars');
  const duplicates = await page.evaluate(() => {
    const seen = new Map();
    for (const e of document.querySelectorAll('[id]')) {
      if (/^(history-)?(grad|loss-scale|memory)-/.test(e.id)) seen.set(e.id, (seen.get(e.id) || 0) + 1);
    }
    return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
  });
  ok(duplicates.length === 0 && (await page.locator('#grad-histograms').count()) === 1 && (await page.locator('#memory-split').count()) === 1,
    `act II story: the live and the saved duel's panels share no element id (${duplicates.join(', ') || 'none twice'})`);
}

module.exports = { run };
