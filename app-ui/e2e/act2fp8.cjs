// Act II with FP8 (issue 28, "the fifth contestant"): a short CPU duel of fp32 and fp8 trains
// FP8 emulated on the CPU, and the page says so (`#fp8-engine`); the result table has an fp8
// row; FP8's story (`#fp8-story`) draws every cast tensor's scale over training
// (`#fp8-scale-chart`), lists the six tensors at a sampled step (`#fp8-tensors`: at step 1 every
// tensor is cast at scale 1, later the gradients' E5M2 scales are far above it), and draws each
// tensor's values before the cast against its format's range at its own scale
// (`#fp8-histograms`), with a switch that draws E4M3 for the gradients (more would flush); the
// run history's reopened run shows the same story.
//
// Called by browser.cjs: run(page, { ok, base, shots }).
'use strict';

const path = require('node:path');

async function run(page, { ok, base, shots }) {
  const text = async (sel) => ((await page.locator(sel).first().innerText().catch(() => '')) || '').replace(/\s+/g, ' ').trim();
  // The text of what is on the page now, '' at once when it is absent (an error that should not
  // be there): `innerText` would wait its 30 s for it to appear.
  const shown = async (sel) => ((await page.locator(sel).count()) ? text(sel) : '');
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${base}#/duel`);
  await page.locator('#run-duel').waitFor({ timeout: 30000 });
  await page.waitForFunction(() => {
    const b = document.querySelector('#run-duel');
    return b && !b.disabled;
  }, null, { timeout: 60000 });

  const fp8Box = page.locator('#prec-fp8');
  ok(await fp8Box.count() === 1, 'act2fp8: fp8 is offered as a contestant');
  for (const p of ['fp32', 'fp16', 'tf32', 'bf16', 'fp8']) {
    const want = p === 'fp32' || p === 'fp8';
    const b = page.locator(`#prec-${p}`);
    if ((await b.isChecked()) !== want) await (want ? b.check() : b.uncheck());
  }
  await page.selectOption('#backend', 'cpu');
  await page.selectOption('#dataset', 'mnist-sample');
  await page.selectOption('#activation', 'relu');
  await page.selectOption('#fp8-scaling', 'delayed');
  await page.fill('#train-limit', '1024');
  await page.fill('#epochs', '2');
  await page.fill('#batch', '64');
  await page.click('#run-duel');
  await page.waitForFunction(() => !!document.querySelector('#duel-saved') || !!document.querySelector('#duel-error'),
    null, { timeout: 240000 }).catch(() => {});
  const failed = await shown('#duel-error');
  ok(!failed, `act2fp8: the fp32 + fp8 duel finished without an error ${failed ? `(${failed})` : ''}`);

  const fp8Row = await text('#result-table tbody tr[data-precision="fp8"]');
  const acc = parseFloat((fp8Row.match(/(\d+(?:\.\d+)?) %/) || [])[1] || 'NaN');
  ok(acc > 60 && /fp8 \(emulated\)/.test(fp8Row) && /none; a scale per tensor/.test(fp8Row),
    `act2fp8: the result table has an fp8 row, marked emulated, with its accuracy (${fp8Row.slice(0, 160)})`);

  await page.locator('#fp8-story').waitFor({ timeout: 20000 }).catch(() => {});
  const engine = await text('#fp8-engine');
  ok(/emulated on the CPU/.test(engine) && /E4M3\/E5M2/.test(engine) && /delayed scaling/.test(engine),
    `act2fp8: the page says FP8 ran emulated on the CPU, and the recipe (${engine.slice(0, 160)}…)`);
  const summary = await text('#fp8-summary');
  ok(/^FP8 \(emulated; delayed\): 32 step\(s\), [\d,]+ saturated and [\d,]+ flushed to zero of [\d,]+ nonzero values cast/.test(summary),
    `act2fp8: the summary counts saturated and flushed values over 32 steps (${summary})`);
  const memory = await text('#fp8-memory');
  ok(/at batch 64 at one byte per element/.test(memory) && /FP32/.test(memory),
    `act2fp8: the memory note says what FP8 storage of the cast tensors holds (${memory.slice(0, 140)}…)`);

  // The scale chart is drawn: many coloured pixels on the canvas.
  const inked = await page.locator('#fp8-scale-chart').evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const [r, g, b] = [d[i], d[i + 1], d[i + 2]];
      if (Math.max(r, g, b) - Math.min(r, g, b) > 60) n += 1;
    }
    return n;
  }).catch(() => 0);
  ok(inked > 500, `act2fp8: the scale chart draws the six tensors' lines (${inked} coloured pixels)`);

  // The tensor table at the last sampled step: six tensors, the gradients at large E5M2 scales.
  const rows = async () => page.$$eval('#fp8-tensors tbody tr', (trs) => trs.map((tr) => ({
    tensor: tr.dataset.tensor,
    cells: [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()),
  })));
  const exp = (s) => {
    const sup = { '⁰': 0, '¹': 1, '²': 2, '³': 3, '⁴': 4, '⁵': 5, '⁶': 6, '⁷': 7, '⁸': 8, '⁹': 9 };
    const m = /^2(⁻?)([⁰¹²³⁴⁵⁶⁷⁸⁹]+)$/.exec(s || '');
    if (!m) return NaN;
    const v = [...m[2]].reduce((a, c) => a * 10 + sup[c], 0);
    return m[1] ? -v : v;
  };
  let last = await rows();
  ok(last.length === 6, `act2fp8: the table lists the six cast tensors (${last.map((r) => r.tensor).join(', ')})`);
  const g1 = last.find((r) => r.tensor === 'conv1.grad_output');
  ok(!!g1 && g1.cells[1] === 'E5M2' && exp(g1.cells[2]) >= 10,
    `act2fp8: at the last sampled step conv1's output gradient is E5M2 at a scale far above 1 (${g1 ? g1.cells.slice(1, 3).join(' ') : 'no row'})`);
  const w2 = last.find((r) => r.tensor === 'conv2.weight');
  ok(!!w2 && w2.cells[1] === 'E4M3' && exp(w2.cells[2]) > 0, `act2fp8: conv2's weights are E4M3 at their own scale (${w2 ? w2.cells.slice(1, 3).join(' ') : 'no row'})`);

  // The slider's first sample is step 1: every tensor cast at scale 1 (no amax history yet).
  await page.locator('#fp8-step').evaluate((el) => {
    el.value = '0';
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await page.waitForFunction(() => /epoch 1 step 1$/.test(document.querySelector('#fp8-step-value')?.textContent || ''), null, { timeout: 10000 }).catch(() => {});
  // (the timed epoch 2's sample keeps scales and counts only: checked at the end)
  ok(/epoch 1 step 1$/.test(await text('#fp8-step-value')), `act2fp8: the slider goes to the first sampled step (${await text('#fp8-step-value')})`);
  const first = await rows();
  const scales1 = first.map((r) => exp(r.cells[2]));
  ok(first.length === 6 && scales1.every((e) => e === 0), `act2fp8: at step 1 every tensor is cast at scale 2⁰ (${scales1.join(', ')})`);
  const g1first = first.find((r) => r.tensor === 'conv1.grad_output');
  const flushed1 = parseInt(((g1first && g1first.cells[8]) || '').replace(/,/g, ''), 10);
  ok(flushed1 > 0, `act2fp8: at scale 1 some of conv1's output gradients flush to zero in E5M2 (${g1first ? g1first.cells[8] : 'no row'})`);

  // The histograms: one per tensor, each against its own format at its scale.
  const panels = page.locator('#fp8-histograms figure.fp8-panel');
  ok(await panels.count() === 6, `act2fp8: six histograms, one per cast tensor (${await panels.count()})`);
  const grad = page.locator('#fp8-histograms figure.fp8-panel[data-tensor="conv1.grad_output"]');
  ok((await grad.getAttribute('data-format')) === 'E5M2', 'act2fp8: the gradient is drawn against E5M2, its format');
  const flushOf = (s) => parseInt(((s.match(/, ([\d,]+) \([\d.]+ %\) flush to zero/) || [])[1] || 'NaN').replace(/,/g, ''), 10);
  const e5 = await grad.locator('figcaption').innerText();
  await page.selectOption('#fp8-format', 'e4m3');
  await page.waitForFunction(() => document.querySelector('#fp8-histograms figure.fp8-panel[data-tensor="conv1.grad_output"]')?.dataset.format === 'E4M3', null, { timeout: 10000 }).catch(() => {});
  const e4 = await grad.locator('figcaption').innerText();
  ok(/not its format/.test(e4) && flushOf(e4) > flushOf(e5),
    `act2fp8: drawn against E4M3 the gradient would flush more (${flushOf(e4)} against ${flushOf(e5)} in E5M2)`);
  await page.selectOption('#fp8-format', 'own');
  // The last sample (the end of timed epoch 2) has the scales but no histograms, and says so.
  await page.locator('#fp8-step').evaluate((el) => {
    el.value = el.max;
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await page.waitForFunction(() => /epoch 2 step/.test(document.querySelector('#fp8-step-value')?.textContent || ''), null, { timeout: 10000 }).catch(() => {});
  const lastLabel = await text('#fp8-step-value');
  ok(/^epoch 2 step 16 \(scales and counts only/.test(lastLabel) && (await rows()).length === 6,
    `act2fp8: the timed epoch's sample shows the six tensors' scales and says it kept no histograms (${lastLabel})`);
  await page.locator('#fp8-step').evaluate((el) => {
    el.value = '0';
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });

  await page.locator('#fp8-story').evaluate((el) => {
    el.scrollIntoView({ block: 'start' });
    window.scrollBy(0, -8);
  });
  await page.screenshot({ path: path.join(shots, 'act2-fp8.png') });
  ok(true, `act2fp8: screenshot ${path.join(shots, 'act2-fp8.png')}`);
  await page.locator('#fp8-histograms').evaluate((el) => el.scrollIntoView({ block: 'start' }));
  await page.screenshot({ path: path.join(shots, 'act2-fp8-histograms.png') });

  // The saved run reopens with FP8's story.
  const savedId = ((await text('#duel-saved')).match(/as (\S+)\.$/) || [])[1];
  const row = page.locator(`#run-history #history-table tbody tr[data-run="${savedId}"]`);
  await row.waitFor({ timeout: 20000 }).catch(() => {});
  await row.locator('button.run-show').click().catch(() => {});
  await page.locator('#history-fp8-story').waitFor({ timeout: 20000 }).catch(() => {});
  const savedEngine = await text('#history-fp8-engine');
  const savedRows = await page.locator('#history-fp8-tensors tbody tr').count();
  ok(/emulated on the CPU/.test(savedEngine) && savedRows === 6,
    `act2fp8: the reopened run ${savedId} shows FP8's story (${savedRows} tensors)`);

  // The verdict and the walk say what FP8 did.
  await page.click('nav a[href="#/verdict"]');
  await page.locator('#verdict-headline').waitFor({ timeout: 30000 }).catch(() => {});
  const verdict = await text('#verdict-fp8');
  ok(/^FP8 \(emulated; delayed\): 32 step\(s\)/.test(verdict) && /emulated on the CPU/.test(verdict),
    `act2fp8: the verdict says what FP8 did (${verdict.slice(0, 140)}…)`);

  // Act I shows the FP8-trained model beside the FP32 one on a digit, layer by layer.
  await page.goto(`${base}#/setup`);
  // The newest duel kept fp32 and fp8: both are offered, and fp8 is ticked beside fp32 without
  // a click (the page's default fp32 + fp16 must not shrink to fp32 alone).
  // Until the run list is in, every precision is offered (fp32 + fp16 ticked): wait for the
  // boxes of the newest run, which offers no fp16.
  await page.locator('#inside-prec-fp8').waitFor({ timeout: 60000 }).catch(() => {});
  await page.waitForFunction(() => !document.querySelector('#inside-prec-fp16')
    && !!document.querySelector('#inside-prec-fp8'), null, { timeout: 30000 }).catch(() => {});
  const ticked = await page.locator('#inside-prec-fp8').isChecked().catch(() => false);
  ok(ticked && await page.locator('#inside-prec-fp32').isChecked().catch(() => false),
    'act2fp8: Act I ticks fp32 and fp8 for a run that kept fp32 and fp8');
  if (!ticked) await page.locator('#inside-prec-fp8').check();
  await page.waitForFunction(() => !!document.querySelector('#inside-prediction-fp8') || !!document.querySelector('#inside-error'),
    null, { timeout: 90000 }).catch(() => {});
  const models = await page.$$eval('#inside-compare [id^="inside-prediction-"]', (els) => els.map((e) => e.id.replace('inside-prediction-', '')));
  const fp8Maps = await page.locator('#inside-layer-conv1 canvas.fmap[data-precision="fp8"]').count();
  ok(models.includes('fp8') && models.includes('fp32') && fp8Maps === 32,
    `act2fp8: Act I compares the FP8 model with the FP32 one (${models.join(', ')}; ${fp8Maps} conv1 maps of fp8)`);
}

module.exports = { run };
