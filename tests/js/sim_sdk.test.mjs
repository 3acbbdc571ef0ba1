// The official OpenAI and Anthropic SDKs against a real `lm-warden sim` (instant preset, 4 ranks).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Child, warden } from './console_support.mjs';

const MODEL = 'sdk-model';
let sim;
let baseURL;

before(async () => {
  sim = new Child('sim', warden(), ['sim', '--port', '0', '--data-parallel-size', '4', '--preset', 'instant',
    '--max-model-len', '8192', '--served-model-name', MODEL, '--seed', '3', '--log-level', 'warn']);
  baseURL = `http://127.0.0.1:${await sim.port()}`;
});

after(async () => {
  await sim?.stop();
});

const openai = (headers = {}) => new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });
const anthropic = (headers = {}) => new Anthropic({ baseURL, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });

test('openai chat completion, not streaming', async () => {
  const r = await openai().chat.completions.create({
    model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'Hello there' }],
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.ok(r.choices[0].message.content.length > 0);
  assert.equal(r.usage.completion_tokens, 5);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
});

test('openai chat completion, streaming with usage', async () => {
  const stream = await openai().chat.completions.create({
    model: MODEL, max_tokens: 6, stream: true, stream_options: { include_usage: true },
    messages: [{ role: 'user', content: 'Stream to me' }],
  });
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  assert.ok(text.length > 0);
  assert.equal(finish, 'length');
  assert.equal(usage.completion_tokens, 6);
});

test('openai completions and responses', async () => {
  const c = await openai().completions.create({ model: MODEL, prompt: 'Once upon', max_tokens: 3 });
  assert.equal(c.usage.completion_tokens, 3);
  const r = await openai().responses.create({ model: MODEL, input: 'Say hi', max_output_tokens: 4 });
  // Capped by max_output_tokens (the instant preset's replies never end by themselves): incomplete.
  assert.equal(r.status, 'incomplete');
  assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  assert.ok(r.output_text.length > 0);
  assert.equal(r.usage.output_tokens, 4);
  const events = [];
  const s = await openai().responses.create({ model: MODEL, input: 'Say hi', max_output_tokens: 2, stream: true });
  for await (const ev of s) events.push(ev.type);
  assert.equal(events[0], 'response.created');
  assert.equal(events.at(-1), 'response.incomplete');
  assert.equal(events.filter((e) => e === 'response.output_text.delta').length, 2);
});

test('anthropic messages, streaming and not', async () => {
  const m = await anthropic().messages.create({
    model: MODEL, max_tokens: 4, system: 'Be brief.', messages: [{ role: 'user', content: 'Hi' }],
  });
  assert.equal(m.type, 'message');
  assert.equal(m.stop_reason, 'max_tokens');
  assert.equal(m.usage.output_tokens, 4);
  assert.equal(typeof m.usage.cache_read_input_tokens, 'number');
  const stream = anthropic().messages.stream({
    model: MODEL, max_tokens: 5, messages: [{ role: 'user', content: 'Hi again' }],
  });
  const types = [];
  stream.on('streamEvent', (ev) => types.push(ev.type));
  const final = await stream.finalMessage();
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.equal(final.usage.output_tokens, 5);
  assert.ok(final.content[0].text.length > 0);
  const count = await anthropic().messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }] });
  assert.ok(count.input_tokens > 0);
});

// Six turns: each prompt extends the previous prompt and reply. Pinned to one rank, later turns find
// nearly all of it cached; moved to a fresh rank every turn, almost nothing is.
async function conversation(rankForTurn, system) {
  const messages = [];
  const cachedFractions = [];
  for (let turn = 0; turn < 6; turn++) {
    messages.push({ role: 'user', content: `Turn ${turn}: please continue the analysis of item ${turn}.` });
    const client = openai({ 'X-data-parallel-rank': String(rankForTurn(turn)) });
    const r = await client.chat.completions.create({
      model: MODEL, max_tokens: 24, messages: [{ role: 'system', content: system }, ...messages],
    });
    messages.push({ role: 'assistant', content: r.choices[0].message.content });
    cachedFractions.push(r.usage.prompt_tokens_details.cached_tokens / r.usage.prompt_tokens);
  }
  return cachedFractions;
}

test('six-turn conversation: cached when pinned to one rank, not when moved', async () => {
  const sticky = await conversation(() => 1, 'You are a careful assistant. '.repeat(40));
  assert.equal(sticky[0], 0);
  for (const f of sticky.slice(1)) assert.ok(f > 0.8, `pinned turn cached only ${f}`);
  // The same shape, but the sixth turn moves to rank 3, which never saw this conversation.
  const movedLast = await conversation((t) => (t < 5 ? 2 : 3), 'You are a thorough reviewer. '.repeat(40));
  for (const f of movedLast.slice(1, 5)) assert.ok(f > 0.8, `pinned turn cached only ${f}`);
  assert.ok(movedLast[5] < 0.1, `turn moved to a fresh rank cached ${movedLast[5]}`);
  // Ranks 0, 2, 3 and back: a new system prompt so rank 1's cache does not help; each turn on a rank
  // that never saw this conversation (turns 3.. reuse ranks, so only the first three are "fresh").
  const moved = [];
  const system2 = 'You are a different assistant. '.repeat(40);
  const messages = [];
  const ranks = [0, 1, 2];
  for (let turn = 0; turn < 3; turn++) {
    messages.push({ role: 'user', content: `Moved turn ${turn}.` });
    const r = await openai({ 'X-data-parallel-rank': String(ranks[turn]) }).chat.completions.create({
      model: MODEL, max_tokens: 24, messages: [{ role: 'system', content: system2 }, ...messages],
    });
    messages.push({ role: 'assistant', content: r.choices[0].message.content });
    moved.push(r.usage.prompt_tokens_details.cached_tokens / r.usage.prompt_tokens);
  }
  for (const f of moved) assert.ok(f < 0.1, `fresh-rank turn cached ${f}`);
});

test('errors reach the SDKs as API errors with the right status', async () => {
  await assert.rejects(
    openai().chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    (e) => e.status === 404,
  );
  await assert.rejects(
    anthropic().messages.create({ model: MODEL, max_tokens: 1, messages: [{ role: 'user', content: 'x' }] },
      { headers: { 'X-data-parallel-rank': '9' } }),
    (e) => e.status === 400,
  );
});
