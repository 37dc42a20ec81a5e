// Browser e2e steps for the look of every page in both themes (issue 26): a screenshot of each
// page at 1280×800 in the light and the dark theme (screenshots/theme-<page>-<theme>.png, shown in
// the README), axe-core's WCAG 2 AA colour-contrast rule on each, the Docs sidebar readable and
// unclipped. Runs last, after the other parts filled the history. Called by browser.cjs:
//
//   await require('./look.cjs').run(page, { ok, base, shots });
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const PAGES = [
  ['home', '#/', '#auto-backend'],
  ['setup', '#/setup', 'h2'],
  ['duel', '#/duel', '#run-duel'],
  ['kernels', '#/kernels', 'h2'],
  ['profiling', '#/profiling', '#calculator'],
  ['verdict', '#/verdict', 'h2'],
  ['docs', '#/docs', 'h2'],
];

// axe-core, installed beside playwright-core (cargo xtask e2e puts both in target/e2e-node).
function axeSource() {
  const dir = process.env.PLAYWRIGHT_DIR || path.resolve(__dirname, '..', '..', 'target/e2e-node');
  return fs.readFileSync(require.resolve('axe-core/axe.min.js', { paths: [dir] }), 'utf8');
}

async function run(page, { ok, shots }) {
  const axe = axeSource();
  const url = page.url().split('#')[0];
  for (const theme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: theme });
    for (const [name, hash, ready] of PAGES) {
      await page.goto(`${url}${hash}`);
      await page.locator(ready).first().waitFor({ timeout: 20000 });
      // Pages fill in from the service: give them a moment to settle.
      await page.waitForLoadState('networkidle').catch(() => {});
      await page.waitForTimeout(300);
      const file = path.join(shots, `theme-${name}-${theme}.png`);
      await page.screenshot({ path: file });
      ok(fs.statSync(file).size > 1000, `look: ${file}`);
      await page.addScriptTag({ content: axe });
      const result = await page.evaluate(async () => {
        // eslint-disable-next-line no-undef
        const r = await axe.run(document, { runOnly: { type: 'rule', values: ['color-contrast'] }, resultTypes: ['violations'] });
        return r.violations.flatMap((v) => v.nodes.map((n) => `${n.target.join(' ')}: ${(n.any[0] || {}).message || v.help}`));
      });
      ok(result.length === 0, `look: ${name} (${theme}) passes WCAG AA colour contrast${result.length ? ` — ${result.length}: ${result.slice(0, 4).join(' | ')}` : ''}`);
    }
  }
  await page.emulateMedia({ colorScheme: 'light' });
  // The Docs sidebar: every title whole (no clipping).
  await page.goto(`${url}#/docs`);
  await page.locator('h2').first().waitFor({ timeout: 20000 });
  const clipped = await page.evaluate(() => {
    const nav = document.querySelector('.doc-toc');
    const edge = nav.getBoundingClientRect().right - parseFloat(getComputedStyle(nav).paddingRight);
    return [...nav.querySelectorAll('a')]
      .filter((a) => a.getBoundingClientRect().right > edge + 1 || a.scrollWidth > a.getBoundingClientRect().width + 1)
      .map((a) => a.textContent.trim());
  });
  ok(clipped.length === 0, `look: no Docs sidebar title is clipped (${clipped.join(', ')})`);
}

module.exports = { run };
