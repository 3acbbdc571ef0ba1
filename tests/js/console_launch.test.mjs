// The console's view of engines the warden launches (docs/engines.md): a real `lm-warden serve` whose config
// launches `lm-warden sim` (model "launched") and a command that fails at once (model "broken"), plus a model
// it does not launch. Headless Chromium checks the Models page badges and the model page's "Engine" section.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  Child, contrastRatios, freePort, launchBrowser, openConsolePage, screenshot, tempDir, waitFor, warden,
} from './console_support.mjs';


function writeLaunchConfig(dir, simPort, brokenPort, idlePort) {
  const file = path.join(dir, 'warden.yaml');
  fs.writeFileSync(
    file,
    `# Written by tests/js/console_launch.test.mjs
listen: 127.0.0.1:0
state_dir: ${JSON.stringify(path.join(dir, 'state'))}
metrics: { scrape_interval: 200ms }
models:
  - name: launched
    served_model_name: served-by-sim
    max_num_seqs: 8
    replicas:
      data_parallel: { url: http://127.0.0.1:${simPort}, size: 2 }
    launch:
      command: ["\${WARDEN_BINARY}", sim, --port, "\${PORT}", --data-parallel-size, "\${DP_SIZE}",
                --preset, instant, --served-model-name, "\${SERVED_MODEL_NAME}"]
      health_timeout: 30s
      stop_grace: 2s
  - name: broken
    replicas:
      urls: [http://127.0.0.1:${brokenPort}]
    launch:
      command: [/bin/sh, -c, 'echo loading weights; echo "error: CUDA out of memory" >&2; exit 2']
      restart: { initial_backoff: 50ms }
  - name: outside
    replicas:
      urls: [http://127.0.0.1:${idlePort}]
`,
  );
  return file;
}

describe('console: engines launched by the warden', { timeout: 180000 }, () => {
  let dir;
  let serve;
  let base;
  let browser;
  let simPort;

  before(async () => {
    dir = tempDir();
    simPort = await freePort();
    const config = writeLaunchConfig(dir, simPort, await freePort(), await freePort());
    serve = new Child('serve', warden(), ['serve', '--config', config]);
    base = `http://127.0.0.1:${await serve.port()}`;
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    // The warden stops the engines it launched (SIGTERM, then SIGKILL after stop_grace).
    await serve?.stop();
    if (dir) {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  const openPage = (hash) => openConsolePage(browser, base, hash);

  // The page's text of a locator once `ok(text)` holds (the page refreshes itself; no reload here).
  async function textWhen(page, selector, ok, what) {
    let last = '';
    try {
      await waitFor(
        async () => {
          last = (await page.locator(selector).textContent({ timeout: 5000 })) ?? '';
          return ok(last);
        },
        { timeoutMs: 40000, intervalMs: 200, what },
      );
    } catch (err) {
      err.message += ` (last text: ${JSON.stringify(last.slice(-400))})`;
      throw err;
    }
    return last;
  }

  test('Models page: a status badge per launched model, with words, and none for the other', async () => {
    const { page, errors, close } = await openPage('#/models');
    const badge = (model) => `#models-table tr[data-model="${model}"] [data-field=engine]`;
    await textWhen(page, `${badge('launched')} .badge`, (t) => t === 'Ready', 'launched to show Ready');
    await textWhen(page, `${badge('broken')} .badge`, (t) => t === 'Failed', 'broken to show Failed');
    const broken = await page.locator(badge('broken')).textContent();
    assert.match(broken, /exited with status 2/);
    assert.match(await page.locator(badge('outside')).textContent(), /not launched/);
    // The status is in the badge's text and data, not only in its colour.
    assert.equal(await page.locator(`${badge('launched')} .badge`).getAttribute('data-status'), 'ready');
    assert.equal(await page.locator(`${badge('broken')} .badge`).getAttribute('data-status'), 'failed');
    const colours = await page.evaluate(() =>
      [...document.querySelectorAll('#models-table .badge.status')].map((b) => getComputedStyle(b).backgroundColor),
    );
    assert.equal(new Set(colours).size, 2, `ready and failed badges differ in colour: ${colours}`);
    await screenshot(page, 'models-launch');
    assert.deepEqual(errors, []);
    await close();
  });

  test('model page: Engine section shows ready and the lines the sim printed, live', async () => {
    const { page, errors, close } = await openPage('#/models/launched');
    await textWhen(page, '#engine-status', (t) => t === 'Ready', 'the engine status Ready');
    // The sim's own stdout line, captured by the warden and fetched from /logs (the box shows the model
    // card's bare tail until the first fetch answers: wait for the fetched form, with its streams).
    const log = await textWhen(page, '#engine-log', (t) => new RegExp(`stdout: listening on .*:${simPort}`).test(t),
      'the sim\u2019s listening line in the log box, as /logs returns it');
    assert.match(log, /warden: started pid \d+/);
    assert.match(log, /stdout: listening on/);
    assert.equal(await page.locator('#engine-log').evaluate((el) => el.tagName), 'PRE');
    assert.equal(await page.locator('#engine-not-launched').isHidden(), true);
    const row = await page.locator('#engine-table tbody tr').first().textContent();
    assert.match(row, /Ready/);
    assert.match(row, /0, 1/);  // the replicas the one DP process serves

    // Live: the log box is fetched again without a reload, and it matches what the API returns.
    const n = await page.evaluate(() => window.wardenConsole.logUpdates ?? 0);
    await page.waitForFunction((k) => (window.wardenConsole.logUpdates ?? 0) > k, n, { timeout: 10000 });
    const api = await (await fetch(`${base}/api/models/launched/logs?lines=200`)).json();
    const lastLine = api.engines[0].lines.at(-1).text;
    assert.ok((await page.locator('#engine-log').textContent()).includes(lastLine), `log box holds ${lastLine}`);
    await screenshot(page, 'model-launch');
    assert.deepEqual(errors, []);
    await close();
  });

  test('model page: a command that fails at once shows Failed, its reason and its last lines', async () => {
    const { page, errors, close } = await openPage('#/models/broken');
    await textWhen(page, '#engine-status', (t) => t === 'Failed', 'the engine status Failed');
    const reason = await page.locator('#engine-reason').textContent();
    assert.match(reason, /exited with status 2/);
    assert.match(reason, /gave up after 3 starts/);
    const log = await textWhen(page, '#engine-log', (t) => /error: CUDA out of memory/.test(t), 'the stderr line');
    assert.match(log, /stdout: loading weights/);
    assert.match(log, /stderr: error: CUDA out of memory/);
    assert.match(log, /warden: exited with status 2/);
    assert.deepEqual(errors, []);
    await close();
  });

  test('status badges and the log box have readable contrast (4.5:1) in the light and the dark theme', async () => {
    for (const colorScheme of ['light', 'dark']) {
      for (const [hash, sel] of [['#/models', '#models-table .badge.status'], ['#/models/broken', '#engine-status'],
        ['#/models/broken', '#engine-log']]) {
        const { page, close } = await openConsolePage(browser, base, hash, { colorScheme });
        await page.locator(sel).first().waitFor({ timeout: 10000 });
        const found = (await contrastRatios(page, [sel]))[sel];
        assert.ok(found.length > 0, `${colorScheme}: nothing matches ${sel}`);
        for (const { text, ratio } of found) {
          assert.ok(ratio >= 4.5, `${colorScheme} ${sel} "${text}": contrast ${ratio.toFixed(2)}`);
        }
        await close();
      }
    }
  });

  test('model page: a model without launch says it is not launched by the warden', async () => {
    const { page, errors, close } = await openPage('#/models/outside');
    const note = page.locator('#engine-not-launched');
    await note.waitFor({ state: 'visible', timeout: 10000 });
    assert.match(await note.textContent(), /Not launched by the warden/);
    assert.equal(await page.locator('#engine-launched').isHidden(), true);
    // It never asks the logs endpoint (a 404 there would be a console error).
    assert.equal(await page.evaluate(() => window.wardenConsole.logUpdates), undefined);
    assert.deepEqual(errors, []);
    await close();
  });
});
