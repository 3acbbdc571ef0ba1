// The probe's attack on task admission, with real processes: two tenants (API keys) on one replica whose
// warm capacity the attacker's two tasks under way fill. The attacker floods held task starts (its own cap,
// `tenant_queue`, refuses the rest of them 503) and abandons a start every few hundred milliseconds; the
// victim's new task is held like any other, never answered 503, and when one task ends (room for one) it
// goes before every older start of the attacker's, by its tenant's fair share.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

import { modelCard as card, skip, startOneReplica, tearDown } from './agents_support.mjs';
import { MODEL, tempDir, waitFor } from './console_support.mjs';

const ATTACKER = 'attacker-key';
const VICTIM = 'victim-key';
const BASH = [{
  name: 'Bash',
  description: 'Run a command',
  input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
}];

function taskStart(key, session, n, { stream = false, messages } = {}) {
  return {
    method: 'POST',
    headers: {
      'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': key, 'x-warden-session': session,
    },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 1024,
      stream,
      tools: BASH,
      // Long (about 16k tokens): two tasks fill the replica's warm capacity.
      system: `Project ${n} notes. ${'The build keeps its notes here. '.repeat(2000)}`,
      messages: messages ?? [{ role: 'user', content: `List the files of project ${n} in /tmp.` }],
    }),
  };
}

// Reads a streamed body until `pattern` shows up; resolves the text so far.
async function readUntil(res, pattern) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!pattern.test(text)) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    text += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  return text;
}

// Reads a body to its end (or its abort), keeping the connection open meanwhile.
async function drain(res) {
  try {
    for await (const chunk of res.body) {
      void chunk;
    }
  } catch {
    // aborted at the end of the test
  }
}

describe('one tenant flooding held task starts', { skip, timeout: 240000 }, () => {
  const w = { dir: null, serve: null, base: null };
  const open = [];  // held streams, aborted at the end
  before(async () => {
    w.dir = tempDir();
    ({ serve: w.serve, base: w.base } = await startOneReplica(w.dir, {
      top: `api_keys: [${ATTACKER}, ${VICTIM}]\nauth: { reads: false }`,
      routing: '{ admission: { mode: off, max_queue: 8 }, task_admission: { mode: auto, max_wait: 2m, stream_max_wait: 2m } }',
    }));
  });
  after(async () => {
    for (const c of open) {
      c.abort();
    }
    await tearDown(w.serve, w.dir, []);
  });

  test("cannot get the other tenant's new task a 503 nor keep it past its fair share", async () => {
    // The attacker's two tasks under way (the sim answers both prompts with a tool call, and the second
    // one's next turn with text).
    const blockers = {};
    for (const n of [1, 3]) {
      const r = await fetch(`${w.base}/v1/messages`, taskStart(ATTACKER, `blocker-${n}`, n));
      const body = await r.json();
      assert.equal(body.stop_reason, 'tool_use', JSON.stringify(body).slice(0, 300));
      blockers[n] = body;
    }
    assert.equal((await card(w.base)).routing.task_admission.tasks_under_way, 2);

    // The flood: six held starts (four held, its cap; two refused), then starts abandoned as they wait.
    const statuses = [];
    const drained = [];
    for (let k = 0; k < 6; ++k) {
      const c = new AbortController();
      open.push(c);
      const r = await fetch(`${w.base}/v1/messages`, { ...taskStart(ATTACKER, `flood-${k}`, 100 + k, { stream: true }), signal: c.signal });
      statuses.push(r.status);
      drained.push(drain(r));  // read as it comes: a response nobody reads is closed once collected
    }
    assert.deepEqual(statuses.sort(), [200, 200, 200, 200, 503, 503], 'the attacker is held up to its own cap');
    for (let k = 0; k < 5; ++k) {
      const c = new AbortController();
      const r = await fetch(`${w.base}/v1/messages`, { ...taskStart(ATTACKER, `gone-${k}`, 200 + k, { stream: true }), signal: c.signal });
      assert.ok([200, 503].includes(r.status), `abandoned start ${k}: ${r.status}`);
      await new Promise((resolve) => setTimeout(resolve, 300));  // the client's own pace, as the probe's
      c.abort();
    }

    // The victim's new task: held like the others, never refused.
    const vc = new AbortController();
    open.push(vc);
    const victim = await fetch(`${w.base}/v1/messages`, { ...taskStart(VICTIM, 'victim', 7, { stream: true }), signal: vc.signal });
    assert.equal(victim.status, 200, 'held, not refused');
    assert.equal(victim.headers.get('x-warden-route'), 'queued');
    await waitFor(async () => (await card(w.base)).routing.admission.queued_task_starts === 5, {
      timeoutMs: 20000, intervalMs: 100, what: "the attacker's four and the victim's start held",
    });

    // One of the attacker's tasks ends: room for one task, and it is the victim's.
    const b = blockers[3];
    const messages = [
      { role: 'user', content: 'List the files of project 3 in /tmp.' },
      { role: 'assistant', content: b.content },
      { role: 'user', content: b.content.filter((c) => c.type === 'tool_use').map((c) => ({ type: 'tool_result', tool_use_id: c.id, content: 'a.txt' })) },
    ];
    const ended = await (await fetch(`${w.base}/v1/messages`, taskStart(ATTACKER, 'blocker-3', 3, { messages }))).json();
    assert.equal(ended.stop_reason, 'end_turn', JSON.stringify(ended).slice(0, 300));
    const text = await readUntil(victim, /: x-warden-route: /);
    assert.match(text, /: x-warden-route: new\n/, text.slice(-400));
    await waitFor(async () => (await card(w.base)).routing.admission.queued_task_starts === 4, {
      timeoutMs: 10000, intervalMs: 100, what: "only the attacker's starts left held",
    });
  });
});
