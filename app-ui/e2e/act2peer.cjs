// Act II with PyTorch beside the duel (issue 29, "Act II: PyTorch beside our duel, live"): a
// short CPU duel of fp32 and bf16 with "with PyTorch" ticked trains the same CNN in PyTorch
// after ours (bench/duel_peer.py through the peer interpreter); PyTorch's runs join the result
// table (`tr.peer-row`, with a positive median epoch time and an accuracy), the comparison
// sentence (`#pytorch-sentence`), the epoch table and the accuracy chart (its `data-series`
// names the PyTorch lines); the run history marks the run "+ PyTorch" and its reopened table
// has the PyTorch rows too (saved with the run).
//
// Called by browser.cjs: run(page, { ok, base, shots }). The server it talks to inherits the
// environment: CI sets SHOWDOWN_PYTHON to an interpreter that imports torch, or else
// PEER_SKIP_REASON to one line saying why there is none; then this part says it is skipped and
// checks nothing.
'use strict';

const path = require('node:path');

async function run(page, { ok, base, shots }) {
  const reason = (process.env.PEER_SKIP_REASON || '').trim()
    || (process.env.SHOWDOWN_PYTHON ? '' : 'SHOWDOWN_PYTHON is not set: no interpreter with torch was given');
  if (reason) {
    console.log(`act2peer: skipped (${reason})`);
    return;
  }
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

  // The option: enabled once the service says the interpreter imports torch.
  const box = page.locator('#with-pytorch');
  await box.waitFor({ timeout: 30000 });
  const enabled = await page.waitForFunction(() => {
    const b = document.querySelector('#with-pytorch');
    return b && !b.disabled;
  }, null, { timeout: 60000 }).then(() => true, () => false);
  const optionText = await text('.pytorch-option');
  ok(enabled && /with PyTorch \d+\.\d+\S* \((GPU|CPU)\)/.test(optionText),
    `act2peer: "with PyTorch" is offered with torch's version (${optionText})`);
  const title = (await box.getAttribute('title')) || '';
  ok(/bench\/duel_peer\.py/.test(title) && /GradScaler/.test(title) && /learning rate/.test(title),
    `act2peer: its title says what it runs (${title.slice(0, 120)}…)`);
  if (!enabled) return;

  // fp32, bf16 and fp8 on the CPU (bf16 autocast and torch._scaled_mm work there),
  // mnist-sample, 512 images, 2 epochs.
  for (const p of ['fp32', 'fp16', 'tf32', 'bf16', 'fp8']) {
    const want = p === 'fp32' || p === 'bf16' || p === 'fp8';
    const b = page.locator(`#prec-${p}`);
    if ((await b.isChecked()) !== want) await (want ? b.check() : b.uncheck());
  }
  await page.selectOption('#backend', 'cpu');
  await page.selectOption('#dataset', 'mnist-sample');
  await page.selectOption('#activation', 'relu');
  await page.fill('#train-limit', '512');
  await page.fill('#epochs', '2');
  await page.fill('#batch', '128');
  await box.check();
  await page.click('#run-duel');

  // PyTorch's progress shows up live before the result.
  const live = await page.waitForFunction(() => {
    const t = document.querySelector('#duel-progress')?.textContent || '';
    return /^PyTorch .*: (started|epoch \d+\/2)/.test(t) ? t : false;
  }, null, { timeout: 180000 }).then((h) => h.jsonValue(), () => '');
  ok(!!live, `act2peer: the progress line follows PyTorch's epochs (${live || 'never'})`);

  await page.waitForFunction(() => !!document.querySelector('#duel-saved') || !!document.querySelector('#duel-error'),
    null, { timeout: 180000 }).catch(() => {});
  const failed = await shown('#duel-error');
  ok(!failed, `act2peer: the duel with PyTorch finished without an error ${failed ? `(${failed})` : ''}`);

  // The result table: PyTorch's rows after ours, one per precision we trained.
  const peerRows = await page.$$eval('#result-table tr.peer-row', (rows) => rows.map((r) => ({
    variant: r.dataset.variant,
    precision: r.dataset.precision,
    label: r.querySelector('td')?.textContent.trim(),
    ms: parseFloat((r.querySelector('td.epoch-time')?.textContent || '').replace(/[^0-9.].*$/, '')),
    median: r.querySelector('.peer-median')?.textContent.trim(),
    accuracy: r.querySelector('td.accuracy')?.textContent.trim(),
    speedup: r.querySelector('td.our-speedup')?.textContent.trim(),
    text: r.textContent.replace(/\s+/g, ' '),
  })));
  for (const p of ['fp32', 'bf16', 'fp8']) {
    const row = peerRows.find((r) => r.precision === p);
    ok(!!row && row.ms > 0 && /^\d+\.\d+ %$/.test(row.accuracy || '') && /median of \d+ epoch/.test(row.median || ''),
      `act2peer: the result table has PyTorch's ${p} row with a positive epoch time and an accuracy (${JSON.stringify(row)})`);
    ok(!!row && /^ours ([0-9.]+× (faster|slower)|at the same pace \([0-9.]+×\))$/.test(row.speedup || ''), `act2peer: PyTorch's ${p} row says our speed-up (${row && row.speedup})`);
  }
  const fp8Peer = peerRows.find((r) => r.precision === 'fp8');
  ok(!!fp8Peer && /torch\._scaled_mm, delayed scaling/.test(fp8Peer.label || '')
    && /delayed scaling, history 1024; final scales x1 2\^\d+, w1 2\^\d+/.test(fp8Peer.text || ''),
    `act2peer: PyTorch's FP8 row names its GEMMs, its scaling and its final scales (${fp8Peer && fp8Peer.text})`);
  const head = await text('#result-table tr.peer-head');
  ok(/PyTorch \S+ on /.test(head), `act2peer: the table says where PyTorch ran (${head.slice(0, 90)})`);
  const sentence = await text('#pytorch-sentence');
  // Issue 37: one statistical rule for every comparison, and FP8's engines named.
  ok(peerRows.length > 0 && peerRows.every((r) => /median of \d+ epochs?, (spread [0-9.]+×|no spread)$/.test(r.median || '')),
    `act2peer: every PyTorch row states its run count and spread (${peerRows.map((r) => r.median).join(' | ')})`);
  ok(/These ratios rest on one duel \(our .+\); the verdict states a speed-up from 3 runs of the same duel\./.test(sentence),
    `act2peer: the sentence says its ratios rest on one duel, below the verdict's rule (${sentence.slice(-260)})`);
  ok(/The FP8 rows compare different engines: our fp8 rounds .+ E4M3\/E5M2 .+; PyTorch's runs PyTorch FP8/.test(sentence),
    `act2peer: the FP8 comparison says what each side computes on`);
  ok(/PyTorch/.test(sentence) && /((faster|slower) than|at the same pace \([0-9.]+×\) as) PyTorch's fastest/.test(sentence), `act2peer: the comparison sentence (${sentence})`);

  // The epoch table and the charts carry PyTorch's epochs.
  const epochPeerRows = await page.locator('#epoch-table tr.peer-row').count();
  ok(epochPeerRows >= 4, `act2peer: the epoch table has PyTorch's epochs (${epochPeerRows} rows)`);
  const series = ((await page.locator('#accuracy-chart').getAttribute('data-series')) || '').split(';');
  ok(series.includes('fp32') && series.includes('bf16') && series.includes('PyTorch fp32 eager') && series.includes('PyTorch bf16 eager'),
    `act2peer: the accuracy chart draws PyTorch's lines beside ours (${series.join(', ')})`);
  const lossSeries = (await page.locator('#pytorch-loss-chart').getAttribute('data-series')) || '';
  ok(await page.locator('#pytorch-loss-chart').isVisible() && /PyTorch fp32 eager/.test(lossSeries),
    `act2peer: the per-epoch loss chart draws PyTorch's train loss (${lossSeries})`);
  const notes = await page.locator('#pytorch-notes li').allInnerTexts();
  ok(notes.length > 0, `act2peer: PyTorch's notes are listed (${notes.map((n) => n.trim()).join(' | ').slice(0, 200)})`);

  // The screenshots: PyTorch's rows beside ours in the result table with the comparison sentence
  // (act2-pytorch.png), and the accuracy and loss charts with PyTorch's lines dashed.
  const scrollTo = (sel, above) => page.locator(sel).evaluate((el, a) => {
    el.scrollIntoView({ block: 'start' });
    window.scrollBy(0, -a);
  }, above);
  await scrollTo('#duel-result', 16);
  await page.screenshot({ path: path.join(shots, 'act2-pytorch.png') });
  ok(true, `act2peer: screenshot ${path.join(shots, 'act2-pytorch.png')}`);
  await scrollTo('#accuracy-chart', 16);
  await page.screenshot({ path: path.join(shots, 'act2-pytorch-charts.png') });

  // The run history: marked, and its reopened table has PyTorch's rows.
  const savedId = ((await text('#duel-saved')).match(/as (\S+)\.$/) || [])[1];
  const row = page.locator(`#run-history #history-table tbody tr[data-run="${savedId}"]`);
  await row.waitFor({ timeout: 20000 }).catch(() => {});
  const mark = await row.locator('.with-pytorch-mark').innerText().catch(() => '');
  ok(!!savedId && /\+ PyTorch/.test(mark), `act2peer: the run history marks run ${savedId} "+ PyTorch" (${mark.trim()})`);
  await row.locator('button.run-show').click();
  await page.locator('#history-run-table tr.peer-row').first().waitFor({ timeout: 20000 }).catch(() => {});
  const savedPeer = await page.locator('#history-run-table tr.peer-row').count();
  ok(savedPeer >= 2, `act2peer: the reopened run's table has PyTorch's rows (${savedPeer})`);
  const savedSeries = (await page.locator('#history-accuracy-chart').getAttribute('data-series')) || '';
  ok(/PyTorch bf16 eager/.test(savedSeries), `act2peer: the reopened run's accuracy chart draws PyTorch's lines (${savedSeries})`);

  // The verdict says the comparison.
  await page.click('nav a[href="#/verdict"]');
  await page.locator('#verdict-headline').waitFor({ timeout: 30000 });
  const verdict = await text('#verdict-pytorch');
  ok(/PyTorch/.test(verdict), `act2peer: the verdict says how ours compared with PyTorch (${verdict.slice(0, 120)})`);
}

module.exports = { run };
