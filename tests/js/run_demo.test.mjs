// `make run`'s script (scripts/run-demo.sh) with ENGINE_ARGS: the words reach the simulated engines'
// command line, and anything that is not a plain word is refused before anything starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { Child, freePort, MODEL, sourceDir, tempDir, waitFor, warden } from './console_support.mjs';

const script = path.join(sourceDir, 'scripts', 'run-demo.sh');

async function demo(engineArgs, dir) {
  const env = {
    ...process.env,
    SIM_PORT: String(await freePort()),
    WARDEN_PORT: String(await freePort()),
    TIME_SCALE: '10',
    WARDEN_STATE_DIR: path.join(dir, 'state'),
    ENGINE_ARGS: engineArgs,
  };
  return { child: new Child('run-demo', 'bash', [script, warden()], { env }), env };
}

test('ENGINE_ARGS refuses a word that is not plain, before starting anything', async () => {
  const dir = tempDir();
  const { child } = await demo('--kv-offloading-size 16;rm', dir);
  const exited = await child.exitPromise;
  assert.equal(exited.code, 2, child.output);
  assert.match(child.output, /ENGINE_ARGS takes plain words/);
  assert.equal(fs.existsSync(path.join(dir, 'state')), false);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('ENGINE_ARGS reaches the simulated engines: --kv-offloading-size turns their offload counters on', async () => {
  const dir = tempDir();
  const { child, env } = await demo('--kv-offloading-size 16', dir);
  try {
    await waitFor(() => /^Ctrl-C stops/m.test(child.output) || (child.exited && 'exited'), {
      timeoutMs: 60000,
      what: 'the demo to start',
    });
    assert.equal(child.exited, null, child.output);
    const base = `http://127.0.0.1:${env.WARDEN_PORT}`;
    const card = await (await fetch(`${base}/api/models/${MODEL}`)).json();
    const command = card.launch.engines[0].command;
    assert.ok(command.includes('--kv-offloading-size'), JSON.stringify(command));
    const reply = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, max_tokens: 2, messages: [{ role: 'user', content: 'hello' }] }),
    });
    assert.equal(reply.status, 200, await reply.text());
    const metrics = await (await fetch(`http://127.0.0.1:${env.SIM_PORT}/metrics`)).text();
    const queried = [...metrics.matchAll(/^vllm:external_prefix_cache_queries_total\{[^}]*\} (\S+)$/gm)]
      .reduce((sum, m) => sum + Number(m[1]), 0);
    assert.ok(queried > 0, 'no prompt was looked up in the offload tier');
  } finally {
    await child.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
