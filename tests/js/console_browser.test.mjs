// The web console in headless Chromium against a real `lm-warden serve` in front of a real `lm-warden sim`.
// Screenshots go to test-artifacts/console/ (and to docs/screenshots/ with WARDEN_UPDATE_SCREENSHOTS=1).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import {
  ADMIN_TOKEN,
  MODEL,
  chat,
  contrastRatios,
  conversations,
  launchBrowser,
  openConsolePage,
  screenshot,
  startSim,
  startWarden,
  tempDir,
  waitFor,
  writeConfig,
} from './console_support.mjs';

// Independent of the console's own formatting code, so a formatting bug cannot hide behind itself.
const int = (n) => n.toLocaleString('en-US');
const pct = (r) => `${(r * 100).toFixed(1)}%`;

function routingOf(model) {
  return model.routing ?? model;
}

// The card as the API says it must read.
function expectedCard(model) {
  const routing = routingOf(model);
  const replicas = [...routing.replicas].sort((a, b) => a.index - b.index);
  return {
    rows: replicas.map((r, i) => [
      String(r.index ?? i),
      int(r.in_flight),
      int(r.sticky),
      int(r.spilled_in),
      int(r.client_pinned),
      `${int(r.running)} / ${int(r.waiting)}`,
      pct(r.kv_used),
      pct(r.prefix_hit_rate),
      int(r.preemptions),
      r.kv_capacity_tokens > 0 ? `${int(r.held_tokens)} of ${int(r.kv_capacity_tokens)} tokens` : '–',
      r.kv_events ? `${pct(r.kv_events.cache_use)} · ${r.kv_events.live ? 'events live' : 'estimate'}` : '–',
    ]),
    affinity: routing.affinity ? 'Affinity on' : 'Affinity off',
    inFlight: `In flight ${int(routing.in_flight)}`,
  };
}

async function shownCard(page) {
  return page.evaluate(() => ({
    rows: [...document.querySelectorAll('#replica-table tbody tr')].map((tr) =>
      [...tr.querySelectorAll('[data-field]')].map((c) => c.firstChild?.textContent?.trim() ?? ''),
    ),
    labels: Object.fromEntries([...document.querySelectorAll('#routing-card [data-label]')].map((li) => [li.dataset.label, li.textContent])),
    since: document.getElementById('routing-since').textContent,
  }));
}

async function getModel(base) {
  const r = await fetch(`${base}/api/models/${encodeURIComponent(MODEL)}`);
  assert.equal(r.status, 200);
  return r.json();
}

// A sim, a warden in front of it (with `extra` top-level config lines) and a browser, started before the
// tests of the enclosing describe and stopped after them.
function consoleSetup(extra = '', simArgs = []) {
  const ctx = {};
  before(async () => {
    ctx.dir = tempDir();
    ctx.sim = await startSim(simArgs);
    ctx.warden = await startWarden(writeConfig(ctx.dir, ctx.sim.url, extra));
    ctx.base = ctx.warden.base;
    ctx.browser = await launchBrowser();
  });
  after(async () => {
    await ctx.browser?.close();
    await ctx.warden?.child.stop();
    await ctx.sim?.child.stop();
    if (ctx.dir) {
      fs.rmSync(ctx.dir, { recursive: true, force: true });
    }
  });
  return ctx;
}

describe('web console against lm-warden serve', { timeout: 240000 }, () => {
  const ctx = consoleSetup();
  let warden;
  let base;
  let browser;
  before(() => {
    ({ warden, base, browser } = ctx);
  });

  const openPage = (hash, opts) => openConsolePage(browser, base, hash, opts);

  test('the console is served from the binary: index, modules, uPlot, revalidation, unknown paths', async () => {
    const index = await fetch(`${base}/`);
    assert.equal(index.status, 200);
    assert.match(index.headers.get('content-type'), /^text\/html/);
    const html = await index.text();
    assert.match(html, /<script type="module" src="\/js\/main.js">/);
    const etag = index.headers.get('etag');
    assert.ok(etag, 'index.html has an etag');
    const again = await fetch(`${base}/`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);

    const uplot = await fetch(`${base}/vendor/uPlot.iife.min.js`);
    assert.equal(uplot.status, 200);
    assert.match(uplot.headers.get('content-type'), /javascript/);
    assert.match(await uplot.text(), /uPlot/);
    const main = await fetch(`${base}/js/main.js?v=1`);
    assert.equal(main.status, 200);
    assert.match(main.headers.get('content-type'), /javascript/);

    const missing = await fetch(`${base}/js/nope.js`);
    assert.equal(missing.status, 404);
  });

  test('Models page lists the model, its replicas and health, with no console errors', async () => {
    const { page, errors, close } = await openPage('#/models');
    const row = page.locator(`#models-table tr[data-model="${MODEL}"]`);
    await row.waitFor({ timeout: 10000 });
    const text = await row.textContent();
    assert.match(text, /4 \/ 4/);
    for (const i of [0, 1, 2, 3]) {
      assert.match(text, new RegExp(`${i} up`));
    }
    await screenshot(page, 'models', { docs: true });
    assert.deepEqual(errors, []);
    await close();
  });

  test('after traffic the routing card matches GET /api/models/{name} and updates live', async () => {
    const results = await conversations(base, { sessions: 4, turns: 3, tag: 'card' });
    // Each conversation stays on its replica; 4 new conversations on 4 idle replicas spread out.
    for (const turns of results) {
      assert.equal(turns[0].route, 'new');
      assert.ok(turns.slice(1).every((t) => t.route === 'sticky' && t.replica === turns[0].replica));
    }

    const { page, errors, close } = await openPage(`#/models/${encodeURIComponent(MODEL)}`);
    const firstUpdates = await page.evaluate(() => window.wardenConsole.updates);
    // Live: the page fetches again by itself.
    await page.waitForFunction((n) => window.wardenConsole.updates > n, firstUpdates, { timeout: 5000 });

    // Scraped values (running, KV, hit rate) settle after the traffic; compare until page and API agree.
    let last = null;
    await waitFor(
      async () => {
        const model = await getModel(base);
        const want = expectedCard(model);
        const before = await page.evaluate(() => window.wardenConsole.updates);
        await page.waitForFunction((n) => window.wardenConsole.updates > n, before, { timeout: 5000 });
        const shown = await shownCard(page);
        const again = expectedCard(await getModel(base));
        last = { want, shown };
        return (
          JSON.stringify(want) === JSON.stringify(again) &&
          JSON.stringify(shown.rows) === JSON.stringify(want.rows) &&
          shown.labels.affinity === want.affinity &&
          shown.labels['in-flight'] === want.inFlight
        );
      },
      { timeoutMs: 30000, intervalMs: 100, what: `the card to match the API (${JSON.stringify(last)})` },
    );
    const model = await getModel(base);
    const routing = routingOf(model);
    const shown = await shownCard(page);
    assert.equal(shown.rows.length, 4);
    assert.deepEqual(shown.rows.map((r) => r[0]), ['0', '1', '2', '3']);
    const stickyTotal = routing.replicas.reduce((s, r) => s + r.sticky, 0);
    assert.equal(stickyTotal, 8, 'two sticky turns for each of 4 conversations');
    assert.match(shown.labels.spill, /^Spill threshold 8 \(auto\)$/);
    assert.match(shown.labels.sticky, /^Sticky \d+\.\d%$/);
    assert.match(shown.since, /^Counters accumulate since the warden started \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, .* ago\)\.$/);
    // Every column shows at a laptop's width without scrolling sideways.
    const fits = await page.evaluate(() => {
      const table = document.getElementById('replica-table');
      return { table: table.scrollWidth, room: table.parentElement.clientWidth, viewport: window.innerWidth };
    });
    assert.ok(fits.table <= fits.room, `the replica table is ${fits.table} px wide in ${fits.room} px (${fits.viewport} px window)`);
    // Each cell names its column, Preempted and Working set included (the Preempted cell once carried
    // the working set's name, and the working set none).
    const fields = await page.evaluate(() =>
      [...document.querySelectorAll('#replica-table tbody tr:first-child [data-field]')].map((c) => c.dataset.field));
    assert.deepEqual(fields, ['replica', 'in-flight', 'sticky', 'spilled-in', 'client-pinned', 'running-waiting', 'kv-used',
      'prefix-hit-rate', 'preempted', 'working-set', 'cache-events']);
    // The working set fits the instant engine's 4 x 4.2M tokens (16.8M): no warning.
    assert.match(await page.locator('#working-set-summary').textContent(), /(agents? of ~\S+ tokens need ~\S+ tokens|^No agent is active); this host holds ~16\.8M in GPU caches \(no host offload\)\.$/);
    assert.equal(await page.locator('#working-set-warning').isVisible(), false);
    await screenshot(page, 'model', { docs: true });
    assert.deepEqual(errors, []);
    await close();
  });

  test('turning affinity off in the UI changes the route of the next new conversation', async () => {
    const { page, errors, close } = await openPage(`#/models/${encodeURIComponent(MODEL)}`);
    assert.equal((await chat(base, `before-${Date.now()}`, [{ role: 'user', content: 'hello there' }])).route, 'new');

    // A wrong token: the change is refused and the page says the token is wrong.
    await page.click('#affinity-toggle');
    await page.locator('#token-dialog').waitFor({ state: 'visible' });
    await page.fill('#token-input', 'not-the-token');
    await page.press('#token-input', 'Enter');
    await page.locator('#routing-feedback', { hasText: 'admin token was not accepted' }).waitFor({ timeout: 5000 });
    assert.equal(routingOf(await getModel(base)).affinity, true);

    // The right token: affinity goes off, the card follows, and new conversations are balanced.
    await page.click('#affinity-toggle');
    await page.locator('#token-dialog').waitFor({ state: 'visible' });
    await page.fill('#token-input', ADMIN_TOKEN);
    await page.click('#token-form button[type=submit]');
    await page.locator('#routing-feedback', { hasText: 'Affinity is off.' }).waitFor({ timeout: 5000 });
    await page.locator('#routing-card [data-label=affinity]', { hasText: 'Affinity off' }).waitFor({ timeout: 5000 });
    assert.equal(routingOf(await getModel(base)).affinity, false);
    const balanced = await chat(base, `after-${Date.now()}`, [{ role: 'user', content: 'hello again' }]);
    assert.equal(balanced.route, 'balanced');
    await screenshot(page, 'model-affinity-off');

    // The token is kept for the tab: turning it back on does not ask again.
    await page.click('#affinity-toggle');
    await page.locator('#routing-feedback', { hasText: 'Affinity is on.' }).waitFor({ timeout: 5000 });
    assert.equal(await page.locator('#token-dialog').isVisible(), false);
    assert.equal((await chat(base, `back-${Date.now()}`, [{ role: 'user', content: 'hi' }])).route, 'new');

    // Spill threshold: a number, then auto again.
    await page.fill('#spill-input', '4');
    await page.click('#spill-apply');
    await page.locator('#routing-card [data-label=spill]', { hasText: /^Spill threshold 4$/ }).waitFor({ timeout: 5000 });
    assert.equal(routingOf(await getModel(base)).spill_threshold, 4);
    await page.click('#spill-auto');
    await page.locator('#routing-card [data-label=spill]', { hasText: 'Spill threshold 8 (auto)' }).waitFor({ timeout: 5000 });

    // The only console error is the browser's own report of the refused (401) request.
    assert.ok(errors.length <= 1, errors.join('\n'));
    assert.ok(errors.every((e) => /401/.test(e)), errors.join('\n'));
    await close();
  });

  test('after traffic the stats chart has non-zero cache-hit and computed bars', async () => {
    await conversations(base, { sessions: 3, turns: 3, tag: 'stats' });
    const { page, errors, close } = await openPage(`#/stats/${encodeURIComponent(MODEL)}`);
    const given = await page.waitForFunction(
      () => {
        const p = window.wardenConsole.plots;
        if (!p) {
          return null;
        }
        // What uPlot was given: [x, computed+hit (stack top), hit] and [x, completion].
        const [x, top, hit] = p.prompt.data;
        const sum = (a) => a.reduce((s, v) => s + (v ?? 0), 0);
        const computed = top.map((v, i) => v - hit[i]);
        const r = { bars: x.length, hit: sum(hit), computed: sum(computed), completion: sum(p.completion.data[1]) };
        return r.hit > 0 && r.computed > 0 && r.completion > 0 ? r : null;
      },
      null,
      { timeout: 20000 },
    );
    const chart = await given.jsonValue();
    assert.ok(chart.bars >= 60 && chart.bars <= 120, `bars over the hour: ${chart.bars}`);

    // The summary's hit rate is the API's.
    // The summary shows the API's hit rate over the hour (no traffic since, so both are settled).
    const stats = await (await fetch(`${base}/api/stats?model=${encodeURIComponent(MODEL)}&window=3600`)).json();
    assert.ok(stats.summary.cache_hit_rate > 0 && stats.summary.cache_hit_rate < 1, JSON.stringify(stats.summary));
    await page.locator('#summary-hit-rate', { hasText: pct(stats.summary.cache_hit_rate) }).waitFor({ timeout: 10000 });
    // And the bars carry the same tokens as the API's per-second series.
    const apiHit = stats.series.prompt_cached.reduce((a, b) => a + b, 0);
    const apiComputed = stats.series.prompt_computed.reduce((a, b) => a + b, 0);
    const binSeconds = await page.evaluate(() => window.wardenConsole.chart.binSeconds);
    assert.ok(Math.abs(chart.hit * binSeconds - apiHit) < 1e-6 * apiHit + 1e-6, `${chart.hit * binSeconds} vs ${apiHit}`);
    assert.ok(Math.abs(chart.computed * binSeconds - apiComputed) < 1e-6 * apiComputed + 1e-6, `${chart.computed * binSeconds} vs ${apiComputed}`);

    // Tooltip with the exact values of the busiest bar under the cursor.
    const target = await page.evaluate(() => {
      const u = window.wardenConsole.plots.prompt;
      const [x, top] = u.data;
      const i = top.indexOf(Math.max(...top));
      const r = u.over.getBoundingClientRect();
      return { x: r.left + u.valToPos(x[i], 'x'), y: r.top + r.height - 5, top: top[i] };
    });
    await page.mouse.move(target.x, target.y);
    const tip = page.locator('.chart-tooltip');
    await tip.waitFor({ state: 'visible', timeout: 5000 });
    const tipText = await tip.textContent();
    const shownPrompt = Number(tipText.match(/Prompt ([\d,.]+) tokens\/s/)[1].replace(/,/g, ''));
    assert.ok(Math.abs(shownPrompt - target.top) <= (target.top >= 100 ? 0.5 : 0.05), `${tipText} vs ${target.top}`);
    await screenshot(page, 'stats', { docs: true });

    // A shorter window gives finer bars over the same traffic.
    await page.selectOption('#stats-window', '300');
    await page.waitForFunction(() => window.wardenConsole.chart?.binSeconds === 5, null, { timeout: 10000 });
    await page.locator('#summary-hit-rate').waitFor();
    await screenshot(page, 'stats-5min');
    assert.deepEqual(errors, []);
    await close();

    // Dark theme renders too (kept as an artifact).
    const dark = await openPage(`#/stats/${encodeURIComponent(MODEL)}`, { colorScheme: 'dark' });
    await dark.page.waitForFunction(() => window.wardenConsole.plots, null, { timeout: 10000 });
    const bg = await dark.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(bg, 'rgb(17, 19, 24)');
    await screenshot(dark.page, 'stats-dark');
    assert.deepEqual(dark.errors, []);
    await dark.close();
  });

  test('on a narrow screen the chart scrolls sideways and the controls are keyboard-reachable', async () => {
    const stats = await openPage(`#/stats/${encodeURIComponent(MODEL)}`, { width: 420, height: 800 });
    await stats.page.waitForFunction(() => window.wardenConsole.plots, null, { timeout: 10000 });
    const scroll = await stats.page.evaluate(() => {
      const s = document.querySelector('.chart-scroll');
      return { scrollWidth: s.scrollWidth, clientWidth: s.clientWidth, page: document.documentElement.scrollWidth };
    });
    assert.ok(scroll.scrollWidth > scroll.clientWidth, JSON.stringify(scroll));
    assert.ok(scroll.page <= 420, `the page itself does not scroll sideways: ${JSON.stringify(scroll)}`);
    await screenshot(stats.page, 'stats-narrow');
    assert.deepEqual(stats.errors, []);
    await stats.close();

    const { page, errors, close } = await openPage(`#/models/${encodeURIComponent(MODEL)}`);
    const reached = new Set();
    for (let i = 0; i < 30 && reached.size < 4; i++) {
      await page.keyboard.press('Tab');
      const id = await page.evaluate(() => document.activeElement?.id ?? '');
      if (['affinity-toggle', 'spill-input', 'spill-apply', 'spill-auto'].includes(id)) {
        reached.add(id);
      }
    }
    assert.deepEqual([...reached].sort(), ['affinity-toggle', 'spill-apply', 'spill-auto', 'spill-input']);
    assert.deepEqual(errors, []);
    await close();
  });

  test('text has readable contrast (WCAG AA, 4.5:1) in the light and the dark theme', async () => {
    for (const colorScheme of ['light', 'dark']) {
      const { page, errors, close } = await openPage(`#/models/${encodeURIComponent(MODEL)}`, { colorScheme });
      const selectors = ['h1', '.brand', 'nav a[aria-current]', 'nav a:not([aria-current])', '.muted', '.since',
        'thead th', 'tbody td', '[data-label=affinity]', '[data-label=spill]', 'button.primary', '#spill-auto',
        'a[href="#/models"]'];
      const ratios = await contrastRatios(page, selectors);
      for (const sel of selectors) {
        assert.ok(ratios[sel].length > 0, `${colorScheme}: nothing matches ${sel}`);
        for (const { text, ratio } of ratios[sel]) {
          assert.ok(ratio >= 4.5, `${colorScheme}: ${sel} "${text}" contrast ${ratio.toFixed(2)}`);
        }
      }
      assert.deepEqual(errors, []);
      await close();
    }
  });

  // Last: it stops the warden.
  test('when the warden goes away the page says so and keeps the last card', async () => {
    const { page, close } = await openPage(`#/models/${encodeURIComponent(MODEL)}`);
    await warden.child.stop();
    const banner = page.locator('.banner[role=alert]');
    await banner.waitFor({ state: 'visible', timeout: 10000 });
    assert.match(await banner.textContent(), /could not be reached/);
    // The last known card stays readable under the message.
    assert.equal(await page.locator('#replica-table tbody tr').count(), 4);
    await close();
  });
});

// Tokens as the card says them, written apart from working_set.js so a bug there cannot hide behind itself.
function tokens(n) {
  if (n < 1000) {
    return String(n);
  }
  if (n < 9950) {
    return `${(n / 1000).toFixed(1)}k`;
  }
  return n < 999500 ? `${Math.round(n / 1000)}k` : `${(n / 1e6).toFixed(1)}M`;
}

describe('the working-set card, with caches the conversations outgrow', { timeout: 120000 }, () => {
  // 160 blocks of 16 tokens a rank: 4 x 2,560 = 10,240 tokens of GPU cache, no host offload.
  const ctx = consoleSetup('', ['--num-gpu-blocks', '160']);

  // What the card must say for the API's working set.
  const summaryOf = (ws) =>
    `${ws.conversations} agent${ws.conversations === 1 ? '' : 's'} of ~${tokens(ws.typical_tokens)} tokens need ` +
    `~${tokens(ws.held_tokens)} tokens; this host holds ~${tokens(ws.gpu_capacity_tokens)} in GPU caches (no host offload).`;

  test('the card shows the figures of GET /api/models/{name}, then the warning once the working set is over', async () => {
    await conversations(ctx.base, { sessions: 2, turns: 1, tag: 'fits' });
    const { page, errors, close } = await openConsolePage(ctx.browser, ctx.base, `#/models/${encodeURIComponent(MODEL)}`);
    const settle = async (what, check) => {
      let last = null;
      await waitFor(
        async () => {
          const before = await page.evaluate(() => window.wardenConsole.updates);
          await page.waitForFunction((n) => window.wardenConsole.updates > n, before, { timeout: 5000 });
          const ws = (await getModel(ctx.base)).working_set;
          const shown = await page.evaluate(() => ({
            summary: document.getElementById('working-set-summary').textContent,
            warning: document.getElementById('working-set-warning').hidden ? '' : document.getElementById('working-set-warning').textContent,
            starts: document.getElementById('working-set-starts').textContent,
            badges: [...document.querySelectorAll('#replica-table [data-field="working-set"] .badge')].map((b) => b.textContent),
          }));
          last = { ws, shown };
          return check(ws, shown);
        },
        { timeoutMs: 30000, intervalMs: 100, what: `${what} (${JSON.stringify(last)})` },
      );
      return last;
    };

    const fits = await settle('the card to show the working set within the caches', (ws, shown) =>
      ws.conversations === 2 && shown.summary === summaryOf(ws) && shown.warning === '');
    assert.equal(fits.ws.gpu_capacity_tokens, 10240);
    assert.equal(fits.ws.host_capacity_tokens, 0);
    assert.equal(fits.shown.starts, 'Held task starts: 0.');
    assert.deepEqual(fits.shown.badges, []);

    // 16 more conversations of ~850 tokens: ~15k tokens against 10,240.
    await conversations(ctx.base, { sessions: 16, turns: 1, tag: 'over' });
    const over = await settle('the warning', (ws, shown) =>
      ws.held_tokens > ws.capacity_tokens && shown.summary === summaryOf(ws) && shown.warning !== '');
    const { ws } = over;
    const fit = Math.floor(ws.capacity_tokens / ws.typical_tokens);
    assert.equal(
      over.shown.warning,
      `The working set is over what this host holds by ~${tokens(ws.held_tokens - ws.capacity_tokens)} tokens: threads evict ` +
        `each other's prefixes and prefill them again. About ${fit} agent${fit === 1 ? '' : 's'} of this size fit; fewer agents, ` +
        'or more cache (replicas, host offload), keep it within.',
    );
    assert.equal(await page.locator('#working-set-warning').getAttribute('data-level'), 'over');
    // Every replica holding more than its 2,560 tokens is marked over.
    const rows = routingOf(await getModel(ctx.base)).replicas;
    assert.ok(over.shown.badges.includes('over'), JSON.stringify(over.shown.badges));
    assert.ok(rows.some((r) => r.held_tokens > r.kv_capacity_tokens));
    await screenshot(page, 'model-working-set', { docs: true });
    assert.deepEqual(errors, []);
    await close();
  });
});

describe('web console against a warden that needs a key for reads', { timeout: 120000 }, () => {
  const ctx = consoleSetup('auth: { reads: true }');

  test('the page asks for the token once, then shows the models and the model page', async () => {
    assert.equal((await fetch(`${ctx.base}/api/models`)).status, 401);
    assert.equal((await fetch(`${ctx.base}/`)).status, 200);
    const { page, errors, close } = await openConsolePage(ctx.browser, ctx.base, '#/models', { ready: false });
    await page.locator('#token-dialog').waitFor({ state: 'visible', timeout: 10000 });
    await page.fill('#token-input', ADMIN_TOKEN);
    await page.click('#token-form button[type=submit]');
    const row = page.locator(`#models-table tr[data-model="${MODEL}"]`);
    await row.waitFor({ timeout: 10000 });
    assert.match(await row.textContent(), /4 \/ 4/);

    // The token is kept for the tab: the model page and its live updates read without asking again.
    await page.evaluate((m) => {
      location.hash = `#/models/${encodeURIComponent(m)}`;
    }, MODEL);
    await page.locator('#replica-table tbody tr').first().waitFor({ timeout: 10000 });
    assert.equal(await page.locator('#replica-table tbody tr').count(), 4);
    assert.equal(await page.locator('#token-dialog').isVisible(), false);

    // The only console errors are the browser's own reports of the refused (401) first reads.
    assert.ok(errors.every((e) => /401/.test(e)), errors.join('\n'));
    await close();
  });
});
