// Browser e2e steps for the guided walk (issue 16, item 5) and the designed look (item 6):
// Home's story and "Start the walkthrough", Next through Acts I–V with the progress, intro and
// outro of each, the walk's keys (n / p, arrows), the navigation on one row at 1280 px, the
// skip link and visible keyboard focus, the system's dark theme and the Okabe–Ito contestant
// colours as CSS variables. Called by browser.cjs:
//
//   await require('./walk.cjs').run(page, { ok, base, shots });
//
// `base` is the app's address with `?token=…` and without a fragment, `ok(cond, what)` records
// a check, `shots` is the screenshot folder (walk-home.png, walk-act5.png at 1280×800).
'use strict';

const fs = require('node:fs');
const path = require('node:path');

const ACTS = [
  { hash: '#/setup', label: 'I' },
  { hash: '#/duel', label: 'II' },
  { hash: '#/kernels', label: 'III' },
  { hash: '#/profiling', label: 'IV' },
  { hash: '#/verdict', label: 'V' },
];

async function run(page, { ok, base, shots }) {
  const viewport = page.viewportSize();
  await page.setViewportSize({ width: 1280, height: 800 });
  const shot = async (name, opts = {}) => {
    const file = path.join(shots, name);
    await page.screenshot({ path: file, ...opts });
    ok(fs.statSync(file).size > 1000, `screenshot ${file}`);
  };
  const hashIs = (h) => page.waitForFunction((x) => location.hash === x, h, { timeout: 10000 })
    .then(() => true, () => false);

  // Home, with the walk off (as a new session starts).
  await page.goto(`${base}#/`);
  await page.evaluate(() => sessionStorage.removeItem('showdown.walk'));
  await page.reload();
  const start = page.locator('#walk-start');
  await start.waitFor({ timeout: 20000 });
  ok(/Start the walkthrough/.test(await start.innerText()), 'walk: Home offers "Start the walkthrough"');
  const story = (await page.locator('#walk-story').innerText()).trim();
  ok(story.length > 150 && /FP16/.test(story) && /this machine/.test(story), `walk: Home tells the lab's story (${story.slice(0, 70)}…)`);
  ok((await page.locator('#walk-progress').count()) === 0, 'walk: off until started (no progress on Home)');

  // The navigation: every link on one row at 1280 px, full titles as tooltips.
  const links = await page.locator('nav#nav a').all();
  const ys = [];
  for (const a of links) {
    const box = await a.boundingBox();
    ys.push(box ? Math.round(box.y) : -1);
  }
  ok(links.length === 7 && ys.every((y) => y >= 0 && y === ys[0]), `nav: ${links.length} links on one row at 1280 px (y ${ys.join(', ')})`);
  ok(/Act II/.test((await page.locator('nav#nav a[href="#/duel"]').getAttribute('title')) || ''), 'nav: the compact link keeps the full title as its tooltip');

  // Keyboard: from a fresh page, Tab first reaches the skip link (shown when focused), then the
  // navigation, whose focus ring is visible; the skip link moves the focus to the content.
  await page.keyboard.press('Tab');
  const skip = await page.evaluate(() => {
    const e = document.activeElement;
    return { cls: e && e.className, top: e ? e.getBoundingClientRect().top : -1 };
  });
  ok(/skip-link/.test(skip.cls || '') && skip.top >= 0, `keyboard: Tab first reaches the skip link, shown on screen (top ${Math.round(skip.top)})`);
  let navFocus = null;
  for (let i = 0; i < 6 && !navFocus; i += 1) {
    await page.keyboard.press('Tab');
    navFocus = await page.evaluate(() => {
      const e = document.activeElement;
      if (!e || !e.closest('nav#nav')) return null;
      const s = getComputedStyle(e);
      return { href: e.getAttribute('href'), outline: s.outlineStyle, width: parseFloat(s.outlineWidth) };
    });
  }
  ok(navFocus && navFocus.outline !== 'none' && navFocus.width >= 2, `keyboard: Tab reaches the navigation with a visible focus ring (${JSON.stringify(navFocus)})`);
  await page.focus('.skip-link');
  await page.keyboard.press('Enter');
  ok(await page.evaluate(() => document.activeElement && document.activeElement.id === 'main-content'), 'keyboard: the skip link moves the focus to the content');
  ok(await hashIs('#/'), 'keyboard: the skip link leaves the route alone');

  // The look: Okabe–Ito contestants as CSS variables, light and dark from the system setting.
  const fp16 = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--c-fp16').trim().toLowerCase());
  ok(fp16 === '#d55e00', `look: --c-fp16 is Okabe–Ito vermillion (${fp16})`);
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await page.emulateMedia({ colorScheme: 'light' });
  const light = await bg();
  await page.emulateMedia({ colorScheme: 'dark' });
  const dark = await bg();
  ok(light !== dark, `look: the page follows the system's light / dark setting (${light} / ${dark})`);
  await page.emulateMedia({ colorScheme: 'light' });
  await shot('walk-home.png');

  // The walk: Start, then Next through Acts I–V.
  await start.click();
  for (const [i, act] of ACTS.entries()) {
    if (i > 0) await page.click('#walk-next');
    ok(await hashIs(act.hash), `walk: ${i === 0 ? 'Start' : 'Next'} goes to Act ${act.label} (${act.hash})`);
    const current = page.locator('#walk-progress [aria-current="step"]');
    await current.waitFor({ timeout: 10000 }).catch(() => {});
    const label = (await current.count()) ? (await current.innerText()).trim() : '';
    ok(label === act.label, `walk: the progress shows Act ${act.label} as current (${label})`);
    const intro = page.locator('#walk-intro');
    const introText = (await intro.count()) ? await intro.innerText() : '';
    ok(new RegExp(`Act ${act.label} — what you will see`).test(introText), `walk: Act ${act.label} opens with what it will show`);
    const outro = page.locator('#walk-outro');
    await outro.locator('ul.walk-lines li, .error').first().waitFor({ timeout: 30000 }).catch(() => {});
    const lines = (await outro.count()) ? await outro.locator('ul.walk-lines li').allInnerTexts() : [];
    const failed = (await outro.count()) ? await outro.locator('.error').count() : 1;
    // The lines carry this machine's numbers, or say what to press to get them.
    const grounded = lines.length > 0 && lines.some((l) => /\d/.test(l) || /press/.test(l));
    ok(failed === 0 && grounded, `walk: Act ${act.label} closes with what its results showed (${lines.length} lines: ${(lines[0] || '').slice(0, 80)})`);
  }
  const five = (await page.locator('#walk-outro ul.walk-lines').innerText()).trim();
  ok(/This machine: .*core/.test(five) && /Act II: /.test(five), `walk: Act V ties the acts together (${five.split('\n')[0].slice(0, 80)})`);
  await shot('walk-act5.png');

  // The walk's keys: p (and ←) back, n (and →) forward; not while typing.
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  await page.keyboard.press('p');
  ok(await hashIs('#/profiling'), 'walk: "p" goes back to Act IV');
  const focused = await page.evaluate(() => { const a = document.activeElement; return a ? `${a.tagName}#${a.id}.${a.className}` : 'none'; });
  await page.keyboard.press('ArrowLeft');
  ok(await hashIs('#/kernels'), `walk: ← goes back to Act III (focus was on ${focused})`);
  await page.keyboard.press('n');
  ok(await hashIs('#/profiling'), 'walk: "n" goes on to Act IV');
  await page.keyboard.press('ArrowRight');
  ok(await hashIs('#/verdict'), 'walk: → goes on to Act V');

  // Next on Act V ends the walk at Home.
  await page.click('#walk-next');
  ok(await hashIs('#/'), 'walk: Next on Act V ends the walk at Home');
  await page.locator('#walk-start').waitFor({ timeout: 10000 }).catch(() => {});
  const left = await page.evaluate(() => sessionStorage.getItem('showdown.walk'));
  ok(left === 'off' && (await page.locator('#walk-progress').count()) === 0, `walk: off again once finished (${left})`);

  if (viewport) await page.setViewportSize(viewport);
}

module.exports = { run };
