#!/usr/bin/env node
// How often a new Claude Code conversation is placed where its start (system prompt and tools) is resident,
// with the warden reading the engines' KV cache events and with its own estimate only. Each run is the
// scenario of tests/js/agents.test.mjs ("a Claude Code subagent through the warden"): a fresh warden
// launching the 4-rank sim that answers with tool calls, and two conversations of the real Claude Code in
// one project, each asking for a subagent, the second started when the first ends. For the second
// conversation, each thread's first request (its main thread's and its subagents') counts as placed where
// its start is resident when the engine served at least 80 % of the start's tokens from cache.
//
//   node scripts/start-placement-count.mjs [--runs N] [--modes events,estimate]
//
// Prints one line per run and a summary per mode. Needs the build (build/lm-warden) and the npm clients.
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

import {
  CLAUDE, claudeTurn, mainRequests, startRecorder, startServe, startTokens, tearDown,
} from '../tests/js/agents_support.mjs';
import { tempDir } from '../tests/js/console_support.mjs';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '3' }, modes: { type: 'string', default: 'events,estimate' } },
});
const MODE_YAML = { events: '', estimate: '    kv_events: { enabled: false }\n' };
const PROMPT = 'explore this folder using a subagent, then read notes.txt';

function project(dir) {
  const home = path.join(dir, 'home');
  const cwd = path.join(dir, 'project');
  fs.mkdirSync(home, { recursive: true });
  fs.mkdirSync(cwd, { recursive: true });
  fs.writeFileSync(path.join(cwd, 'notes.txt'), 'The release is planned for Friday.\n');
  fs.writeFileSync(path.join(cwd, 'README.md'), '# Demo\nA small project to explore.\n');
  fs.writeFileSync(path.join(cwd, 'main.py'), 'print("hello")\n');
  return { home, cwd };
}

// Each thread's first request of a conversation: [{thread, replica, route, cached, start}].
async function firstRequests(base, conv) {
  const firsts = new Map();
  for (const r of mainRequests(conv)) {
    const id = r.headers['x-claude-code-agent-id'] ?? 'main';
    if (!firsts.has(id)) {
      firsts.set(id, r);
    }
  }
  const out = [];
  for (const [thread, r] of firsts) {
    out.push({ thread, replica: r.replica, route: r.route, cached: r.usage?.cached ?? 0,
      start: await startTokens(base, r.body) });
  }
  return out;
}

async function oneRun(mode) {
  const dir = tempDir();
  const recorders = [];
  let serve;
  try {
    let base;
    ({ serve, base } = await startServe(dir, ['--tool-rounds', '3.5'], undefined, MODE_YAML[mode]));
    const { home, cwd } = project(dir);
    const convs = [];
    for (const name of ['first', 'second']) {
      const recorder = await startRecorder(base);
      recorders.push(recorder);
      const conv = { name, home, cwd, recorder };
      const res = await claudeTurn(conv, PROMPT, { resume: false, extraEnv: { CLAUDE_CODE_MAX_OUTPUT_TOKENS: '4096' } });
      if (res.code !== 0) {
        return { error: `${name}: exit ${res.code}: ${res.stderr.slice(-300)}` };
      }
      convs.push(conv);
    }
    return { threads: await firstRequests(base, convs[1]) };
  } finally {
    await tearDown(serve, dir, recorders);
  }
}

if (!CLAUDE) {
  console.error('Claude Code is not installed (node_modules/.bin/claude): run scripts/setup.sh');
  process.exit(2);
}
const runs = Number(values.runs);
const summary = {};
for (const mode of values.modes.split(',')) {
  const s = (summary[mode] = { main: [0, 0], subagents: [0, 0], errors: 0 });
  for (let i = 1; i <= runs; i++) {
    const r = await oneRun(mode);
    if (r.error) {
      s.errors++;
      console.log(`${mode} run ${i}: ${r.error}`);
      continue;
    }
    const cells = r.threads.map((t) => {
      const hit = t.cached >= 0.8 * t.start;
      const tally = t.thread === 'main' ? s.main : s.subagents;
      tally[0] += hit ? 1 : 0;
      tally[1] += 1;
      return `${t.thread === 'main' ? 'main' : 'sub'} r${t.replica} ${t.route} ${t.cached}/${t.start}${hit ? '' : ' MISS'}`;
    });
    console.log(`${mode} run ${i}: ${cells.join('; ')}`);
  }
}
for (const [mode, s] of Object.entries(summary)) {
  console.log(`${mode}: main threads ${s.main[0]} of ${s.main[1]} found their start, subagents ` +
    `${s.subagents[0]} of ${s.subagents[1]}; runs that failed ${s.errors}`);
}
