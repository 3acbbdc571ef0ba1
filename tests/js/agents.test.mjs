// The real agents from npm (package.json pins them) against a real `lm-warden serve` whose config launches
// `lm-warden sim` at a time scale: three concurrent Claude Code conversations of three turns each
// (`claude -p`, then `claude -c -p`, each in its own directory), a later conversation in the first one's
// project sent to the replica that served it (its first turn must find the shared system and tool prefix
// cached: Claude Code's per-conversation billing line, its first system block, is removed), and a
// Codex turn plus a resumed one. A second warden whose sim answers with tool calls runs two Claude Code
// conversations in one project, each of whose prompt starts a subagent: every thread stays on its own
// replica, no prefix break is counted, and the second conversation's main thread and subagent each find
// their system and tool prefix cached on their first request. Every agent talks through its own small
// recording proxy, which passes bytes unchanged and keeps each request's body, the warden's
// x-warden-replica and x-warden-route and the reply's usage. Offline: dummy keys, a temporary HOME per
// agent, telemetry, updates and non-essential traffic off.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { claudeEnv } from '../../scripts/claude-env.mjs';
import { writeCodexHome } from '../../scripts/codex-home.mjs';

import {
  Child, freePort, MODEL, sourceDir, tempDir, waitFor, warden, writeConfig,
} from './console_support.mjs';

const MAX_MODEL_LEN = Number(process.env.WARDEN_AGENTS_MAX_MODEL_LEN ?? 32768);
const TIME_SCALE = 20;
const TURN_TIMEOUT_MS = 120000;

// The platform binaries the npm wrappers install (`node_modules/.bin/*` point at them).
function agentBinary(name) {
  const bin = path.join(sourceDir, 'node_modules', '.bin', name);
  return fs.existsSync(bin) ? bin : null;
}
const CLAUDE = agentBinary('claude');
const CODEX = agentBinary('codex');
const missing = [!CLAUDE && 'claude', !CODEX && 'codex'].filter(Boolean);
const notInstalled = missing.length ? `npm packages not installed (${missing.join(', ')}): run scripts/setup.sh` : '';
const skip = notInstalled || false;
// Skipped on a machine without the clients, but under CI (the CI variable set), where scripts/setup.sh
// installs them, a missing client is a failure, not a green skip.
if (notInstalled && process.env.CI) {
  test('the agent clients are installed (CI is set)', () => {
    assert.fail(notInstalled);
  });
}

// The model entry's launch section: the warden starts the sim on the replicas' port and supervises it.
// `extra`: more sim arguments (e.g. --tool-rounds, so the sim answers with tool calls).
function launchYaml(extra = []) {
  const more = extra.map((a) => `, "${a}"`).join('');
  return `    launch:
      command: ["\${WARDEN_BINARY}", sim, --port, "\${PORT}", --data-parallel-size, "\${DP_SIZE}",
                --preset, a4000-qwen3-4b, --time-scale, "${TIME_SCALE}", --max-model-len, "${MAX_MODEL_LEN}",
                --served-model-name, "\${SERVED_MODEL_NAME}"${more}]
      health_timeout: 30s
      stop_grace: 2s
`;
}

// Starts `lm-warden serve` launching the 4-rank sim in `dir`; resolves {serve, base} once all 4 are healthy.
async function startServe(dir, simArgs = []) {
  const config = writeConfig(dir, `http://127.0.0.1:${await freePort()}`, '', launchYaml(simArgs));
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
async function startRecorder(target) {
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
function run(file, args, { cwd, env, timeoutMs = TURN_TIMEOUT_MS }) {
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

function claudeTurn(conv, prompt, { resume, headers, extraEnv = {} }) {
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
const mainRequests = (conv) =>
  conv.recorder.records.filter((r) => r.url.startsWith('/v1/messages') && !r.url.includes('count_tokens') &&
    Array.isArray(r.body?.tools) && r.body.tools.length > 0);

function describeRun(what, res) {
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
async function tearDown(serve, dir, recorders) {
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
async function startTokens(base, body) {
  const one = [{ role: 'user', content: 'x' }];
  return (
    (await countTokens(base, { system: body.system, tools: body.tools, messages: one })) -
    (await countTokens(base, { messages: one }))
  );
}

// A warden launching the sim for the tests of one describe block: started before them, stopped after.
function useWarden(simArgs = []) {
  const w = { dir: null, serve: null, base: null, recorders: [] };
  before(async () => {
    w.dir = tempDir();
    ({ serve: w.serve, base: w.base } = await startServe(w.dir, simArgs));
  });
  after(() => tearDown(w.serve, w.dir, w.recorders));
  return w;
}

describe('real agents through the warden', { skip, timeout: 540000 }, () => {
  const w = useWarden();

  async function conversation(name) {
    const home = path.join(w.dir, name, 'home');
    const cwd = path.join(w.dir, name, 'work');
    fs.mkdirSync(home, { recursive: true });
    fs.mkdirSync(cwd, { recursive: true });
    const recorder = await startRecorder(w.base);
    w.recorders.push(recorder);
    return { name, home, cwd, recorder };
  }

  test('Claude Code: three concurrent conversations of three turns, each on one replica, prefix shared', async () => {
    const convs = await Promise.all(['c0', 'c1', 'c2'].map(conversation));
    const prompts = ['Say hello in one short sentence.', 'Now say it in French.', 'And in German, briefly.'];
    await Promise.all(
      convs.map(async (conv) => {
        for (const [i, prompt] of prompts.entries()) {
          const res = await claudeTurn(conv, prompt, { resume: i > 0 });
          assert.equal(res.code, 0, describeRun(`${conv.name} turn ${i + 1}`, res));
          const out = JSON.parse(res.stdout);
          assert.equal(out.is_error, false, describeRun(`${conv.name} turn ${i + 1}`, res));
        }
      }),
    );
    for (const conv of convs) {
      const reqs = mainRequests(conv);
      assert.ok(reqs.length >= 3, `${conv.name}: ${reqs.length} agent requests for three turns`);
      const replicas = new Set(reqs.map((r) => r.replica));
      assert.equal(replicas.size, 1, `${conv.name} stayed on one replica: ${[...replicas]}`);
      assert.ok(reqs.every((r) => r.status === 200), `${conv.name}: ${reqs.map((r) => r.status)}`);
    }

    // A later conversation in the same project as c0 (same home and working directory, so the same system
    // prompt and tools but its own billing line), sent to the replica that served c0 (X-Warden-Replica via
    // Claude Code's ANTHROPIC_CUSTOM_HEADERS): its first turn must find that shared prefix in the cache.
    const c0 = convs[0];
    const replica = mainRequests(c0)[0].replica;
    const conv = { ...(await conversation('later')), home: c0.home, cwd: c0.cwd };
    const res = await claudeTurn(conv, 'Say hi.', { resume: false, headers: `X-Warden-Replica: ${replica}` });
    assert.equal(res.code, 0, describeRun(conv.name, res));
    const first = mainRequests(conv)[0];
    assert.ok(first, `${conv.name} sent an agent request`);
    assert.equal(first.replica, replica, `${conv.name} was sent to replica ${replica}`);
    const session = (r) => r.headers['x-claude-code-session-id'];
    assert.notEqual(session(first), session(mainRequests(c0)[0]), `${conv.name} is a conversation of its own`);
    const prefix = await startTokens(w.base, first.body);
    const cached = first.usage?.cached ?? 0;
    assert.ok(
      cached >= 0.8 * prefix,
      `first turn of ${conv.name} on replica ${first.replica}: ${cached} cached tokens, shared system+tools ` +
        `prefix ${prefix} tokens (usage ${JSON.stringify(first.usage)})`,
    );
  });

  test('Codex: exec and a resumed turn answer briefly', async () => {
    const home = path.join(w.dir, 'codex', 'home');
    const cwd = path.join(w.dir, 'codex', 'work');
    fs.mkdirSync(cwd, { recursive: true });
    const recorder = await startRecorder(w.base);
    w.recorders.push(recorder);
    const env = writeCodexHome(home, { model: MODEL, contextWindow: MAX_MODEL_LEN, url: recorder.url });
    const opts = { cwd, env };
    const first = await run(CODEX, ['exec', '--skip-git-repo-check', 'say hi'], opts);
    assert.equal(first.code, 0, describeRun('codex exec', first));
    const resumed = await run(CODEX, ['exec', 'resume', '--last', '--skip-git-repo-check', 'say bye'], opts);
    assert.equal(resumed.code, 0, describeRun('codex exec resume --last', resumed));
    const replies = recorder.records.filter((r) => r.url.startsWith('/v1/responses'));
    assert.ok(replies.length >= 2, `codex sent ${replies.length} Responses requests`);
    for (const r of replies) {
      assert.equal(r.status, 200, `codex request answered ${r.status}: ${r.reply?.slice(0, 300)}`);
      // The reply ended on its own (response.completed, not response.incomplete at an output cap) and is an
      // agent's reply to "say hi", not one that runs to the context limit (the sim's agent replies: median
      // 250 tokens, p99 about 2,600).
      assert.match(r.reply, /response\.completed/, `the reply ended on its own: ${r.reply?.slice(-300)}`);
      assert.ok((r.usage?.output ?? Infinity) <= 4096, `reply of ${r.usage?.output} output tokens`);
    }
  });
});

// Claude Code's agent-loop requests of one conversation by thread: the main thread (no agent id) and each
// subagent (X-Claude-Code-Agent-Id), in the order they arrived.
function threadsOf(conv) {
  const threads = new Map();
  for (const r of mainRequests(conv)) {
    const id = r.headers['x-claude-code-agent-id'] ?? 'main';
    threads.set(id, [...(threads.get(id) ?? []), r]);
  }
  return threads;
}

describe('a Claude Code subagent through the warden', { skip, timeout: 420000 }, () => {
  // The sim answers a request that offers tools with tool calls (docs/sim.md, Tool calls), and always
  // starts a subagent when the opening prompt asks for one.
  const w = useWarden(['--tool-rounds', '3.5']);

  test('threads stay home, no prefix breaks, and the next conversation reads the shared starts from cache', async () => {
    // One project (the same HOME and working directory, so the same system prompts and tools) and two
    // conversations in it, the second started as soon as the first ends: the first one's threads still
    // count as load on their replicas.
    const home = path.join(w.dir, 'home');
    const cwd = path.join(w.dir, 'project');
    fs.mkdirSync(home, { recursive: true });
    fs.mkdirSync(cwd, { recursive: true });
    fs.writeFileSync(path.join(cwd, 'notes.txt'), 'The release is planned for Friday.\n');
    fs.writeFileSync(path.join(cwd, 'README.md'), '# Demo\nA small project to explore.\n');
    fs.writeFileSync(path.join(cwd, 'main.py'), 'print("hello")\n');
    const prompt = 'explore this folder using a subagent, then read notes.txt';
    const convs = [];
    for (const name of ['first', 'second']) {
      const recorder = await startRecorder(w.base);
      w.recorders.push(recorder);
      const conv = { name, home, cwd, recorder };
      // 4,096 output tokens leave room to compact in a 32k window (docs/agents.md); with the default
      // 32,000 the agent loop compacts on every turn and gives up.
      const extraEnv = { CLAUDE_CODE_MAX_OUTPUT_TOKENS: '4096' };
      const res = await claudeTurn(conv, prompt, { resume: false, extraEnv });
      assert.equal(res.code, 0, describeRun(name, res));
      assert.equal(JSON.parse(res.stdout).is_error, false, describeRun(name, res));
      convs.push(conv);
    }

    for (const conv of convs) {
      const threads = threadsOf(conv);
      const subagents = [...threads.keys()].filter((k) => k !== 'main');
      assert.ok(threads.has('main') && subagents.length >= 1, `${conv.name}: threads ${[...threads.keys()]}`);
      for (const [id, reqs] of threads) {
        const what = `${conv.name} thread ${id}`;
        assert.ok(reqs.every((r) => r.status === 200), `${what}: ${reqs.map((r) => r.status)}`);
        assert.equal(new Set(reqs.map((r) => r.replica)).size, 1, `${what} replicas ${reqs.map((r) => r.replica)}`);
        const later = reqs.slice(1).map((r) => r.route);
        assert.ok(later.every((route) => route === 'sticky'), `${what} routes ${reqs.map((r) => r.route)}`);
      }
    }
    const card = await (await fetch(`${w.base}/api/models/${encodeURIComponent(MODEL)}`)).json();
    assert.equal(card.prefix_breaks, 0, `prefix breaks: ${JSON.stringify(card.sessions)}`);

    // The second conversation's main thread, and a subagent of it, each read their system and tools start
    // from the cache of the replica where the first conversation's thread of that kind ran: the first
    // conversation's subagents returned their results, so they no longer count as load there. (Two
    // subagents started at once spread like any concurrent starts: only one is asserted.)
    const threads = threadsOf(convs[1]);
    const reads = async (first) => {
      const shared = await startTokens(w.base, first.body);
      const cached = first.usage?.cached ?? 0;
      return { ok: cached >= 0.8 * shared, what: `replica ${first.replica} (${first.route}): ${cached} of ${shared}` };
    };
    const main = await reads(threads.get('main')[0]);
    assert.ok(main.ok, `second conversation's main thread, first request on ${main.what} start tokens cached`);
    const subs = [];
    for (const [id, reqs] of threads) {
      if (id !== 'main') {
        subs.push(await reads(reqs[0]));
      }
    }
    assert.ok(
      subs.some((s) => s.ok),
      `a subagent of the second conversation read its start from cache: ${subs.map((s) => s.what).join('; ')}`,
    );
  });
});
