// Act I, inside the network (issue 16): a digit chosen in the data-set grid goes through the
// chosen models; every layer is drawn (32 conv1 maps, 64 conv2 maps...), a conv2 map opens
// enlarged, the convolution at a clicked pixel sums to the map's value, the dense sum to the
// logit, and a digit drawn on the pad is centred and predicted.
//
// Called by browser.cjs: run(page, { ok, base, shots }), `base` the app's address with
// `?token=...` and no hash, `ok(cond, what)` records a check, `shots` the screenshot folder.
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const LAYERS = ['input', 'conv1', 'pool1', 'conv2', 'pool2', 'logits', 'softmax'];
const MAPS = { input: 1, conv1: 32, pool1: 32, conv2: 64, pool2: 64 };

// Waits until #inside shows the report for `key` (true) or the forward pass failed (false).
async function reportFor(page, key, timeout = 90000) {
  await page.waitForFunction((k) => {
    const inside = document.querySelector('#inside');
    const matches = typeof k === 'string' ? inside?.dataset.source === k : new RegExp(k.re).test(inside?.dataset.source || '');
    return matches || (!document.querySelector('#inside-busy') && document.querySelector('#inside-error'));
  }, key, { timeout });
  const source = await page.locator('#inside').getAttribute('data-source');
  return typeof key === 'string' ? source === key : new RegExp(key.re).test(source || '');
}

async function errorText(page) {
  return (await page.locator('#inside-error').count()) ? (await page.locator('#inside-error').innerText()).trim() : '';
}

async function run(page, { ok, base, shots }) {
  const shot = async (name) => {
    const file = path.join(shots, name);
    await page.screenshot({ path: file });
    ok(fs.statSync(file).size > 1000, `screenshot ${file}`);
  };
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto(`${base}#/setup`);

  // The grid, and a click on its sixth digit.
  await page.waitForFunction(() => (document.querySelector('#digit-grid')?.dataset.labels || '').split(',').length === 64, null, { timeout: 30000 });
  const grid = page.locator('#digit-grid');
  const g = await grid.evaluate((c) => ({
    cols: Number(c.dataset.columns), cw: Number(c.dataset.cellWidth), ch: Number(c.dataset.cellHeight),
    sx: c.clientWidth / c.width, sy: c.clientHeight / c.height, labels: c.dataset.labels.split(','),
  }));
  const i = 5;
  await grid.click({ position: { x: ((i % g.cols) + 0.5) * g.cw * g.sx, y: (Math.floor(i / g.cols) + 0.5) * g.ch * g.sy } });
  const key = await grid.getAttribute('data-selected');
  ok(/^[a-z-]+\/test\/5$/.test(key || ''), `act I inside: clicking the sixth digit of the grid chooses it (${key})`);
  const shown = await reportFor(page, key);
  ok(shown, `act I inside: the forward pass of ${key} is shown${shown ? '' : `: ${await errorText(page)}`}`);
  if (!shown) return;

  // Every layer, for every model.
  for (const l of LAYERS) ok((await page.locator(`#inside-layer-${l}`).count()) === 1, `act I inside: the ${l} block`);
  const precisions = await page.$$eval('#inside-compare [id^="inside-prediction-"]', (els) => els.map((e) => e.id.replace('inside-prediction-', '')));
  ok(precisions.length >= 1, `act I inside: predictions for ${precisions.join(', ')} (${(await page.locator('#inside-source').innerText()).trim()})`);
  ok(precisions.includes('fp32') || precisions.length === 1, 'act I inside: the FP32 model is shown when the run kept it');
  const label = g.labels[i];
  for (const p of precisions) {
    const text = (await page.locator(`#inside-prediction-${p}`).innerText()).trim();
    ok(/^prediction: \S+ \(\d{1,3}\.\d %\)$/.test(text), `act I inside: ${p} ${text} (label ${label})`);
    const counts = {};
    for (const [l, n] of Object.entries(MAPS)) {
      counts[l] = await page.locator(`#inside-layer-${l} canvas.fmap[data-precision="${p}"]`).count();
      ok(counts[l] === n, `act I inside: ${p} ${l} has ${counts[l]} maps (${n} wanted)`);
    }
    ok((await page.locator(`#inside-logits-${p} .bar-row`).count()) === 10 && (await page.locator(`#inside-softmax-${p} .bar-row`).count()) === 10,
      `act I inside: ${p} logits and softmax as 10 bars each`);
  }
  const painted = await page.evaluate(() => [...document.querySelectorAll('#inside-layer-conv1 canvas.fmap')].filter((c) => {
    if (c.width !== 26 || c.height !== 26) return false;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let k = 0; k < d.length; k += 4) if (d[k] < 245 || d[k + 1] < 245 || d[k + 2] < 245) return true;
    return false;
  }).length);
  ok(painted >= 16, `act I inside: the conv1 maps are drawn as 26x26 heat maps (${painted} coloured)`);
  const agreement = (await page.locator('#inside-agreement').innerText()).trim();
  ok(agreement.length > 0, `act I inside: ${agreement}`);
  if (precisions.length >= 2) {
    ok((await page.locator('#inside-diff-table tbody tr').count()) >= 7, 'act I inside: where the two models differ, layer by layer');
  }
  await page.locator('#inside').evaluate((e) => e.scrollIntoView());
  await shot('act1-inside.png');

  // A conv2 map enlarged; the convolution at a pixel sums to the map's value.
  const p0 = precisions[0];
  await page.locator(`#inside-layer-conv2 canvas.fmap[data-precision="${p0}"][data-channel="3"]`).click();
  const focus = page.locator('#inside-focus');
  await focus.waitFor({ timeout: 10000 });
  ok((await focus.getAttribute('data-layer')) === 'conv2' && (await focus.getAttribute('data-channel')) === '3',
    'act I inside: clicking conv2 map 3 enlarges it');
  ok((await page.locator('#inside-focus .pair').count()) === 32, 'act I inside: beside its 32 pool1 input maps and their 3x3 filters');
  const map = page.locator('#inside-focus-map');
  const zoom = Number(await map.getAttribute('data-zoom'));
  await map.click({ position: { x: 4.5 * zoom, y: 3.5 * zoom } });
  await page.locator('#conv-at[data-y="3"][data-x="4"]').waitFor({ timeout: 10000 });
  const sum = (await page.locator('#conv-at-sum').innerText()).trim();
  const value = (await page.locator('#conv-at-map-value').innerText()).trim();
  ok(/^-?\d/.test(sum) && sum === value, `act I inside: conv2[3] at (3, 4): inputs x weights + bias = ${sum}, the map says ${value}`);
  ok((await page.locator('#conv-at-terms > tbody > tr').count()) === 32, 'act I inside: the 288 products, 9 per input map');
  ok(/wins|drops/.test(await page.locator('#conv-at-pool').innerText()), 'act I inside: which pixel of the 2x2 pool window wins');
  // The pointer leaves the map (the clicked pixel stays chosen) before the page scrolls.
  await page.mouse.move(1, 1);
  await focus.evaluate((e) => e.scrollIntoView());
  ok((await page.locator('#conv-at').getAttribute('data-y')) === '3', 'act I inside: the clicked pixel stays chosen when the pointer leaves');
  await shot('act1-conv-at.png');

  // The dense sum behind the predicted class's logit.
  const predicted = await page.locator(`#inside-prediction-${p0}`).getAttribute('data-class');
  await page.locator(`#inside-logits-${p0} .bar-row[data-class="${predicted}"]`).click();
  await page.locator('#dense-at').waitFor({ timeout: 10000 });
  const stored = (await page.locator('#dense-at-stored').innerText()).trim();
  const logit = (await page.locator('#dense-at-logit').innerText()).trim();
  ok(stored === logit, `act I inside: the dense layer's sum for class ${predicted} is the logit (${stored} = ${logit})`);

  // Drawing: an empty pad is refused; a stroke is centred and predicted.
  await page.locator('#draw-pad').scrollIntoViewIfNeeded();
  await page.click('#draw-clear');
  await page.click('#draw-run');
  ok((await page.locator('#draw-error').count()) === 1, 'act I inside: running an empty pad asks for a drawing');
  const pad = await page.locator('#draw-pad').boundingBox();
  await page.mouse.move(pad.x + pad.width * 0.45, pad.y + pad.height * 0.2);
  await page.mouse.down();
  await page.mouse.move(pad.x + pad.width * 0.55, pad.y + pad.height * 0.2, { steps: 4 });
  await page.mouse.move(pad.x + pad.width * 0.5, pad.y + pad.height * 0.8, { steps: 15 });
  await page.mouse.up();
  await page.click('#draw-run');
  const drawn = await reportFor(page, { re: '^drawn/' });
  ok(drawn, `act I inside: the drawing goes through the network${drawn ? '' : `: ${await errorText(page)}`}`);
  if (!drawn) return;
  const drawnPrediction = (await page.locator(`#inside-prediction-${p0}`).innerText()).trim();
  const ink = await page.locator('#inside-digit').evaluate((c) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let k = 0; k < d.length; k += 4) if (d[k] > 127) n += 1;
    return { n, w: c.width, h: c.height };
  });
  ok(ink.w === 28 && ink.h === 28 && ink.n > 10, `act I inside: the centred 28x28 digit the models saw is shown (${ink.n} ink pixels); ${drawnPrediction}`);
  // The drawing gets every layer's maps and a prediction from every model, as a chosen digit does.
  for (const p of precisions) {
    const counts = [];
    for (const [l, n] of Object.entries(MAPS)) {
      counts.push((await page.locator(`#inside-layer-${l} canvas.fmap[data-precision="${p}"]`).count()) === n);
    }
    const text = (await page.locator(`#inside-prediction-${p}`).innerText()).trim();
    ok(counts.every(Boolean) && /^prediction: \S+ \(\d{1,3}\.\d %\)$/.test(text) && (await page.locator(`#inside-softmax-${p} .bar-row`).count()) === 10,
      `act I inside: the drawing's ${p} layers (1, 32, 32, 64, 64 maps, logits, softmax) and ${text}`);
  }
}

module.exports = { run };
