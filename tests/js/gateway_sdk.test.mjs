// The official OpenAI and Anthropic SDKs streaming through `lm-warden serve` in front of `lm-warden sim`,
// unchanged: same text as straight to the engine, the right events, usage, errors as the SDKs' own types.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { MODEL, SERVED_NAME as SERVED, startSim, startWarden, tempDir, writeConfig } from './console_support.mjs';

let dir;
let sim;
let serve;
let simURL;
let wardenURL;

before(async () => {
  dir = tempDir();
  sim = await startSim(['--seed', '7', '--log-level', 'warn']);
  simURL = sim.url;
  serve = await startWarden(writeConfig(dir, simURL));
  wardenURL = serve.base;
});

after(async () => {
  await serve?.child.stop();
  await sim?.child.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const openai = (baseURL) => new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'dummy', maxRetries: 0 });
const anthropic = (baseURL) => new Anthropic({ baseURL, apiKey: 'dummy', maxRetries: 0 });

async function openaiStreamText(client, model, session, extra = {}) {
  const { data: stream, response } = await client.chat.completions
    .create({
      model,
      stream: true,
      max_tokens: 12,
      messages: [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: 'Say something.' }],
      ...extra,
    }, { headers: session ? { 'X-Warden-Session': session } : {} })
    .withResponse();
  let text = '';
  const chunks = [];
  for await (const chunk of stream) {
    chunks.push(chunk);
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  return { text, chunks, response };
}

test('openai chat stream through the warden equals the engine stream', async () => {
  const direct = await openaiStreamText(openai(simURL), SERVED);
  const via = await openaiStreamText(openai(wardenURL), MODEL, 'sdk-openai-1');
  assert.ok(via.text.length > 0);
  assert.equal(via.text, direct.text);
  assert.equal(via.response.headers.get('x-warden-route'), 'new');
  assert.match(via.response.headers.get('x-warden-replica'), /^[0-3]$/);
  // The warden asked the engine for usage but the client did not: no usage chunk reaches it.
  assert.ok(via.chunks.every((c) => !c.usage), 'no usage chunk without stream_options.include_usage');
  const again = await openaiStreamText(openai(wardenURL), MODEL, 'sdk-openai-1');
  assert.equal(again.response.headers.get('x-warden-route'), 'sticky');
  assert.equal(again.response.headers.get('x-warden-replica'), via.response.headers.get('x-warden-replica'));
});

test('openai stream with include_usage keeps the usage chunk', async () => {
  const via = await openaiStreamText(openai(wardenURL), MODEL, 'sdk-openai-2',
    { stream_options: { include_usage: true } });
  const last = via.chunks.at(-1);
  assert.ok(last.usage, 'usage chunk present');
  assert.ok(last.usage.prompt_tokens > 0);
  assert.equal(last.usage.completion_tokens, 12);
});

test('openai non-streaming, models list and errors', async () => {
  const client = openai(wardenURL);
  const r = await client.chat.completions.create({
    model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }],
  });
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.usage.completion_tokens, 5);
  const models = [];
  for await (const m of client.models.list()) {
    models.push(m.id);
  }
  assert.deepEqual(models, [MODEL]);
  await assert.rejects(
    client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof OpenAI.NotFoundError && e.status === 404 && /nope/.test(e.message),
  );
});

test('anthropic messages stream through the warden equals the engine stream', async () => {
  const params = {
    max_tokens: 10,
    system: 'You are terse.',
    messages: [{ role: 'user', content: 'Say something.' }],
  };
  const collect = async (client, model, headers) => {
    const stream = client.messages.stream({ ...params, model }, { headers });
    const types = [];
    stream.on('streamEvent', (e) => types.push(e.type));
    const message = await stream.finalMessage();
    return { message, types };
  };
  const direct = await collect(anthropic(simURL), SERVED, {});
  const via = await collect(anthropic(wardenURL), MODEL, {
    'X-Claude-Code-Session-Id': '0b0b0b0b-1111-2222-3333-444444444444',
    'anthropic-beta': 'interleaved-thinking-2025-05-14',
  });
  const text = (m) => m.content.map((b) => b.text ?? '').join('');
  assert.ok(text(via.message).length > 0);
  assert.equal(text(via.message), text(direct.message));
  assert.equal(via.message.usage.output_tokens, 10);
  assert.deepEqual(via.types, direct.types);
  assert.equal(via.types[0], 'message_start');
  assert.equal(via.types.at(-1), 'message_stop');
});

test('anthropic non-streaming and errors in Anthropic format', async () => {
  const client = anthropic(wardenURL);
  const m = await client.messages.create({
    model: MODEL, max_tokens: 4, messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(m.type, 'message');
  assert.equal(m.usage.output_tokens, 4);
  await assert.rejects(
    client.messages.create({ model: 'claude-nope', max_tokens: 4, messages: [{ role: 'user', content: 'x' }] }),
    (e) => e instanceof Anthropic.NotFoundError && e.status === 404 && e.error?.type === 'error',
  );
});
