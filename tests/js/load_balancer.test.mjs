// deploy/haproxy/lm-warden.cfg in front of two wardens that share conversation homes through a
// redis-server, all started here: conversations run through HAProxy, one warden is killed (SIGKILL) while
// it relays streams, and the conversations go on through the other. Every conversation stays on its
// replica, and the only requests that fail are those the killed warden was relaying at that moment.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';

import {
  Child,
  MODEL,
  freePort,
  sourceDir,
  startSim,
  startWarden,
  tempDir,
  waitFor,
  writeConfig,
} from './console_support.mjs';
import { Started, startRedis } from './deploy_support.mjs';

const EXAMPLE = path.join(sourceDir, 'deploy', 'haproxy', 'lm-warden.cfg');
const SESSIONS = 8;
const TURNS = 6;
const started = new Started();


after(async () => {
  await started.stopAll();
});


// The example config as it ships, with the test's addresses: the bind line and the two server lines.
async function startHaproxy(dir, wardenPorts) {
  const port = await freePort();
  let cfg = fs.readFileSync(EXAMPLE, 'utf8');
  cfg = cfg.replace(/^(\s+bind) :8080$/m, `$1 127.0.0.1:${port}`);
  const servers = [...cfg.matchAll(/^(\s+server \S+) \S+$/gm)];
  assert.equal(servers.length, wardenPorts.length, 'one server line per warden in the example');
  servers.forEach((m, i) => {
    cfg = cfg.replace(m[0], `${m[1]} 127.0.0.1:${wardenPorts[i]}`);
  });
  const file = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(file, cfg);
  execFileSync('haproxy', ['-c', '-q', '-f', file]);
  const lb = started.keep(new Child('haproxy', 'haproxy', ['-db', '-f', file]));
  const base = `http://127.0.0.1:${port}`;
  // Both wardens pass their health check before the run.
  await waitFor(
    async () => {
      if (lb.exited) {
        throw new Error(`haproxy exited:\n${lb.output}`);
      }
      const seen = new Set();
      for (let i = 0; i < 8; i++) {
        const r = await fetch(`${base}/health`);
        seen.add(r.headers.get('x-warden-server'));
      }
      return seen.size === wardenPorts.length;
    },
    { timeoutMs: 20000, what: 'haproxy to reach both wardens' },
  );
  return base;
}

// One streamed turn through the load balancer, put on `log` when it starts. Records what the client saw:
// which warden and replica answered, whether the stream completed, and when it started and ended.
async function turn(base, session, messages, log) {
  const t = { session, start: performance.now(), server: null, replica: null, ok: false, error: null };
  log.push(t);
  try {
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-warden-session': session },
      body: JSON.stringify({ model: MODEL, messages, max_tokens: 24, stream: true }),
    });
    t.server = r.headers.get('x-warden-server');
    t.replica = r.headers.get('x-warden-replica');
    t.route = r.headers.get('x-warden-route');
    t.headerAt = performance.now();
    const body = await r.text();
    t.ok = r.status === 200 && body.includes('data: [DONE]');
    if (!t.ok) {
      t.error = `HTTP ${r.status}: ${body.slice(0, 200)}`;
    }
  } catch (err) {
    t.error = err.cause?.code ?? err.message;
  }
  t.end = performance.now();
  return t;
}

test('a warden killed mid-run: conversations keep their replicas, only its requests in flight fail', async (ctx) => {
  const dir = tempDir();
  const redisPort = await startRedis(started, dir);
  // About 20 ms per output token: each turn streams for half a second, so the kill finds streams.
  const sim = await startSim(['--time-scale', '0.005']);
  started.keep(sim.child);
  const wardens = [];
  for (const name of ['a', 'b']) {
    const wdir = path.join(dir, name);
    fs.mkdirSync(wdir);
    // A generous lookup bound: on a loaded test machine Redis may answer later than the default 5 ms,
    // and a warden would then place a conversation it does not know afresh (docs/deployment.md).
    const state = `state: { redis: redis://127.0.0.1:${redisPort}/0, lookup_timeout: 500ms }`;
    const w = await startWarden(writeConfig(wdir, sim.url, state));
    wardens.push(started.keep(w.child) && w);
  }
  const base = await startHaproxy(dir, wardens.map((w) => w.port));

  const turns = [];
  let killedAt = null;
  const system = 'You are a careful coding agent. '.repeat(40);
  const conversation = async (s) => {
    const id = `lb-${s}-${Date.now()}`;  // the session key: each turn may reach either warden
    const messages = [{ role: 'system', content: system }, { role: 'user', content: `Session ${id}: start.` }];
    for (let k = 0; k < TURNS; k++) {
      const t = await turn(base, id, messages, turns);
      if (!t.ok) {
        await turn(base, id, messages, turns);  // as an agent does: the same turn once more
      }
      messages.push({ role: 'assistant', content: 'ok' }, { role: 'user', content: `Turn ${k + 1}: go on.` });
    }
  };
  const run = Promise.all(Array.from({ length: SESSIONS }, (_, s) => conversation(s)));
  // Kill warden A once every conversation has had two turns and A is relaying a stream now.
  await waitFor(
    () =>
      turns.filter((t) => t.ok).length >= 2 * SESSIONS &&
      turns.some((t) => t.server === 'warden-a' && t.end === undefined && t.headerAt !== undefined),
    { timeoutMs: 30000, intervalMs: 5, what: 'warden A relaying a stream after two turns each' },
  );
  wardens[0].child.proc.kill('SIGKILL');
  killedAt = performance.now();
  await run;

  const failed = turns.filter((t) => !t.ok);
  const inFlightAtKill = (t) => t.start <= killedAt && t.end >= killedAt;
  const atKill = turns.filter(inFlightAtKill);
  const atA = atKill.filter((x) => x.server !== 'warden-b').length;  // a 502 from HAProxy names no warden
  ctx.diagnostic(
    `${turns.length} requests, ${failed.length} failed; in flight at the kill: ${atA} at warden A, ` +
      `${atKill.length - atA} at warden B`,
  );
  const fmt = (ts) => ts.map((x) => `${x.session} ${x.server ?? '-'} ${x.error}`).join('\n');
  assert.ok(atA >= 1, 'warden A was relaying at the kill');
  assert.ok(failed.every(inFlightAtKill), `only requests in flight at the kill fail:\n${fmt(failed)}`);
  assert.ok(failed.every((t) => t.server !== 'warden-b'), `none that warden B answered fails:\n${fmt(failed)}`);
  assert.ok(failed.length <= atA, 'no more failures than requests at warden A');
  // After the kill, warden B answers everything, and every conversation stays on its replica throughout.
  const later = turns.filter((t) => t.start > killedAt);
  assert.ok(later.length >= SESSIONS, `${later.length} turns after the kill`);
  assert.ok(later.every((t) => t.ok && t.server === 'warden-b'), fmt(later.filter((t) => !t.ok)));
  for (let s = 0; s < SESSIONS; s++) {
    const mine = turns.filter((t) => t.ok && t.session.startsWith(`lb-${s}-`));
    assert.equal(mine.length, TURNS);
    assert.equal(new Set(mine.map((x) => x.replica)).size, 1, `conversation ${s}: ${mine.map((x) => `${x.replica} ${x.route} ${x.server}`)}`);
  }
});
