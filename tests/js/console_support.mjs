// Shared plumbing of the console's browser tests: real `lm-warden sim` and `lm-warden serve` processes on
// 127.0.0.1 with port 0, headless Debian chromium through playwright-core, bounded polling (never sleeps
// as synchronisation), and cleanup of everything started.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const sourceDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const artifactDir = path.join(sourceDir, 'test-artifacts', 'console');
export const screenshotDir = path.join(sourceDir, 'docs', 'screenshots');
export const CHROMIUM = '/usr/bin/chromium';
export const ADMIN_TOKEN = 'console-test-token';
export const MODEL = 'qwen3-4b-dp4';
export const SERVED_NAME = 'Qwen/Qwen3-4B-Instruct-2507';

// Polls `fn` until it returns a truthy value or throws no more; fails with the last error after timeoutMs.
export async function waitFor(fn, { timeoutMs = 15000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let lastError = null;
  for (;;) {
    try {
      const v = await fn();
      if (v) {
        return v;
      }
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError ? `: ${lastError.message ?? lastError}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

// A child process whose output is kept (for the port it announces and for failure messages).
export class Child {
  constructor(name, file, args, opts = {}) {
    this.name = name;
    this.output = '';
    this.exited = null;
    this.proc = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    const take = (d) => {
      this.output += d.toString();
      if (this.output.length > 1_000_000) {
        this.output = this.output.slice(-500_000);
      }
    };
    this.proc.stdout.on('data', take);
    this.proc.stderr.on('data', take);
    this.exitPromise = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.exited = { code, signal };
        resolve(this.exited);
      });
    });
  }

  // The port a server started with port 0 announces ("listening on 127.0.0.1:PORT").
  async port(timeoutMs = 20000, pattern = /listen\w*\s+(?:on\s+)?(?:http:\/\/)?(?:127\.0\.0\.1|localhost):(\d{2,5})/i) {
    return waitFor(
      () => {
        if (this.exited) {
          throw new Error(`${this.name} exited (${JSON.stringify(this.exited)}):\n${this.output}`);
        }
        const m = this.output.match(pattern);
        return m && Number(m[1]) > 0 ? Number(m[1]) : null;
      },
      { timeoutMs, what: `${this.name} to announce its port` },
    );
  }

  async stop() {
    if (this.exited) {
      return;
    }
    this.proc.kill('SIGTERM');
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
    await this.exitPromise;
    clearTimeout(timer);
  }
}

export function warden() {
  const binary = process.env.WARDEN_BINARY ?? path.join(sourceDir, 'build', 'lm-warden');
  if (!fs.existsSync(binary)) {
    throw new Error(`WARDEN_BINARY not found: ${binary}`);
  }
  return binary;
}

// A port nobody listens on right now: bind port 0, read it, close.
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'warden-console-'));
}

// A simulated 4-rank data-parallel engine, fast enough for tests.
export async function startSim(extraArgs = []) {
  const sim = new Child('sim', warden(), [
    'sim',
    '--host', '127.0.0.1',
    '--port', '0',
    '--data-parallel-size', '4',
    '--preset', 'instant',
    '--served-model-name', SERVED_NAME,
    ...extraArgs,
  ]);
  const port = await sim.port();
  return { child: sim, port, url: `http://127.0.0.1:${port}` };
}

// `extra`: more top-level lines (e.g. "auth: { reads: true }").
// `extra`: more top-level settings; `modelExtra`: more settings of the model entry (indented 4).
export function writeConfig(dir, simUrl, extra = '', modelExtra = '') {
  const file = path.join(dir, 'warden.yaml');
  fs.writeFileSync(
    file,
    `# Written by tests/js/console_support.mjs
listen: 127.0.0.1:0
state_dir: ${JSON.stringify(path.join(dir, 'state'))}
admin_token: ${ADMIN_TOKEN}
${extra}
metrics: { scrape_interval: 200ms }
models:
  - name: ${MODEL}
    served_model_name: ${SERVED_NAME}
    max_num_seqs: 32
    routing: { affinity: true, spill_threshold: auto }
    replicas:
      data_parallel: { url: ${simUrl}, size: 4 }
${modelExtra}`,
  );
  return file;
}

export async function startWarden(configFile) {
  const serve = new Child('serve', warden(), ['serve', '--config', configFile]);
  const port = await serve.port();
  const base = `http://127.0.0.1:${port}`;
  // Ready when the admin API answers and the scraper has seen every replica (the token serves a warden
  // whose reads need one too).
  await waitFor(
    async () => {
      const r = await fetch(`${base}/api/models/${encodeURIComponent(MODEL)}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      if (!r.ok) {
        return false;
      }
      const m = await r.json();
      const replicas = m.routing?.replicas ?? m.replicas ?? [];
      return replicas.length === 4 && replicas.every((x) => x.healthy !== false);
    },
    { timeoutMs: 20000, what: 'the warden to serve /api/models with 4 healthy replicas' },
  );
  return { child: serve, port, base };
}

export async function launchBrowser() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

// A console page in a fresh browser context, once the page says it has drawn its first data (unless
// `ready` is false: a page that first asks for a token).
export async function openConsolePage(
  browser,
  base,
  hash,
  { colorScheme = 'light', width = 1200, height = 900, ready = true } = {},
) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme });
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${base}/${hash}`);
  if (ready) {
    await page.waitForFunction(() => window.wardenConsole?.ready === true, null, { timeout: 15000 });
  }
  return { page, errors, close: () => context.close() };
}

// Collects console errors and uncaught page errors; `allow` filters the expected ones.
export function watchErrors(page) {
  const errors = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') {
      errors.push(`console: ${msg.text()}`);
    }
  });
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('requestfailed', (req) => errors.push(`requestfailed: ${req.url()} ${req.failure()?.errorText}`));
  return errors;
}

export async function screenshot(page, name, { docs = false } = {}) {
  fs.mkdirSync(artifactDir, { recursive: true });
  const file = path.join(artifactDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  // The README's screenshots are refreshed on request, so an ordinary test run leaves the tree clean.
  if (docs && process.env.WARDEN_UPDATE_SCREENSHOTS === '1') {
    fs.mkdirSync(screenshotDir, { recursive: true });
    fs.copyFileSync(file, path.join(screenshotDir, `${name}.png`));
  }
  return file;
}

// One chat turn through the warden; returns the routing headers and the usage.
export async function chat(base, session, messages, { maxTokens = 16 } = {}) {
  const r = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-warden-session': session },
    body: JSON.stringify({ model: MODEL, messages, max_tokens: maxTokens }),
  });
  const text = await r.text();
  if (!r.ok) {
    throw new Error(`chat ${r.status}: ${text.slice(0, 300)}`);
  }
  const json = JSON.parse(text);
  return {
    route: r.headers.get('x-warden-route'),
    replica: r.headers.get('x-warden-replica'),
    usage: json.usage,
    reply: json.choices?.[0]?.message?.content ?? '',
  };
}

// A few multi-turn conversations sharing a system prompt: later turns reuse the cached prefix, first turns
// are computed, so the stats get both kinds of prompt tokens.
export async function conversations(base, { sessions = 4, turns = 3, tag = 'c' } = {}) {
  const system = 'You are a careful coding agent. '.repeat(60);
  const runs = [];
  for (let s = 0; s < sessions; s++) {
    runs.push(
      (async () => {
        const id = `${tag}-${s}-${Date.now()}`;
        const messages = [
          { role: 'system', content: system },
          { role: 'user', content: `Session ${id}: explain the file layout. ${'detail '.repeat(200)}` },
        ];
        const routes = [];
        for (let t = 0; t < turns; t++) {
          const res = await chat(base, id, messages);
          routes.push(res);
          messages.push({ role: 'assistant', content: res.reply || 'ok' });
          messages.push({ role: 'user', content: `Turn ${t + 1}: go on. ${'more '.repeat(40)}` });
        }
        return routes;
      })(),
    );
  }
  return Promise.all(runs);
}

// WCAG contrast ratio of every element matching each selector: its text colour against the first opaque
// background found walking up from it (white if none). {selector: [{text, ratio}, ...]}, [] when nothing
// matches.
export async function contrastRatios(page, selectors) {
  return page.evaluate((sels) => {
    const rgb = (c) => c.match(/[\d.]+/g).map(Number);
    const lum = ([r, g, b]) => {
      const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const background = (el) => {
      for (let e = el; e; e = e.parentElement) {
        const c = rgb(getComputedStyle(e).backgroundColor);
        if (c.length < 4 || c[3] > 0) {
          return c;
        }
      }
      return [255, 255, 255];
    };
    const out = {};
    for (const sel of sels) {
      out[sel] = [...document.querySelectorAll(sel)].map((el) => {
        const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(background(el))];
        return { text: el.textContent.slice(0, 20), ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05) };
      });
    }
    return out;
  }, selectors);
}
