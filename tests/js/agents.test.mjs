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
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { writeCodexHome } from '../../scripts/codex-home.mjs';

import {
  MAX_MODEL_LEN, CODEX, skip, startRecorder, run, claudeTurn, mainRequests, describeRun, startTokens, useWarden,
} from './agents_support.mjs';
import { MODEL } from './console_support.mjs';

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
