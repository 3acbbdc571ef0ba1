// The official OpenAI and Anthropic SDKs against a real `lm-warden sim` (instant preset, 4 ranks).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { Child, warden } from './console_support.mjs';

const MODEL = 'sdk-model';
let sim;
let baseURL;
// A second sim whose engine answers with tool calls when a request offers tools: every task gets tool
// rounds (mean 50), every round several calls when it can, no subagent unless asked for.
let toolSim;
let toolURL;

before(async () => {
  sim = new Child('sim', warden(), ['sim', '--port', '0', '--data-parallel-size', '4', '--preset', 'instant',
    '--max-model-len', '8192', '--served-model-name', MODEL, '--seed', '3', '--log-level', 'warn']);
  toolSim = new Child('sim-tools', warden(), ['sim', '--port', '0', '--data-parallel-size', '2', '--preset', 'instant',
    '--max-model-len', '8192', '--served-model-name', MODEL, '--seed', '3', '--log-level', 'warn',
    '--tool-rounds', '50', '--tool-parallel', '1', '--tool-subagent', '0']);
  baseURL = `http://127.0.0.1:${await sim.port()}`;
  toolURL = `http://127.0.0.1:${await toolSim.port()}`;
});

after(async () => {
  await sim?.stop();
  await toolSim?.stop();
});

const openai = (headers = {}, url = baseURL) => new OpenAI({ baseURL: `${url}/v1`, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });
const anthropic = (headers = {}, url = baseURL) => new Anthropic({ baseURL: url, apiKey: 'dummy', defaultHeaders: headers, maxRetries: 0 });

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

// ---- tool calls ------------------------------------------------------------------------------------

const schema = (props, required) => ({ type: 'object', properties: props, required });
const STR = { type: 'string' };
const claudeTools = [
  { name: 'Bash', description: 'Run a command', input_schema: schema({ command: STR, description: STR }, ['command']) },
  { name: 'Read', description: 'Read a file', input_schema: schema({ file_path: STR }, ['file_path']) },
  { name: 'Write', description: 'Write a file', input_schema: schema({ file_path: STR, content: STR }, ['file_path', 'content']) },
  { name: 'Agent', description: 'Start a subagent', input_schema: schema({ description: STR, prompt: STR }, ['description', 'prompt']) },
];
const SYSTEM = 'You are a coding agent.\nPrimary working directory: /work/proj\n';

// The first request of a task, then the same task after the listing it asked for.
function anthropicTurns(prompt) {
  const first = { model: MODEL, max_tokens: 2000, system: SYSTEM, tools: claudeTools, messages: [{ role: 'user', content: prompt }] };
  const after = (reply) => ({
    ...first,
    messages: [...first.messages, { role: 'assistant', content: reply.content },
      { role: 'user', content: reply.content.map((b) => ({ type: 'tool_result', tool_use_id: b.id, content: 'notes.txt\nmain.py\nREADME.md' })) }],
  });
  return { first, after };
}

test('anthropic: tool_use answers, streaming and not, the same calls either way', async () => {
  const { first, after } = anthropicTurns('look around this project');
  const m = await anthropic({}, toolURL).messages.create(first);
  assert.equal(m.stop_reason, 'tool_use');
  assert.equal(m.content[0].type, 'tool_use');
  assert.equal(m.content[0].name, 'Bash');
  assert.equal(m.content[0].input.command, 'ls');
  assert.match(m.content[0].id, /^toolu_[0-9a-f]{24}$/);
  assert.ok(m.usage.output_tokens > 5);
  // The listing showed files: several reads at once (--tool-parallel 1), each of a file it showed.
  const reads = await anthropic({}, toolURL).messages.create(after(m));
  assert.equal(reads.stop_reason, 'tool_use');
  assert.ok(reads.content.length >= 2, `${reads.content.length} calls`);
  for (const b of reads.content) {
    assert.equal(b.name, 'Read');
    assert.match(b.input.file_path, /^\/work\/proj\/(notes\.txt|main\.py|README\.md)$/);
  }
  // Streaming: input_json_delta events build the same inputs; the SDK parses them.
  const stream = anthropic({}, toolURL).messages.stream(after(m));
  const deltas = [];
  stream.on('streamEvent', (ev) => {
    if (ev.type === 'content_block_delta') deltas.push(ev.delta.type);
  });
  const final = await stream.finalMessage();
  assert.ok(deltas.length > 0 && deltas.every((t) => t === 'input_json_delta'));
  assert.equal(final.stop_reason, 'tool_use');
  assert.deepEqual(final.content.map((b) => [b.id, b.name, b.input]), reads.content.map((b) => [b.id, b.name, b.input]));
  assert.equal(final.usage.output_tokens, reads.usage.output_tokens);
});

test('anthropic: a task that asks for a subagent starts one; no tools offered, a text answer', async () => {
  const { first } = anthropicTurns('explore this folder using a subagent');
  const m = await anthropic({}, toolURL).messages.create(first);
  assert.equal(m.content[0].name, 'Agent');
  assert.ok(m.content[0].input.prompt.length > 0);
  const text = await anthropic({}, toolURL).messages.create({ ...first, tools: undefined, max_tokens: 4 });
  assert.equal(text.content[0].type, 'text');
  assert.equal(text.stop_reason, 'max_tokens');
});

const openaiTools = claudeTools.slice(0, 2).map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.input_schema } }));

test('openai chat: tool_calls answers, streaming and not', async () => {
  const request = { model: MODEL, max_tokens: 2000, tools: openaiTools, messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'what files are here?' }] };
  const r = await openai({}, toolURL).chat.completions.create(request);
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls');
  assert.equal(choice.message.content, null);
  const call = choice.message.tool_calls[0];
  assert.equal(call.type, 'function');
  assert.equal(call.function.name, 'Bash');
  assert.equal(JSON.parse(call.function.arguments).command, 'ls');
  // Streaming: the first delta of a call names it, the next ones carry its arguments.
  const stream = await openai({}, toolURL).chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
  const calls = [];
  let finish = null;
  let usage = null;
  let argumentDeltas = 0;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.finish_reason) finish = c.finish_reason;
      for (const d of c.delta.tool_calls ?? []) {
        calls[d.index] ??= { id: d.id, name: d.function.name, arguments: '' };
        if (d.function.arguments) argumentDeltas++;
        calls[d.index].arguments += d.function.arguments ?? '';
      }
    }
  }
  assert.equal(finish, 'tool_calls');
  assert.ok(argumentDeltas > 1, 'arguments come in several deltas');
  assert.deepEqual(calls, choice.message.tool_calls.map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })));
  assert.equal(usage.completion_tokens, r.usage.completion_tokens);
});

test('responses: function_call items, streaming and not', async () => {
  const tools = [{ type: 'function', name: 'exec_command', parameters: schema({ cmd: STR, workdir: STR }, ['cmd']) }];
  const input = [{ role: 'user', content: '<environment_context>\n  <cwd>/work/proj</cwd>\n</environment_context>' },
    { role: 'user', content: 'summarise the project' }];
  const r = await openai({}, toolURL).responses.create({ model: MODEL, tools, input });
  assert.equal(r.status, 'completed');
  assert.equal(r.output[0].type, 'function_call');
  assert.equal(r.output[0].name, 'exec_command');
  assert.deepEqual(JSON.parse(r.output[0].arguments), { cmd: 'ls' });
  assert.match(r.output[0].call_id, /^call_/);
  // The next request carries the call and its output: the calls read what the listing showed.
  const next = [...input, ...r.output.map((o) => ({ type: 'function_call', call_id: o.call_id, name: o.name, arguments: o.arguments })),
    ...r.output.map((o) => ({ type: 'function_call_output', call_id: o.call_id, output: 'notes.txt\nmain.py' }))];
  const events = [];
  const stream = await openai({}, toolURL).responses.create({ model: MODEL, tools, input: next, stream: true });
  let completed = null;
  for await (const ev of stream) {
    events.push(ev.type);
    if (ev.type === 'response.completed') completed = ev.response;
  }
  assert.equal(events[0], 'response.created');
  assert.ok(events.includes('response.function_call_arguments.delta'));
  assert.ok(events.includes('response.function_call_arguments.done'));
  assert.ok(completed.output.length >= 2, `${completed.output.length} calls`);
  for (const o of completed.output) {
    assert.equal(o.type, 'function_call');
    assert.match(JSON.parse(o.arguments).cmd, /^head -n 60 (notes\.txt|main\.py)$/);
  }
  const whole = await openai({}, toolURL).responses.create({ model: MODEL, tools, input: next });
  assert.deepEqual(whole.output.map((o) => o.arguments), completed.output.map((o) => o.arguments));
  assert.equal(whole.usage.output_tokens, completed.usage.output_tokens);
});
