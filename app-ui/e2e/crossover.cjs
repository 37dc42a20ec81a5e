// Browser e2e steps for issue 39, "When does each precision pay?" at the end of Act II: the
// precision crossover run live on this machine (small sizes: the CPU sweep where there is no
// GPU), its chart drawn and its sentence said; a second, larger run cancelled within a second;
// the first reopened from the run history with its chart. Called by browser.cjs:
//
//   await require('./crossover.cjs').run(page, { ok, base, shots });
'use strict';

const path = require('node:path');

/// Pixels of `selector`'s canvas that are not white or grey (ink of a colour).
async function colouredInk(page, selector) {
  return page.evaluate((sel) => {
    const c = document.querySelector(sel);
    if (!c || c.width === 0) return 0;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const [r, g, b] = [d[i], d[i + 1], d[i + 2]];
      if (Math.max(r, g, b) - Math.min(r, g, b) > 60) n += 1;
    }
    return n;
  }, selector);
}

async function run(page, { ok, base, shots }) {
  const text = async (sel) => ((await page.locator(sel).first().innerText().catch(() => '')) || '').replace(/\s+/g, ' ').trim();
  await page.goto(`${base}#/duel`);
  const runButton = page.locator('#crossover-run');
  await runButton.waitFor({ timeout: 30000 });
  await page.waitForFunction(() => {
    const b = document.querySelector('#crossover-run');
    return b && !b.disabled;
  }, null, { timeout: 60000 });
  ok((await text('#lab-crossover h3')) === 'When does each precision pay?', 'crossover: Act II ends on "When does each precision pay?"');

  // --- A live run at small sizes, every precision ticked (the CPU skips TF32 and FP8, saying why).
  await page.fill('#crossover-sizes', '32,64,128');
  for (const p of ['fp32', 'tf32', 'bf16', 'fp16', 'fp8']) {
    const box = page.locator(`#crossover-precision-${p}`);
    if (!(await box.isChecked())) await box.click();
  }
  if (!(await page.locator('#crossover-cnn-cnn').isChecked())) await page.click('#crossover-cnn-cnn');
  await page.click('#crossover-run');
  const progress = await page.waitForFunction(() => {
    const t = document.querySelector('#lab-crossover #lab-progress')?.textContent || '';
    return /of \d+ done|done/.test(t) ? t : false;
  }, null, { timeout: 60000 }).then((h) => h.jsonValue(), () => '');
  ok(/done/.test(progress), `crossover: the run streams its progress (${progress})`);
  await page.locator('#crossover-result.lab-result[data-saved-run]').waitFor({ timeout: 240000 });
  const firstId = await page.locator('#crossover-result').getAttribute('data-saved-run');
  ok(/^lab-/.test(firstId || ''), `crossover: the run is kept in the run history (${firstId})`);
  const measured = await text('#crossover-result p.measured-on');
  ok(/^Measured on .+, this machine on \d{4}-\d\d-\d\d \(UTC\) \((cpu|cuda) backend; .+\): \d+ points, \d+ timed runs/.test(measured),
    `crossover: the result names the device, the date and the run count (${measured.slice(0, 200)})`);
  const ceilings = await text('#crossover-result p.crossover-ceilings');
  ok(/copy [0-9.]+ GB\/s; a call's fixed cost [0-9.]+ (µs|ms); best rates .*(TFLOP|GFLOP)\/s/.test(ceilings), `crossover: the ceilings carry their units (${ceilings})`);
  const sentences = await page.locator('#crossover-result ul.crossover-sentence li').allInnerTexts();
  ok(sentences.length >= 1 && sentences.every((s) => /^On this .+, (FP16|BF16|FP8|TF32) (pays over|never pays)/.test(s)),
    `crossover: the sentences are written from the numbers and name the device (${sentences.join(' | ').slice(0, 300)})`);
  ok(sentences.some((s) => /lab CNN's largest GEMM, conv2 (fwd|dgrad) \d+×\d+×\d+ at batch 128/.test(s)),
    `crossover: a sentence places the CNN's largest GEMM (${sentences[0] || ''})`);
  const checks = await text('#crossover-result p.checks-summary');
  const m = /^(\d+) of (\d+) points pass their f64 check\.$/.exec(checks);
  ok(m && m[1] === m[2] && Number(m[2]) > 0, `crossover: every point passes its f64 check (${checks})`);
  await page.locator('#crossover-result canvas#crossover-chart').waitFor({ timeout: 20000 });
  const ink = await colouredInk(page, '#crossover-result canvas#crossover-chart');
  ok(ink > 500, `crossover: the TFLOP/s chart is drawn (${ink} coloured pixels)`);
  ok((await page.locator('#crossover-result canvas#crossover-speedup').count()) === 1, 'crossover: the speed-up chart is there');
  // Hover: a point's title carries its values and units (the pointer swept over the canvas
  // in the page, the canvas's title read after each move).
  const hover = await page.evaluate(() => {
    const c = document.querySelector('#crossover-result canvas#crossover-chart');
    if (!c) return '';
    const r = c.getBoundingClientRect();
    for (let y = 0; y < r.height; y += 3) {
      for (let x = 0; x < r.width; x += 3) {
        c.dispatchEvent(new MouseEvent('mousemove', { clientX: r.left + x, clientY: r.top + y, bubbles: true }));
        const t = c.getAttribute('title') || '';
        if (/FLOP\/s/.test(t)) return t;
      }
    }
    return c.getAttribute('title') || '';
  });
  ok(/(TFLOP|GFLOP)\/s/.test(hover) && /(µs|ms)/.test(hover) && /f64 check/.test(hover), `crossover: hovering a point reads its values with units (${hover.slice(0, 160)})`);
  const rows = await page.locator('#crossover-table tbody tr').count();
  ok(rows >= 9, `crossover: the table has a row per size and precision (${rows})`);
  const cnnRows = await page.locator('#crossover-cnn-table tbody tr').count();
  ok(cnnRows >= 8, `crossover: the CNN's GEMMs are labelled points (${cnnRows} rows)`);
  const skipped = await text('#crossover-skipped');
  const gpu = /cuda backend/.test(measured);
  ok(gpu || (/TF32 skipped: the CPU has no TF32/.test(skipped) && /FP8 skipped: the CPU has no FP8/.test(skipped)),
    `crossover: what this machine cannot run is skipped with the reason (${skipped.slice(0, 200)})`);
  await page.locator('#lab-crossover').screenshot({ path: path.join(shots, 'act2-crossover.png') }).catch(() => {});

  // --- A second, larger run, cancelled: it stops within a second.
  await page.fill('#crossover-sizes', '2048,4096');
  for (const p of ['tf32', 'bf16', 'fp16', 'fp8']) {
    const b = page.locator(`#crossover-precision-${p}`);
    if (await b.isChecked()) await b.click();
  }
  await page.click('#crossover-cnn-cnn');
  await page.click('#crossover-run');
  await page.waitForFunction(() => /N = (2048|4096)/.test(document.querySelector('#lab-crossover #lab-progress')?.textContent || ''), null, { timeout: 60000 }).catch(() => {});
  await page.waitForTimeout(300);
  const clicked = Date.now();
  await page.click('#crossover-cancel');
  const stopped = await page.waitForFunction(() => {
    const e = document.querySelector('#lab-crossover .lab-error')?.textContent || '';
    return /Cancelled/.test(e) ? e : false;
  }, null, { timeout: 20000 }).then((h) => h.jsonValue(), () => '');
  const took = Date.now() - clicked;
  ok(/Cancelled: the job stopped before its result/.test(stopped) && took < 1000,
    `crossover: Cancel stops the second run within a second (${took} ms: ${stopped})`);
  ok((await page.locator('#crossover-result').getAttribute('data-saved-run')) === firstId,
    'crossover: the cancelled run leaves the first run\'s result in place');
  await page.waitForFunction(() => {
    const b = document.querySelector('#crossover-run');
    return b && !b.disabled;
  }, null, { timeout: 20000 }).catch(() => {});

  // --- The first run reopened from the run history, with its chart.
  const row = page.locator(`#lab-runs tr[data-lab-run="${firstId}"]`);
  await row.waitFor({ timeout: 30000 });
  ok((await row.getAttribute('data-kind')) === 'crossover', 'crossover: the run history lists it as a precision crossover');
  const headline = (await row.locator('td').nth(2).innerText()).trim();
  ok(/point\(s\), \d+\/\d+ checks pass; pays:/.test(headline), `crossover: its headline (${headline})`);
  await row.locator('button.lab-open').click();
  await page.locator('#lab-run-report .lab-run-drawn canvas#crossover-chart').waitFor({ timeout: 20000 });
  const reopenedInk = await colouredInk(page, '#lab-run-report .lab-run-drawn canvas#crossover-chart');
  ok(reopenedInk > 500, `crossover: the reopened run draws its chart (${reopenedInk} coloured pixels)`);
  const reopened = await page.locator('#lab-run-report ul.crossover-sentence li').allInnerTexts();
  ok(reopened.join('|') === sentences.join('|'), `crossover: the reopened run says the same sentences (${reopened.length})`);
  const savedOn = await text('#lab-run-report p.measured-on');
  ok(new RegExp(`saved .* as ${firstId} in the run history`).test(savedOn), `crossover: the reopened run names its date and ID (${savedOn.slice(0, 160)})`);
}

module.exports = { run };
