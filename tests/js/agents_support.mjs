// What the tests that run the real agent clients share: the clients from npm, a real `lm-warden serve`
// launching `lm-warden sim` at a time scale, a recording proxy in front of it, headless turns and the
// teardown. Used by agents.test.mjs and claude_interactive.test.mjs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { claudeEnv } from '../../scripts/claude-env.mjs';

import {
  ADMIN_TOKEN, Child, freePort, MODEL, SERVED_NAME, sourceDir, tempDir, waitFor, warden, writeConfig,
} from './console_support.mjs';

export const MAX_MODEL_LEN = Number(process.env.WARDEN_AGENTS_MAX_MODEL_LEN ?? 32768);
export const TIME_SCALE = 20;
export const TURN_TIMEOUT_MS = 120000;

// The platform binaries the npm wrappers install (`node_modules/.bin/*` point at them).
export function agentBinary(name) {
  const bin = path.join(sourceDir, 'node_modules', '.bin', name);
  return fs.existsSync(bin) ? bin : null;
}
export const CLAUDE = agentBinary('claude');
export const CODEX = agentBinary('codex');
const missing = [!CLAUDE && 'claude', !CODEX && 'codex'].filter(Boolean);
const notInstalled = missing.length ? `npm packages not installed (${missing.join(', ')}): run scripts/setup.sh` : '';
export const skip = notInstalled || false;
// Skipped on a machine without the clients, but under CI (the CI variable set), where scripts/setup.sh
// installs them, a missing client is a failure, not a green skip.
if (notInstalled && process.env.CI) {
  test('the agent clients are installed (CI is set)', () => {
    assert.fail(notInstalled);
  });
}

// The model entry's launch section: the warden starts the sim on the replicas' port and supervises it.
// `extra`: more sim arguments (e.g. --tool-rounds, so the sim answers with tool calls).
export function launchYaml(extra = [], maxModelLen = MAX_MODEL_LEN) {
  const more = extra.map((a) => `, "${a}"`).join('');
  return `    launch:
      command: ["\${WARDEN_BINARY}", sim, --port, "\${PORT}", --data-parallel-size, "\${DP_SIZE}",
                --preset, a4000-qwen3-4b, --time-scale, "${TIME_SCALE}", --max-model-len, "${maxModelLen}",
                --served-model-name, "\${SERVED_MODEL_NAME}"${more}]
      health_timeout: 30s
      stop_grace: 2s
`;
}

// Starts `lm-warden serve` launching the 4-rank sim in `dir`; resolves {serve, base} once all 4 are healthy.
// `modelMore`: more lines of the model's entry (e.g. its `kv_events`).
export async function startServe(dir, simArgs = [], maxModelLen = MAX_MODEL_LEN, modelMore = '') {
  const launch = launchYaml(simArgs, maxModelLen) + modelMore;
  const config = writeConfig(dir, `http://127.0.0.1:${await freePort()}`, '', launch);
  const serve = new Child('serve', warden(), ['serve', '--config', config]);
  const base = `http://127.0.0.1:${await serve.port()}`;
  await waitFor(
    async () => {
      const r = await fetch(`${base}/api/models/${encodeURIComponent(MODEL)}`);
      const m = r.ok ? await r.json() : null;
      return m?.healthy_replicas === 4;
    },
    { timeoutMs: 40000, intervalMs: 200, what: 'the launched sim to serve 4 healthy replicas' },
  );
  return { serve, base };
}

// Usage of one reply, whichever API: Anthropic SSE (message_start / message_delta), Responses SSE
// (response.completed) or a plain JSON body.
function usageOf(text) {
  const usage = {};
  const take = (u) => {
    if (!u) {
      return;
    }
    usage.input = u.input_tokens ?? usage.input;
    usage.output = u.output_tokens ?? usage.output;
    usage.cached = u.cache_read_input_tokens ?? u.input_tokens_details?.cached_tokens ?? usage.cached;
  };
  for (const line of text.split('\n')) {
    if (!line.startsWith('data:')) {
      continue;
    }
    try {
      const ev = JSON.parse(line.slice(5));
      take(ev.message?.usage);
      take(ev.usage);
      take(ev.response?.usage);
    } catch {
      // not JSON ([DONE], keep-alives)
    }
  }
  if (Object.keys(usage).length === 0) {
    try {
      take(JSON.parse(text).usage);
    } catch {
      // not JSON
    }
  }
  return usage;
}

// Forwards everything to `target` unchanged and records each exchange.
export async function startRecorder(target) {
  const records = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const rec = { method: req.method, url: req.url, headers: req.headers, body: null, status: 0 };
      try {
        rec.body = JSON.parse(body.toString());
      } catch {
        // not JSON
      }
      records.push(rec);
      const up = http.request(
        `${target}${req.url}`,
        { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
        (upRes) => {
          rec.status = upRes.statusCode;
          rec.replica = upRes.headers['x-warden-replica'];
          rec.route = upRes.headers['x-warden-route'];
          res.writeHead(upRes.statusCode, upRes.headers);
          res.flushHeaders();  // as they came: a client may time out waiting for them
          const reply = [];
          upRes.on('data', (c) => {
            reply.push(c);
            res.write(c);
          });
          upRes.on('end', () => {
            rec.reply = Buffer.concat(reply).toString();
            rec.usage = usageOf(rec.reply);
            res.end();
          });
        },
      );
      up.on('error', (err) => {
        rec.error = err.message;
        res.destroy(err);
      });
      up.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => {
    server.close();
    server.closeAllConnections();
  };
  return { records, url: `http://127.0.0.1:${server.address().port}`, close };
}

// Agents still running (a failed conversation does not wait for the others); killed at the end.
const running = new Set();

// Runs an agent to completion within a deadline; resolves {code, stdout, stderr}.
export function run(file, args, { cwd, env, timeoutMs = TURN_TIMEOUT_MS }) {
  return new Promise((resolve) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    running.add(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${timeoutMs} ms]`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('exit', (code, signal) => {
      running.delete(child);
      clearTimeout(timer);
      resolve({ code: code ?? signal, stdout, stderr });
    });
  });
}

export function claudeTurn(conv, prompt, { resume, headers, extraEnv = {} }) {
  const args = [...(resume ? ['-c'] : []), '-p', prompt, '--output-format', 'json', '--model', MODEL];
  const env = {
    ...claudeEnv(conv.home, {
      model: MODEL,
      contextWindow: MAX_MODEL_LEN,
      url: conv.recorder.url,
      maxOutputTokens: process.env.CLAUDE_CODE_MAX_OUTPUT_TOKENS,
    }),
    ...extraEnv,
  };
  if (headers) {
    env.ANTHROPIC_CUSTOM_HEADERS = headers;
  }
  return run(CLAUDE, args, { cwd: conv.cwd, env });
}

// The agent loop's own requests (Claude Code also sends small tool-less ones, e.g. for a title).
export const mainRequests = (conv) =>
  conv.recorder.records.filter((r) => r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens') &&
    Array.isArray(r.body?.tools) && r.body.tools.length > 0);

export function describeRun(what, res) {
  return `${what}: exit ${res.code}\nstdout: ${res.stdout.slice(-1500)}\nstderr: ${res.stderr.slice(-1500)}`;
}

async function countTokens(base, body) {
  const r = await fetch(`${base}/v1/messages/count_tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'dummy' },
    body: JSON.stringify({ model: MODEL, ...body }),
  });
  const json = await r.json();
  assert.ok(r.ok && Number.isInteger(json.input_tokens), `count_tokens ${r.status}: ${JSON.stringify(json)}`);
  return json.input_tokens;
}

// Kills the agents still running, closes the recorders, stops the warden (which stops the sim it launched)
// and removes the test's folder.
export async function tearDown(serve, dir, recorders) {
  for (const child of running) {
    child.kill('SIGKILL');
  }
  for (const r of recorders) {
    r.close();
  }
  await serve?.stop();
  if (dir) {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// The tokens of a request's system prompt and tools (its start, shared by the conversations of a project).
export async function startTokens(base, body) {
  const one = [{ role: 'user', content: 'x' }];
  return (
    (await countTokens(base, { system: body.system, tools: body.tools, messages: one })) -
    (await countTokens(base, { messages: one }))
  );
}

// A warden launching the sim for the tests of one describe block: started before them, stopped after.
export function useWarden(simArgs = [], maxModelLen = MAX_MODEL_LEN) {
  const w = { dir: null, serve: null, base: null, recorders: [] };
  before(async () => {
    w.dir = tempDir();
    ({ serve: w.serve, base: w.base } = await startServe(w.dir, simArgs, maxModelLen));
  });
  after(() => tearDown(w.serve, w.dir, w.recorders));
  return w;
}

// The model's card from the admin API (null while it does not answer).
export async function modelCard(base) {
  const r = await fetch(`${base}/api/models/${encodeURIComponent(MODEL)}`);
  return r.ok ? r.json() : null;
}

// `lm-warden serve` launching one rank of the sim that answers requests offering tools with tool calls
// (`--tool-rounds 1`), in `dir`: `top`, more top-level lines; `routing`, the model's routing. Resolves
// {serve, base} once the rank is healthy and its KV capacity scraped (what task admission needs).
export async function startOneReplica(dir, { top = '', routing }) {
  const file = path.join(dir, 'warden.yaml');
  fs.writeFileSync(
    file,
    `listen: 127.0.0.1:0
state_dir: ${JSON.stringify(path.join(dir, 'state'))}
admin_token: ${ADMIN_TOKEN}
${top}
metrics: { scrape_interval: 200ms }
models:
  - name: ${MODEL}
    served_model_name: ${SERVED_NAME}
    routing: ${routing}
    replicas: { data_parallel: { url: http://127.0.0.1:${await freePort()}, size: 1 } }
${launchYaml(['--tool-rounds', '1'])}`,
  );
  const serve = new Child('serve', warden(), ['serve', '--config', file]);
  const base = `http://127.0.0.1:${await serve.port()}`;
  await waitFor(async () => {
    const m = await modelCard(base);
    return m?.healthy_replicas === 1 && m.routing.replicas[0].kv_capacity_tokens > 0;
  }, { timeoutMs: 40000, intervalMs: 200, what: 'the launched sim to be healthy and scraped' });
  return { serve, base };
}
