// Act I's model and data (issue 26): a Fashion-MNIST image is never run through a model trained
// on other images; with no Fashion model saved the page says so and offers a short duel, which
// trains one, and the image then shows Fashion's class names and its right label. The digit
// grid is reached and used from the keyboard, and the layer cards stay readable in the dark
// theme (contrast of each card's heading on its background, from getComputedStyle).
//
// Called by browser.cjs: run(page, { ok, shots }); `ok(cond, what)` records a check, `shots` is
// the screenshot folder. This part starts its own `showdown serve --http 127.0.0.1:0` (the
// binary and UI browser.cjs uses: SHOWDOWN_BIN, UI_DIR) with a fresh data folder, so that no
// Fashion-trained model exists at first, and with Fashion-MNIST from
// app-ui/e2e/data/fashion-mnist (the first 1,000 train and 100 test images of the real set, cut
// by make_fashion_fixture.py; FASHION_FIXTURE overrides the folder), given to the server as
// SHOWDOWN_FASHION_MNIST_DIR the way browser.cjs gives its MNIST mirror.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const root = path.resolve(__dirname, '..', '..');
const bin = process.env.SHOWDOWN_BIN || path.resolve(root, 'target/release/showdown');
const uiDir = process.env.UI_DIR || path.resolve(root, 'app-ui/dist');
const fashionDir = process.env.FASHION_FIXTURE || path.join(__dirname, 'data', 'fashion-mnist');
const FASHION = ['T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat', 'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle boot'];

function startServer() {
  const tmp = (p) => fs.mkdtempSync(path.join(os.tmpdir(), p));
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['serve', '--http', '127.0.0.1:0', '--ui-dir', uiDir], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        SHOWDOWN_DATA_HOME: tmp('showdown-e2e-act1-'),
        XDG_DATA_HOME: tmp('showdown-e2e-act1-xdg-'),
        SHOWDOWN_FASHION_MNIST_DIR: fashionDir,
      },
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

// WCAG's contrast ratio of two CSS colours (rgb()/rgba() as getComputedStyle gives them).
function contrast(a, b) {
  const lum = (c) => {
    const [r, g, bl] = c.match(/[\d.]+/g).slice(0, 3).map(Number).map((v) => {
      const s = v / 255;
      return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

// Each layer card's background (its own, or the first opaque one behind it) and the colours of
// its heading, shape and description.
const cardColours = (page) => page.$$eval('#inside .inside-layer', (cards) => cards.map((card) => {
  let bg = 'rgb(255, 255, 255)';
  for (let e = card; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (!/rgba\(.*, 0\)$/.test(c) && c !== 'transparent') { bg = c; break; }
  }
  const colour = (sel) => { const e = card.querySelector(sel); return e ? getComputedStyle(e).color : null; };
  return { layer: card.dataset.layer, bg, heading: colour('.inside-layer-head b'), shape: colour('.inside-layer-head .shape'), what: colour('.inside-layer-head .what') };
}));

// The class names on bars (their own text, without the " ← label" mark).
const barNames = (els) => els.map((e) => [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim());

async function run(page, { ok, shots }) {
  const shot = async (name) => {
    const file = path.join(shots, name);
    await page.screenshot({ path: file });
    ok(fs.statSync(file).size > 1000, `screenshot ${file}`);
  };
  const text = async (sel) => ((await page.locator(sel).count()) ? (await page.locator(sel).first().innerText()).trim() : '');
  await page.setViewportSize({ width: 1280, height: 800 });
  const { child, url } = await startServer();
  try {
    // The history holds a model trained on the MNIST sample (as after a first duel), and none
    // trained on Fashion-MNIST.
    const seeded = await (await fetch(`${url}/api/call`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ op: 'duel', config: { backend: 'cpu', dataset: 'mnist-sample', epochs: 1, batch: 64, train_limit: 256, test_limit: 64 } }),
    })).json();
    const digitRun = seeded.saved_run || (seeded.ok && seeded.ok.saved_run);
    ok(/^\d{8}-/.test(digitRun || ''), `act I data: a digit model is saved first (${digitRun || JSON.stringify(seeded).slice(0, 160)})`);

    await page.goto(`${url}/#/setup`);
    await page.locator('#digit-dataset option[value="fashion-mnist"]').waitFor({ state: 'attached', timeout: 30000 });
    await page.selectOption('#digit-dataset', 'fashion-mnist');
    await page.waitForFunction(() => /^fashion-mnist test images 1–64 of 100/.test(document.querySelector('#digit-range')?.textContent || ''), null, { timeout: 30000 });
    const labels = (await page.locator('#digit-grid').getAttribute('data-labels')).split(',');
    ok(labels.length === 64 && labels[0] === 'Ankle boot' && labels.every((l) => FASHION.includes(l)), `act I data: the grid names Fashion-MNIST's classes (${labels.slice(0, 4).join(', ')} ...)`);

    // The keyboard: Tab reaches the grid, the arrows move a visible cursor whose label is read
    // out, Space and Enter choose.
    await page.focus('#digit-split');
    let reached = false;
    for (let k = 0; k < 8 && !reached; k += 1) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate(() => document.activeElement?.id === 'digit-grid');
    }
    ok(reached, 'act I keyboard: Tab reaches the digit grid');
    if (reached) {
      for (const key of ['ArrowRight', 'ArrowRight', 'ArrowDown']) await page.keyboard.press(key);
      const cursor = await page.locator('#digit-grid').getAttribute('data-cursor');
      const box = await page.locator('#digits .grid-cursor').boundingBox();
      const aria = (await page.locator('#digit-grid').getAttribute('aria-label')) || '';
      ok(cursor === '18' && box && box.width > 20 && box.height > 20, `act I keyboard: right, right, down moves a visible cursor to image 18 (${cursor}, ${box ? `${Math.round(box.width)}x${Math.round(box.height)}` : 'not shown'})`);
      ok(aria.includes('fashion-mnist test image 19 of 100') && aria.includes(labels[18]), `act I keyboard: the grid's aria-label names the image and its label (${aria})`);
      await page.locator('#digits').evaluate((e) => e.scrollIntoView());
      await shot('act1-keyboard.png');
      await page.keyboard.press(' ');
      await page.waitForFunction(() => document.querySelector('#digit-grid')?.dataset.selected === 'fashion-mnist/test/18', null, { timeout: 5000 }).catch(() => {});
      ok((await page.locator('#digit-grid').getAttribute('data-selected')) === 'fashion-mnist/test/18', 'act I keyboard: Space chooses the image under the cursor');
      await page.keyboard.press('Home');
      await page.keyboard.press('Enter');
    } else {
      const grid = page.locator('#digit-grid');
      const g = await grid.evaluate((c) => ({ cw: Number(c.dataset.cellWidth), ch: Number(c.dataset.cellHeight), sx: c.clientWidth / c.width, sy: c.clientHeight / c.height }));
      await grid.click({ position: { x: 0.5 * g.cw * g.sx, y: 0.5 * g.ch * g.sy } });
    }
    const key = 'fashion-mnist/test/0';
    await page.waitForFunction((k) => document.querySelector('#inside')?.dataset.source === k || document.querySelector('#inside-error'), key, { timeout: 60000 });
    ok((await page.locator('#inside').getAttribute('data-source')) === key, `act I data: the ankle boot (${key}) is run through the network ${await text('#inside-error')}`);

    // No Fashion model yet: the page says so, does not use the digit model, and offers one.
    const offer = page.locator('#inside-train');
    const offered = await offer.waitFor({ timeout: 20000 }).then(() => true, () => false);
    const noModel = await text('#inside-no-model');
    ok(offered && /fashion-mnist/.test(noModel) && (await offer.getAttribute('data-dataset')) === 'fashion-mnist',
      `act I data: without a Fashion-trained model the page offers to train one (${noModel.slice(0, 90)})`);
    const untrainedOn = await page.locator('#inside-trained-on').getAttribute('data-dataset');
    ok(untrainedOn === '' && !(await text('#inside-source')).includes(digitRun || '-'),
      `act I data: the digit model is not run on a Fashion image (${await text('#inside-trained-on')})`);
    const what = await text('#inside-digit-what');
    ok(what.includes('a fashion-mnist image labelled Ankle boot'), `act I data: the image is named with its own class name (${what})`);
    await page.locator('#inside-train-offer').evaluate((e) => e.scrollIntoView());
    await shot('act1-fashion-offer.png');

    // Train one from Act I (a short duel), then the image goes through it.
    if (offered) {
      await offer.click();
      await page.locator('#inside-train-done, #inside-train-error').first().waitFor({ timeout: 300000 });
      const done = await text('#inside-train-done');
      ok(/Trained on fashion-mnist and saved to the run history as \d{8}-/.test(done), `act I data: the short duel trains and saves a Fashion model (${done || await text('#inside-train-error')})`);
      await page.waitForFunction(() => document.querySelector('#inside-trained-on')?.dataset.dataset === 'fashion-mnist' && document.querySelector('#inside')?.dataset.source === 'fashion-mnist/test/0', null, { timeout: 60000 }).catch(() => {});
      ok((await page.locator('#inside-trained-on').getAttribute('data-dataset')) === 'fashion-mnist', `act I data: the page now shows the model trained on fashion-mnist (${await text('#inside-trained-on')})`);
      ok((await text('#inside-fit')) === "Trained on fashion-mnist, the image's own data set.", `act I data: it says which data set the model was trained on (${await text('#inside-fit')})`);
      ok((await page.locator('#inside-train').count()) === 0, 'act I data: the offer is gone once a Fashion model exists');
      const precisions = await page.$$eval('#inside-compare [id^="inside-prediction-"]', (els) => els.map((e) => e.id.replace('inside-prediction-', '')));
      ok(precisions.length === 2, `act I data: the short duel's models side by side (${precisions.join(', ')})`);
      for (const p of precisions) {
        const names = await page.$$eval(`#inside-softmax-${p} .bar-row .bar-name`, barNames);
        ok(JSON.stringify(names) === JSON.stringify(FASHION), `act I data: the ${p} softmax names Fashion-MNIST's classes (${names.join(', ')})`);
        const marked = await text(`#inside-softmax-${p} .bar-row[data-class="9"] .bar-name`);
        ok(marked.startsWith('Ankle boot') && marked.includes('← label'), `act I data: the ${p} bars mark the right label (${marked})`);
        const prediction = await text(`#inside-prediction-${p}`);
        ok(FASHION.some((c) => prediction.startsWith(`prediction: ${c} (`)), `act I data: the ${p} model predicts a Fashion class (${prediction})`);
      }
      const seen = await text('#inside-digit-text');
      ok(seen.includes('label Ankle boot'), `act I data: the image's label is its class name (${seen})`);
      const newest = await text('#model-run option[value=""]');
      ok(/newest model trained on fashion-mnist \(\d{8}-.* · trained on fashion-mnist/.test(newest), `act I data: the model picker names the newest Fashion model (${newest})`);
      await page.locator('#inside').evaluate((e) => e.scrollIntoView());
      await shot('act1-fashion-trained.png');

      // A digit still goes through the digit model, though the Fashion one is newer.
      await page.selectOption('#digit-dataset', 'mnist-sample');
      await page.waitForFunction(() => /^mnist-sample test images 1–64/.test(document.querySelector('#digit-range')?.textContent || ''), null, { timeout: 30000 });
      const grid = page.locator('#digit-grid');
      const g = await grid.evaluate((c) => ({ cw: Number(c.dataset.cellWidth), ch: Number(c.dataset.cellHeight), sx: c.clientWidth / c.width, sy: c.clientHeight / c.height }));
      await grid.click({ position: { x: 2.5 * g.cw * g.sx, y: 0.5 * g.ch * g.sy } });
      await page.waitForFunction(() => document.querySelector('#inside')?.dataset.source === 'mnist-sample/test/2' && document.querySelector('#inside-trained-on')?.dataset.dataset === 'mnist-sample', null, { timeout: 60000 }).catch(() => {});
      const digitNames = await page.$$eval('#inside-softmax-fp32 .bar-row .bar-name', barNames);
      ok((await page.locator('#inside-trained-on').getAttribute('data-dataset')) === 'mnist-sample' && digitNames.join('') === '0123456789',
        `act I data: a digit goes through the newest digit model, with the digits' names (${await text('#inside-trained-on')}; ${digitNames.join(' ')})`);
    }

    // The dark theme: every layer card's heading, shape and description readable on the card.
    for (const scheme of ['dark', 'light']) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.waitForTimeout(200);
      const body = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      const cards = await cardColours(page);
      const worst = cards.flatMap((c) => ['heading', 'shape', 'what'].filter((k) => c[k]).map((k) => ({ layer: c.layer, k, ratio: contrast(c[k], c.bg), fg: c[k], bg: c.bg })))
        .sort((a, b) => a.ratio - b.ratio)[0];
      const darkBody = contrast(body, 'rgb(0, 0, 0)') < 2;
      ok(cards.length === 7 && (scheme === 'dark') === darkBody && worst && worst.ratio >= 4.5,
        `act I ${scheme} theme: the layer cards' text has contrast >= 4.5 on the card (worst ${worst ? `${worst.layer} ${worst.k} ${worst.fg} on ${worst.bg}: ${worst.ratio.toFixed(2)}` : 'no card'}; page ${body})`);
      if (scheme === 'dark') {
        await page.locator('#inside-layer-conv1').evaluate((e) => e.scrollIntoView());
        await shot('act1-inside-dark.png');
      }
    }
  } finally {
    child.removeAllListeners('exit');
    child.kill();
  }
}

module.exports = { run };
