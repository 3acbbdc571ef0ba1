// The real agents from npm, held by task admission for longer than their own request timeouts: Claude Code
// with API_TIMEOUT_MS=4000 and Codex with a 7-second stream idle timeout (no retries) each start a task
// while two tasks under way fill the only replica's warm capacity (the sim answers requests that offer
// tools with tool calls, so a task stays under way until its agent sends the tool's result). The warden
// starts each held stream at once and keeps it alive (Anthropic's ping, the Responses API's keepalive), so
// the agent waits past its timeout without a retry; the test then turns task admission off and the agent
// finishes its turn. Bounds: `max_wait` 3 s would have let the start in early, `stream_max_wait` 2 min
// keeps a kept-alive stream held, so the hold is the test's to end.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { writeCodexHome } from '../../scripts/codex-home.mjs';

import {
  CODEX, MAX_MODEL_LEN, claudeTurn, describeRun, mainRequests, modelCard as card, run, skip, startOneReplica,
  startRecorder, tearDown,
} from './agents_support.mjs';
import { ADMIN_TOKEN, MODEL, tempDir, waitFor } from './console_support.mjs';

const HELD_FOR_MS = 12000;  // three of Claude Code's request timeouts, nearly two of Codex's idle timeouts
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

async function setTaskAdmission(base, mode) {
  const r = await fetch(`${base}/api/models/${encodeURIComponent(MODEL)}/routing`, {
    method: 'PATCH',
    headers: ADMIN,
    body: JSON.stringify({ task_admission: mode }),
  });
  assert.equal(r.status, 200, await r.text());
}

// A task start (a new session's main thread offering a tool) the sim answers with a tool call: its task
// stays under way. The sim's answers are drawn from the prompt, so these prompts block on every run; a task
// that ended instead would teach the warden that tasks are tiny, and nothing would be held.
async function startBlockingTask(base, n) {
  const r = await fetch(`${base}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-warden-session': `blocker-${n}` },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 1024,
      tools: [{ name: 'Bash', description: 'Run a command', input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } }],
      // Long (about 16k tokens): two of them fill most of the replica's warm capacity whatever the warden
      // learns of a task's size from the agents' tasks that end before the next test.
      system: `Project ${n} notes. ${'The build keeps its notes here. '.repeat(2000)}`,
      messages: [{ role: 'user', content: `List the files of project ${n} in /tmp.` }],
    }),
  });
  const body = await r.json();
  assert.equal(r.status, 200, JSON.stringify(body));
  assert.equal(body.stop_reason, 'tool_use', `blocker ${n} got a tool call: ${JSON.stringify(body)}`);
}

// Waits until the agent's task start is held, holds it HELD_FOR_MS, lets it in; returns how long it was held.
async function holdThenRelease(base) {
  await waitFor(async () => (await card(base))?.routing?.admission?.queued_task_starts === 1, {
    timeoutMs: 60000, intervalMs: 100, what: "the agent's task start to be held",
  });
  const heldAt = Date.now();
  await new Promise((resolve) => setTimeout(resolve, HELD_FOR_MS));  // the hold under test, not a sync
  assert.equal((await card(base)).routing.admission.queued_task_starts, 1, 'still held');
  await setTaskAdmission(base, 'off');
  return Date.now() - heldAt;
}

// The held task start of an agent's records: one request, answered 200 through a held stream.
function assertHeldOnce(starts, what) {
  assert.equal(starts.length, 1, `${what}: one task start, no retry (${starts.length})`);
  const [start] = starts;
  assert.equal(start.status, 200, `${what}: ${start.reply?.slice(0, 300)}`);
  assert.equal(start.route, 'queued', `${what}: answered while held`);
  const queued = Number(/: x-warden-queued: ([\d.]+)/.exec(start.reply ?? '')?.[1]);
  assert.ok(queued * 1000 >= HELD_FOR_MS, `${what}: held ${queued} s`);
}

describe('agents held past their request timeouts', { skip, timeout: 420000 }, () => {
  const w = { dir: null, serve: null, base: null, recorders: [] };
  before(async () => {
    w.dir = tempDir();
    ({ serve: w.serve, base: w.base } = await startOneReplica(w.dir, {
      routing: '{ task_admission: { mode: auto, max_wait: 3s, stream_max_wait: 2m } }',
    }));
    await startBlockingTask(w.base, 1);
    await startBlockingTask(w.base, 2);
    const m = await card(w.base);
    assert.equal(m.routing.task_admission.tasks_under_way, 2, JSON.stringify(m.routing.task_admission));
  });
  after(() => tearDown(w.serve, w.dir, w.recorders));

  async function agentDirs(name) {
    const home = path.join(w.dir, name, 'home');
    const cwd = path.join(w.dir, name, 'work');
    fs.mkdirSync(home, { recursive: true });
    fs.mkdirSync(cwd, { recursive: true });
    fs.writeFileSync(path.join(cwd, 'notes.txt'), 'a file to list\n');
    const recorder = await startRecorder(w.base);
    w.recorders.push(recorder);
    return { name, home, cwd, recorder };
  }

  test('Claude Code (API_TIMEOUT_MS=4000) held 12 s finishes its turn with no retry', async () => {
    await setTaskAdmission(w.base, 'auto');
    const conv = await agentDirs('claude');
    const turn = claudeTurn(conv, 'List the files here.', { extraEnv: { API_TIMEOUT_MS: '4000' } });
    await holdThenRelease(w.base);
    const res = await turn;
    assert.equal(res.code, 0, describeRun('claude -p held', res));
    assert.equal(JSON.parse(res.stdout).is_error, false, describeRun('claude -p held', res));
    // A retry would send the first request's messages again.
    const main = mainRequests(conv);
    const first = JSON.stringify(main[0]?.body.messages);
    assertHeldOnce(main.filter((r) => JSON.stringify(r.body.messages) === first), 'claude');
  });

  test('Codex (a 7 s stream idle timeout, no retries) held 12 s finishes its turn', async () => {
    await setTaskAdmission(w.base, 'auto');
    const conv = await agentDirs('codex');
    const env = writeCodexHome(conv.home, {
      model: MODEL, contextWindow: MAX_MODEL_LEN, url: conv.recorder.url, idleTimeoutMs: 7000,
    });
    const turn = run(CODEX, ['exec', '--skip-git-repo-check', 'List the files here.'], { cwd: conv.cwd, env });
    await holdThenRelease(w.base);
    const res = await turn;
    assert.equal(res.code, 0, describeRun('codex exec held', res));
    const responses = conv.recorder.records.filter((r) => r.url.startsWith('/v1/responses'));
    assertHeldOnce(responses.slice(0, 1), 'codex');
    assert.ok(responses.every((r) => r.status === 200), responses.map((r) => r.status).join(','));
  });
});
