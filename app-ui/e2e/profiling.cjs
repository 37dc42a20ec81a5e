// Browser e2e steps for Act IV's numbers (issue 26): two exports of the same report, one in
// ncu's scaled units and one in base units, compared side by side; the comparison cleared when
// an import is removed; readable units, impossible values flagged, `n/a` without a unit; Speed
// of Light first; kernels named with their durations and sortable; rule addresses as links;
// a screenshot opened full size; the calculator's number fields, its clamped labels and the
// occupancy panel's "open in the calculator"; an import larger than one reply, page by page
// (issue 38). Called by browser.cjs:
//
//   await require('./profiling.cjs').run(page, { ok, base, shots });
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const DATA = path.join(root, 'compute/core/tests/data/ncu');
// The example report (ours_details.csv: ncu's scaled units) as the library lists it.
const EXAMPLE = 'example-our-activation-kernels-h100.csv';

// A quantity as the page shows it (`208.4 µs`, `1.59 GHz`, `32 KiB`) in its base unit.
const SCALE = {
  ns: 1e-9, 'µs': 1e-6, ms: 1e-3, s: 1,
  Hz: 1, kHz: 1e3, MHz: 1e6, GHz: 1e9,
  B: 1, KB: 1e3, MB: 1e6, GB: 1e9, KiB: 1024, MiB: 1048576,
  'KB/block': 1e3, 'B/block': 1, 'KiB/block': 1024,
};
function quantity(text) {
  const m = /^([+-]?[\d,]*\.?\d+)\s*(\S+)$/.exec((text || '').trim());
  if (!m || !(m[2] in SCALE)) return null;
  return { value: Number(m[1].replace(/,/g, '')) * SCALE[m[2]], unit: m[2] };
}
const sig3 = (x) => Number(x.toPrecision(3));
// A 8x6 PNG, attached as a screenshot.
const PNG_BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAgAAAAGCAIAAABxZ0isAAAAEUlEQVR4nGM4YaOBFTEMpAQAmkY4QXj/pr4AAAAASUVORK5CYII=';

// A details CSV of one kernel with the given (section, name, unit, value) rows.
function detailsCsv(kernel, rows) {
  const head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"';
  const lines = rows.map(([s, n, u, v]) =>
    `"0","1","p","h","${kernel}","1","7","(128, 1, 1)","(64, 1, 1)","0","9.0","${s}","${n}","${u}","${v}"`);
  return `${head}\n${lines.join('\n')}\n`;
}

async function run(page, { ok, shots }) {
  await page.setViewportSize({ width: 1280, height: 800 });
  const url = page.url().split('#')[0];
  await page.goto(`${url}#/profiling`);
  await page.locator('#ncu-library').waitFor({ timeout: 20000 });
  const imports = page.locator('#ncu-library li.import');
  await imports.first().or(page.locator('#ncu-add-example')).first().waitFor({ timeout: 20000 });
  // The example report (ours_details.csv: scaled units) must be in the library.
  // (A new user's library may add it by itself meanwhile: the button can go before the click.)
  if (await page.locator('#ncu-add-example').count()) {
    await page.click('#ncu-add-example', { timeout: 5000 }).catch(() => {});
    await page.locator('#ncu-library li.import.example').waitFor({ timeout: 20000 });
  }
  // The same report exported with --print-units base (an import is known by its content: one
  // already in the library keeps its name).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'showdown-e2e-units-'));
  const baseName = 'ours_details_base.csv';
  await page.setInputFiles('#ncu-file', path.join(DATA, baseName));
  await imports.filter({ hasText: baseName }).waitFor({ timeout: 20000 });
  await imports.filter({ hasText: baseName }).locator('button.open-import').click();
  await page.waitForFunction(() => (document.querySelector('#ncu-summary')?.textContent || '').startsWith('ours_details_base.csv'), null, { timeout: 20000 });

  // Base units read as scaled units in the panels ("1586317963.55 hz" was shown as printed).
  const freq = (await page.locator('#panel-throughput tr', { hasText: 'SM Frequency' }).first().locator('td.num').innerText()).trim();
  ok(/^\d+(\.\d+)? GHz/.test(freq), `act IV: a base-unit export's SM frequency reads in GHz (${freq})`);
  const shownUnits = (await page.locator('#panels td.num').allInnerTexts()).join(' | ');
  ok(!/\d hz\b|\d byte\/s\b|\d{7,} /.test(shownUnits), `act IV: no base-unit value is shown raw (${shownUnits.slice(0, 160)})`);

  // Speed of Light first.
  const firstPanel = await page.locator('#panels article.panel').first().getAttribute('data-panel');
  ok(firstPanel === 'throughput', `act IV: Speed of Light is the first panel (${firstPanel})`);

  // Kernels named with their IDs and durations, and sortable by duration.
  const labels = await page.locator('#kernel option').allInnerTexts();
  ok(labels.length > 1 && labels.every((l) => /^#\d+ .+ · [\d.,]+ (ns|µs|ms|s)$/.test(l.trim())),
    `act IV: every kernel in the picker has its ID and duration (${labels.slice(0, 2).join(' / ')})`);
  await page.selectOption('#kernel-order', 'longest');
  const sorted = (await page.locator('#kernel option').allInnerTexts()).map((l) => quantity(l.split(' · ').pop()).value);
  ok(sorted.every((v, i) => i === 0 || sorted[i - 1] >= v), `act IV: "longest first" orders the kernels by duration (${sorted.length})`);
  await page.selectOption('#kernel-order', 'profiled');

  // Rule addresses are links.
  const links = await page.locator('#panels ul.rules a[href^="https://docs.nvidia.com/"]').count();
  ok(links > 0, `act IV: rule addresses are links (${links})`);

  // "Open in the calculator" from the occupancy panel takes the kernel's launch.
  const block = await page.locator('#panel-launch tr', { hasText: 'Block Size' }).first().locator('td.num').innerText();
  await page.locator('#panel-occupancy button.to-calculator').click();
  await page.waitForFunction((b) => document.querySelector('#threads-value')?.textContent === String(parseInt(b, 10)), block.trim(), { timeout: 5000 }).catch(() => {});
  ok((await page.locator('#threads-value').innerText()) === String(parseInt(block, 10)),
    `act IV: "open in the calculator" sets the kernel's block size (${block.trim()})`);

  // The calculator: a number field keeps 100 threads (the slider's step made it 96)…
  await page.fill('#threads-number', '100');
  await page.locator('#threads-number').dispatchEvent('change');
  ok((await page.locator('#threads-value').innerText()) === '100', 'act IV: the threads field takes 100 (not 96)');
  // …and a device with less shared memory clamps the label with the value used.
  await page.fill('#shared-number', '99840');
  await page.locator('#shared-number').dispatchEvent('change');
  await page.selectOption('#cc', '5.0');
  await page.waitForFunction(() => Number(document.querySelector('#shared-value')?.textContent) <= 49152, null, { timeout: 5000 }).catch(() => {});
  const smem = Number(await page.locator('#shared-value').innerText());
  ok(smem <= 49152, `act IV: on CC 5.0 the shared-memory label shows what is used (${smem}, not 99,840)`);
  await page.selectOption('#cc', '9.0');

  // Issue 37: the calculator says how 100 threads round to warps…
  await page.fill('#threads-number', '100');
  await page.locator('#threads-number').dispatchEvent('change');
  const notes = await page.locator('#occ-notes').innerText();
  ok(/100 threads per block run as 4 warps/.test(notes) && /128 thread slots, 28 of them idle/.test(notes),
    `act IV calculator: 100 threads state their rounding to 4 warps (${notes.replace(/\s+/g, ' ').slice(0, 140)})`);
  // …flags a negative value instead of keeping the old results…
  await page.fill('#registers-number', '-5');
  await page.locator('#registers-number').dispatchEvent('change');
  await page.locator('#occ-invalid').waitFor({ timeout: 5000 }).catch(() => {});
  const marked = await page.locator('#registers-number').evaluate((e) => `${e.className} aria-invalid=${e.getAttribute('aria-invalid')} value=${e.value}`);
  const said = (await page.locator('#registers-error').innerText().catch(() => '')).trim();
  ok(/\binvalid\b/.test(marked) && /aria-invalid=true/.test(marked) && /cannot be negative/.test(said),
    `act IV calculator: -5 registers is flagged on its field (${marked}: ${said})`);
  const stale = await page.locator('#occ-result').count();
  const instead = await page.locator('#occ-invalid').innerText().catch(() => '');
  ok(stale === 0 && /cannot be negative/.test(instead), `act IV calculator: ... and no stale result is shown (${stale} result(s); ${instead.slice(0, 100)})`);
  await page.screenshot({ path: path.join(shots, 'act4-calculator-invalid.png') });
  await page.fill('#registers-number', '32');
  await page.locator('#registers-number').dispatchEvent('change');
  ok((await page.locator('#occ-result').count()) === 1 && (await page.locator('#registers-number').evaluate((e) => !e.classList.contains('invalid'))),
    'act IV calculator: a valid value clears the flag and brings the result back');
  // …labels shared memory with each capability's limit, and the example note goes with the example.
  const label90 = await page.locator('#shared-label').innerText();
  await page.selectOption('#cc', '7.5');
  await page.waitForFunction((l) => document.querySelector('#shared-label')?.textContent !== l, label90, { timeout: 5000 }).catch(() => {});
  const label75 = await page.locator('#shared-label').innerText();
  ok(/227 KiB on sm_90/.test(label90) && /64 KiB on sm_75/.test(label75),
    `act IV calculator: the shared-memory label follows the compute capability (${label90} -> ${label75})`);
  const note75 = await page.locator('#cc-this-gpu').innerText();
  ok(!/example/.test(note75), `act IV calculator: "9.0 (H100) is shown as an example" goes when 7.5 is chosen (${note75})`);
  await page.selectOption('#cc', '9.0');
  // The carveout: the default is explained against ncu's count, and a kernel's launch brings
  // the carveout it ran with, so the shared-memory block count is ncu's.
  await page.fill('#shared-number', '17408');
  await page.locator('#shared-number').dispatchEvent('change');
  const why = await page.locator('#carveout-why').innerText();
  ok(/Shared Memory Configuration Size/.test(why) && /228 KiB/.test(why), `act IV calculator: the default carveout is explained against ncu's (${why.slice(0, 120)})`);
  await page.selectOption('#carveout', '132');
  const at132 = (await page.locator('#occ-limits').innerText()).split('·').map((x) => x.trim());
  ok(at132[2] === '7', `act IV calculator: at a 132 KiB carveout 17 KiB blocks count 7, as ncu did (${at132.join(' · ')})`);
  await page.selectOption('#carveout', '');
  await page.selectOption('#kernel', '11');
  await page.waitForFunction(() => /#11 /.test(document.querySelector('#kernel option:checked')?.textContent || ''), null, { timeout: 5000 }).catch(() => {});
  const ncuBlocks = (await page.locator('#panel-occupancy tr', { hasText: 'Block Limit Shared Mem' }).first().locator('td.num').innerText()).trim();
  const smemShown = (await page.locator('#panel-launch tr', { hasText: 'Shared Memory Configuration Size' }).first().locator('td.num').innerText()).trim();
  ok(/^\d+ KiB$/.test(smemShown), `act IV: shared memory reads in KiB (${smemShown}, was "32.77 KB")`);
  await page.locator('#panel-occupancy button.to-calculator').click();
  await page.waitForFunction(() => document.querySelector('#carveout')?.value !== '', null, { timeout: 5000 }).catch(() => {});
  const fromKernel = (await page.locator('#occ-limits').innerText()).split('·').map((x) => x.trim());
  ok((await page.locator('#carveout').inputValue()) === '32' && fromKernel[2] === parseInt(ncuBlocks, 10).toString(),
    `act IV calculator: a kernel's launch brings its 32 KiB carveout and ncu's ${ncuBlocks} shared-memory blocks (${fromKernel.join(' · ')})`);
  await page.locator('#calculator').evaluate((e) => e.scrollIntoView());
  await page.screenshot({ path: path.join(shots, 'act4-calculator-carveout.png') });
  await page.emulateMedia({ colorScheme: 'dark' });
  const filter = await page.locator('#occ-chart').evaluate((e) => getComputedStyle(e).filter);
  ok(/invert/.test(filter), `charts: in the dark theme a chart is drawn dark (${filter})`);
  await page.screenshot({ path: path.join(shots, 'act4-calculator-carveout-dark.png') });
  await page.emulateMedia({ colorScheme: 'light' });

  // Issue 37: the picker keeps its kernel when the order changes.
  const chosen = await page.locator('#kernel-name').innerText();
  await page.selectOption('#kernel-order', 'longest');
  const kept = await page.locator('#kernel option:checked').innerText();
  ok(/^#11 /.test(kept) && (await page.locator('#kernel-name').innerText()) === chosen,
    `act IV: changing the order keeps the chosen kernel (${kept})`);
  await page.selectOption('#kernel-order', 'profiled');
  await page.selectOption('#kernel', '0');

  // Issue 37: a raw export compares with its details twin on every common row.
  await page.setInputFiles('#ncu-file', path.join(DATA, 'ours_raw.csv'));
  await imports.filter({ hasText: 'ours_raw.csv' }).waitFor({ timeout: 20000 });
  // Issue 37: an import names the GPU and compute capability its export gives, and its date.
  const rawOrigin = await imports.filter({ hasText: 'ours_raw.csv' }).first().locator('.import-origin').innerText();
  ok(/^profiled on NVIDIA H100 80GB HBM3, compute capability 9\.0 · imported \d{4}-\d\d-\d\d /.test(rawOrigin),
    `act IV: a raw import names its GPU, compute capability and date (${rawOrigin})`);
  const optionOf = (select, name) => page.$eval(select, (s, n) => [...s.options].find((o) => o.textContent.includes(n))?.value, name);
  await page.selectOption('#compare-a', await optionOf('#compare-a', 'ours_raw.csv'));
  await page.selectOption('#compare-b', await optionOf('#compare-b', baseName));
  await page.locator('#compare-table tbody tr.delta').first().waitFor({ timeout: 20000 }).catch(() => {});
  const rawRows = await page.$$eval('#compare-table tbody tr.delta', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent.trim())));
  ok(rawRows.length > 20 && ['Mem Busy', 'Max Bandwidth', 'Duration'].every((l) => rawRows.some((r) => r[1] === l)) && (await page.locator('#compare-empty').count()) === 0,
    `act IV compare: a raw and a details export of the same kernels compare on every common row (${rawRows.length} rows)`);
  ok(!rawRows.some((r) => /µs/.test(r[2]) && /^[+-]?[\d.,]+ s$/.test(r[5])), 'act IV compare: a difference of µs values reads in µs, not "0 s"');
  await page.locator('#ncu-compare').evaluate((e) => e.scrollIntoView());
  await page.screenshot({ path: path.join(shots, 'act4-compare-raw-details.png') });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: path.join(shots, 'act4-compare-raw-details-dark.png') });
  await page.emulateMedia({ colorScheme: 'light' });

  // Issue 37: Remove offers Undo before it deletes an import and its screenshots.
  await imports.filter({ hasText: 'ours_raw.csv' }).locator('button.remove-import').click();
  const undo = page.locator('#ncu-library li.removing', { hasText: 'ours_raw.csv' }).locator('button.undo-remove');
  await undo.waitFor({ timeout: 5000 }).catch(() => {});
  ok((await undo.count()) === 1, 'act IV: Remove offers Undo');
  await undo.click();
  await page.waitForTimeout(6000);
  ok((await imports.filter({ hasText: 'ours_raw.csv' }).count()) === 1, 'act IV: Undo keeps the import');
  await imports.filter({ hasText: 'ours_raw.csv' }).locator('button.remove-import').click();
  await page.waitForFunction(() => ![...document.querySelectorAll('#ncu-library li')].some((li) => li.textContent.includes('ours_raw.csv')), null, { timeout: 15000 }).catch(() => {});
  ok((await page.locator('#ncu-library li', { hasText: 'ours_raw.csv' }).count()) === 0, 'act IV: without Undo the import is removed');

  // Issue 37: ncu's text report gets the --csv hint; a Latin-1 kernel name is decoded.
  const textReport = '==PROF== Connected to process 1 (/app)\n  relu_f32(float *) (64, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 9.0\n    Section: GPU Speed Of Light Throughput\n    Metric Name   Metric Unit Metric Value\n    Duration               us         5.31\n    Section: Launch Statistics\n';
  // On a page of its own: the refused import is an HTTP 400, which Chromium logs as an error.
  const token = await page.evaluate(() => sessionStorage.getItem('showdown-token'));
  const side = await page.context().browser().newPage({ viewport: { width: 1280, height: 800 } });
  await side.goto(`${url}${token ? `?token=${encodeURIComponent(token)}` : ''}#/profiling`);
  await side.locator('#ncu-library').waitFor({ timeout: 20000 });
  await side.setInputFiles('#ncu-file', { name: 'report.txt', mimeType: 'text/plain', buffer: Buffer.from(textReport) });
  await side.locator('#ncu-error').waitFor({ timeout: 20000 }).catch(() => {});
  const refused = (await side.locator('#ncu-error').innerText().catch(() => '')).trim();
  await side.close();
  ok(/text report/.test(refused) && /--csv/.test(refused) && /--page details/.test(refused), `act IV: ncu's text report is refused with the --csv hint (${refused.slice(0, 160)})`);
  const latin = Buffer.from(detailsCsv('caf\u00e9_kernel', [['GPU Speed Of Light Throughput', 'Duration', 'us', '2.5']]), 'latin1');
  await page.setInputFiles('#ncu-file', { name: 'latin1.csv', mimeType: 'text/csv', buffer: latin });
  await page.waitForFunction(() => /caf/.test(document.querySelector('#kernel-name')?.textContent || ''), null, { timeout: 20000 }).catch(() => {});
  const decoded = await page.locator('#kernel-name').innerText();
  ok(decoded === 'caf\u00e9_kernel', `act IV: a Latin-1 kernel name is decoded (${decoded})`);
  await imports.filter({ hasText: 'latin1.csv' }).locator('button.remove-import').click();

  // The comparison: the same kernels, one export in scaled units, the other in base units.
  const optionFor = (select, name) => page.$eval(select, (s, n) => [...s.options].find((o) => o.textContent.includes(n))?.value, name);
  await page.selectOption('#compare-a', await optionFor('#compare-a', EXAMPLE));
  await page.selectOption('#compare-b', await optionFor('#compare-b', baseName));
  await page.locator('#compare-table tbody tr.delta').first().waitFor({ timeout: 20000 });
  const rows = await page.$$eval('#compare-table tbody tr.delta', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent.trim())));
  const row = (label) => rows.find((r) => r[1] === label);
  for (const label of ['Duration', 'SM Frequency', 'Shared Memory Configuration Size', 'Driver Shared Memory Per Block']) {
    const r = row(label);
    const [a, b] = r ? [quantity(r[2]), quantity(r[3])] : [null, null];
    ok(a && b && a.unit === b.unit && sig3(a.value) === sig3(b.value),
      `act IV compare: ${label} agrees to 3 significant digits across units (${r ? `${r[2]} vs ${r[3]}, ${r[4]}, ${r[5]}` : 'missing'})`);
  }
  const smemRow = row('Shared Memory Configuration Size');
  ok(smemRow && !/^[+-]\d/.test(smemRow[5]) && /≈/.test(smemRow[4]),
    `act IV compare: 32.77 Kbyte vs 32,768 byte is no difference (${smemRow && smemRow.slice(4).join(', ')})`);
  ok(!rows.some((r) => /0\.00 second|\bhz\b/.test(r.join(' '))), 'act IV compare: no "0.00 second" or raw hz');
  await page.locator('#compare-table').evaluate((e) => e.scrollIntoView());
  await page.screenshot({ path: path.join(shots, 'act4-compare-units.png') });

  // Removing B's import clears the comparison (it kept its numbers while the pickers moved).
  await imports.filter({ hasText: baseName }).locator('button.remove-import').click();
  await page.waitForFunction(() => document.querySelectorAll('#compare-table tbody tr.delta').length === 0, null, { timeout: 10000 }).catch(() => {});
  ok((await page.locator('#compare-table tbody tr.delta').count()) === 0 && (await page.locator('#compare-b').inputValue()) === '',
    'act IV compare: removing an import clears the comparison and its picker');

  // Impossible values are flagged, and `n/a` carries no unit.
  const odd = path.join(dir, 'odd-values.csv');
  fs.writeFileSync(odd, detailsCsv('odd_kernel', [
    ['GPU Speed Of Light Throughput', 'Duration', 'us', 'n/a'],
    ['GPU Speed Of Light Throughput', 'Compute (SM) Throughput', '%', '12.5'],
    ['GPU Speed Of Light Throughput', 'Memory Throughput', '%', '80.5'],
    ['Occupancy', 'Achieved Occupancy', '%', '12,345,678.5'],
    ['Occupancy', 'Theoretical Occupancy', '%', '100'],
  ]));
  await page.setInputFiles('#ncu-file', odd);
  await page.waitForFunction(() => document.querySelector('#kernel-name')?.textContent === 'odd_kernel', null, { timeout: 20000 });
  const flagged = page.locator('#panel-occupancy tr.implausible', { hasText: 'Achieved Occupancy' });
  ok((await flagged.count()) === 1 && /above 100/.test(await flagged.innerText()),
    'act IV: "12,345,678.5 %" achieved occupancy is flagged as impossible');
  const sol = await page.locator('#panel-throughput .narrative').innerText();
  ok(!/n\/a us/.test(sol), `act IV: a duration of n/a is not "n/a us" (${sol})`);
  await imports.filter({ hasText: 'odd-values.csv' }).locator('button.remove-import').click();

  // A screenshot opens full size (it was a 340-px thumbnail that could not be enlarged).
  await imports.filter({ hasText: EXAMPLE }).locator('button.open-import').click();
  await page.locator('#panel-occupancy input.attach-shot').waitFor({ timeout: 20000 });
  const png = path.join(dir, 'shot.png');
  fs.writeFileSync(png, Buffer.from(PNG_BASE64, 'base64'));
  await page.setInputFiles('#panel-occupancy input.attach-shot', png);
  const img = page.locator('#panel-occupancy img.screenshot-image').first();
  await img.waitFor({ timeout: 20000 });
  await img.click();
  ok(await img.evaluate((e) => e.classList.contains('screenshot-full') && getComputedStyle(e).position === 'fixed'),
    'act IV: a click opens the screenshot full size');
  // Issue 37: it opens at actual size (1:1), with a switch to fit the window.
  ok(await img.evaluate((e) => getComputedStyle(e).objectFit === 'none'), 'act IV: the screenshot opens at 1:1 (object-fit none, panned)');
  await page.locator('.screenshot-tools button.screenshot-zoom').click();
  ok(await img.evaluate((e) => getComputedStyle(e).objectFit === 'contain'), 'act IV: "Fit to window" scales it to the window');
  await page.locator('.screenshot-tools button.screenshot-zoom').click();
  await img.press('Escape');
  ok(!(await img.evaluate((e) => e.classList.contains('screenshot-full'))), 'act IV: Escape closes it');

  // Issue 27: LayerNorm+GELU FP16 before and after its rewrite (two H100 profiles, committed),
  // imported and compared as a user would: registers 96 -> 62, occupancy up, duration down.
  for (const name of ['ln_gelu_f16_before_h100.csv', 'ln_gelu_f16_after_h100.csv']) {
    await page.setInputFiles('#ncu-file', path.join(DATA, name));
    await imports.filter({ hasText: name }).waitFor({ timeout: 20000 });
  }
  await page.selectOption('#compare-a', await optionFor('#compare-a', 'ln_gelu_f16_before_h100.csv'));
  await page.selectOption('#compare-b', await optionFor('#compare-b', 'ln_gelu_f16_after_h100.csv'));
  await page.locator('#compare-table tbody tr.delta').first().waitFor({ timeout: 20000 });
  const lnRows = await page.$$eval('#compare-table tbody tr.delta', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent.trim())));
  const lnRow = (label) => lnRows.find((r) => r.includes(label));
  const regs = lnRow('Registers Per Thread');
  ok(regs && regs.join(' ').includes('96 register/thread') && regs.join(' ').includes('62 register/thread'),
    `act IV compare: LayerNorm+GELU f16 registers before/after (${regs && regs.join(' | ')})`);
  const occ = lnRow('Theoretical Occupancy');
  ok(occ && /31\.25 %/.test(occ.join(' ')) && /\b50(\.0+)? %/.test(occ.join(' ')),
    `act IV compare: LayerNorm+GELU f16 theoretical occupancy 31.25 % -> 50 % (${occ && occ.join(' | ')})`);
  // The registers and occupancy rows in view (the launch and occupancy panels' rows).
  await page.locator('#compare-table tbody tr.delta', { hasText: 'Registers Per Thread' }).first()
    .evaluate((e) => e.scrollIntoView({ block: 'start' }));
  await page.screenshot({ path: path.join(shots, 'act4-ln-gelu-before-after.png') });

  // Issue 38: the panels come page by page (50 kernels a call, never the whole import): an
  // import of 2,345 kernels (more than the 2,000 one reply may carry, which the page used to
  // show as a refusal) opens on its first page and pages on and back.
  const many = 'many-kernels.csv';
  const head = detailsCsv('k', []).trim();
  const manyRows = [];
  for (let id = 0; id < 2345; id += 1) {
    manyRows.push(`"${id}","1","p","h","kernel_${id}","1","7","(128, 1, 1)","(64, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","us","${(1 + id / 1000).toFixed(3)}"`);
  }
  fs.writeFileSync(path.join(dir, many), `${head}\n${manyRows.join('\n')}\n`);
  await page.setInputFiles('#ncu-file', path.join(dir, many));
  const pageText = () => page.locator('#kernels-page').innerText();
  const waitPage = (text) => page.waitForFunction((t) => document.querySelector('#kernels-page')?.textContent === t, text, { timeout: 20000 }).catch(() => {});
  await waitPage('kernels 1–50 of 2,345');
  ok((await pageText()) === 'kernels 1–50 of 2,345' && (await page.locator('#kernel option').count()) === 50,
    `act IV: a 2,345-kernel import opens on its first page of 50 (${await pageText()})`);
  ok(await page.locator('#kernels-prev').isDisabled(), 'act IV: no previous page before the first');
  await page.click('#kernels-next');
  await waitPage('kernels 51–100 of 2,345');
  const second = await page.locator('#kernel option').first().innerText();
  ok((await pageText()) === 'kernels 51–100 of 2,345' && /^#50 kernel_50\b/.test(second.trim()),
    `act IV: "next" asks the second page (${await pageText()}, first kernel ${second})`);
  ok((await page.locator('#kernel-name').innerText()) === 'kernel_50', 'act IV: the page\'s first kernel is shown');
  for (let i = 2; i < 47; i += 1) {
    await page.click('#kernels-next');
    await waitPage(`kernels ${(i * 50 + 1).toLocaleString('en-US')}–${Math.min(i * 50 + 50, 2345).toLocaleString('en-US')} of 2,345`);
  }
  await waitPage('kernels 2,301–2,345 of 2,345');
  ok((await pageText()) === 'kernels 2,301–2,345 of 2,345' && (await page.locator('#kernel option').count()) === 45
    && await page.locator('#kernels-next').isDisabled(),
  `act IV: the last page holds the last 45 kernels and has no next (${await pageText()})`);
  await page.click('#kernels-prev');
  await waitPage('kernels 2,251–2,300 of 2,345');
  ok((await pageText()) === 'kernels 2,251–2,300 of 2,345', `act IV: "previous" pages back (${await pageText()})`);
  await imports.filter({ hasText: many }).locator('button.remove-import').click();
  // Issue 37: the Docs contents stay in view on a long page.
  await page.goto(`${url}#/docs`);
  await page.locator('.doc-toc').waitFor({ timeout: 20000 });
  const longest = await page.$$eval('.doc-toc a', (as) => as.map((a) => a.getAttribute('href')));
  let best = null;
  for (const href of longest) {
    await page.goto(`${url}${href}`);
    await page.locator('article.doc').waitFor({ timeout: 20000 });
    const h = await page.evaluate(() => document.documentElement.scrollHeight);
    if (!best || h > best.h) best = { href, h };
  }
  await page.goto(`${url}${best.href}`);
  await page.locator('article.doc').waitFor({ timeout: 20000 });
  const tocAt = () => page.locator('.doc-toc').evaluate((e) => {
    const r = e.getBoundingClientRect();
    return { top: Math.round(r.top), bottom: Math.round(r.bottom) };
  });
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight / 2));
  const mid = await tocAt();
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  const end = await tocAt();
  ok(best.h > 1600 && mid.top >= 0 && mid.top < 40 && end.top >= 0 && end.bottom <= 800,
    `docs: the contents stay in view on ${best.href} (${best.h} px tall; contents at ${mid.top}–${mid.bottom} px half-way, ${end.top}–${end.bottom} px at the end)`);
  await page.screenshot({ path: path.join(shots, 'docs-sticky-contents.png') });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: path.join(shots, 'docs-sticky-contents-dark.png') });
  await page.emulateMedia({ colorScheme: 'light' });
}

module.exports = { run };
