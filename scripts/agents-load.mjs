#!/usr/bin/env node
// Real coding agents as the load: N headless Claude Code processes (and optionally Codex), each in its own
// temporary project folder and HOME, running scripted tasks one after the other against a URL (a warden,
// or an engine directly), until every agent has run its tasks or the deadline comes. Then the table of
// `lm-warden bench --workload agentic` from what the processes and the servers measured:
//
//   tasks, task time p50/p95 and tasks/hour   from the processes' own timings (spawn to exit);
//   prefix hits                               vllm:prefix_cache_hits_total (+ external_prefix_cache_hits_total,
//                                             what CPU offload loaded) / _queries_total, before/after,
//                                             summed over --metrics (the engines' /metrics);
//   TTFB p50/p95                              lm_warden_ttfb_seconds histogram before/after (--warden-metrics).
//
// Usage: node scripts/agents-load.mjs --url http://127.0.0.1:8080 --model qwen3-4b-dp4 --agents 8 \
//          [--tasks 3] [--deadline 10m] [--think 2s] [--codex 0] [--metrics URL[,URL]] \
//          [--warden-metrics URL] [--context 32768] [--out FILE.json] [--keep]
// Every child is started by this script and stopped by its pid at the deadline, on Ctrl-C and on exit.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { claudeEnv } from './claude-env.mjs';
import { writeCodexHome } from './codex-home.mjs';

const sourceDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// Tasks that make an agent read, list and search its project, and one that asks for a subagent. Against
// an engine that answers with text only, each is a single request; against one that answers with tool
// calls, each is an agent loop. Nothing here asks for a write, an edit or a network command.
const TASKS = [
  'Read notes.txt and summarize it in one sentence.',
  'List the files in this folder and say which one is the largest.',
  'Use a subagent to explore this folder, then tell me what src/main.py does.',
  "Search the project for the word 'config' and say where it appears.",
  'Read README.md and src/util.py, then say how they relate.',
];

const PROJECT = {
  'README.md': '# Inventory\n\nA small tool that reads a config file and prints the stock levels.\n',
  'notes.txt': 'Meeting notes: the config loader should accept YAML; the report needs totals per shelf.\n',
  'src/main.py': 'from util import load_config\n\n\ndef main():\n    config = load_config("stock.yaml")\n'
    + '    for shelf, items in config.items():\n        print(shelf, sum(items.values()))\n',
  'src/util.py': 'import yaml\n\n\ndef load_config(path):\n    with open(path) as f:\n'
    + '        return yaml.safe_load(f)\n',
  'stock.yaml': 'shelf_a:\n  bolts: 40\n  nuts: 55\nshelf_b:\n  screws: 120\n',
};

function usage(message) {
  if (message) {
    console.error(`agents-load: ${message}`);
  }
  console.error('usage: node scripts/agents-load.mjs --url URL --model NAME [--agents N] [--tasks K] '
    + '[--deadline 10m] [--think 2s] [--codex N] [--metrics URL,...] [--warden-metrics URL] [--context TOKENS] '
    + '[--out FILE.json] [--keep]');
  process.exit(2);
}

// "90", "90s", "10m", "500ms", "1h" -> seconds.
function seconds(text) {
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(String(text).trim());
  if (!m) {
    usage(`'${text}' is not a duration (90, 90s, 10m, 500ms)`);
  }
  const scale = { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] ?? 's'];
  return Number(m[1]) * scale;
}

function parseArgs(argv) {
  const o = {
    agents: 4, tasks: 3, deadline: 600, think: 2, codex: 0, metrics: [], wardenMetrics: null, context: 32768,
    out: null, keep: false,
  };
  for (let i = 0; i < argv.length; ++i) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) {
        usage(`${flag} needs a value`);
      }
      return argv[++i];
    };
    switch (flag) {
      case '--url': o.url = value().replace(/\/+$/, ''); break;
      case '--model': o.model = value(); break;
      case '--agents': o.agents = Number(value()); break;
      case '--tasks': o.tasks = Number(value()); break;
      case '--deadline': o.deadline = seconds(value()); break;
      case '--think': o.think = seconds(value()); break;
      case '--codex': o.codex = Number(value()); break;
      case '--metrics': o.metrics.push(...value().split(',').filter(Boolean)); break;
      case '--warden-metrics': o.wardenMetrics = value(); break;
      case '--context': o.context = Number(value()); break;
      case '--out': o.out = value(); break;
      case '--keep': o.keep = true; break;
      case '--help': case '-h': usage(); break;
      default: usage(`unknown option ${flag}`);
    }
  }
  if (!o.url || !o.model) {
    usage('--url and --model are required');
  }
  for (const [name, v, min, max] of [['--agents', o.agents, 1, 256], ['--tasks', o.tasks, 1, 1000],
    ['--codex', o.codex, 0, 256], ['--context', o.context, 1024, 10_000_000]]) {
    if (!Number.isInteger(v) || v < min || v > max) {
      usage(`${name} must be an integer from ${min} to ${max}`);
    }
  }
  if (o.codex > o.agents) {
    usage('--codex counts agents run by Codex among --agents');
  }
  return o;
}

function agentBinary(name) {
  const bin = path.join(sourceDir, 'node_modules', '.bin', name);
  if (!fs.existsSync(bin)) {
    console.error(`agents-load: ${bin} is missing: run scripts/setup.sh (npm ci)`);
    process.exit(2);
  }
  return bin;
}

// Children alive, by pid: stopped at the deadline, on a signal and on exit.
const children = new Map();

function stopChildren(signal = 'SIGTERM') {
  for (const child of children.values()) {
    try {
      // Each agent runs in its own process group (detached): its own children go with it.
      process.kill(-child.pid, signal);
    } catch {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    }
  }
}

// Runs one agent process to its end (or until stopped); resolves with its exit code, output and time.
function run(file, args, { cwd, env }) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    children.set(child.pid, child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr = (stderr + d).slice(-4000); });
    const done = (code) => {
      children.delete(child.pid);
      resolve({ code, stdout, stderr, seconds: (performance.now() - started) / 1000 });
    };
    child.on('error', () => done(-1));
    child.on('close', (code) => done(code ?? -1));
  });
}

function makeProject(dir) {
  for (const [name, text] of Object.entries(PROJECT)) {
    const file = path.join(dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  }
}

function codexEnv(o, home) {
  return writeCodexHome(home, { model: o.model, contextWindow: o.context, url: o.url });
}

// One agent: its tasks in order, the first a new session, the next ones continuing it, a pause between.
async function agent(o, index, root, deadlineAt, results) {
  const codex = index < o.codex;
  const home = path.join(root, `agent-${index}`, 'home');
  const cwd = path.join(root, `agent-${index}`, 'project');
  fs.mkdirSync(home, { recursive: true });
  makeProject(cwd);
  const env = codex
    ? codexEnv(o, home)
    : claudeEnv(home, {
        model: o.model,
        contextWindow: o.context,
        url: o.url,
        maxOutputTokens: process.env.CLAUDE_CODE_MAX_OUTPUT_TOKENS ?? '4096',
      });
  const bin = agentBinary(codex ? 'codex' : 'claude');
  for (let t = 0; t < o.tasks && performance.now() < deadlineAt; ++t) {
    const prompt = TASKS[(index + t) % TASKS.length];
    let args;
    if (codex) {
      args = t === 0 ? ['exec', '--skip-git-repo-check', prompt]
        : ['exec', 'resume', '--last', '--skip-git-repo-check', prompt];
    } else {
      args = [...(t === 0 ? [] : ['-c']), '-p', prompt, '--output-format', 'json', '--model', o.model];
    }
    const started = performance.now();
    const res = await run(bin, args, { cwd, env });
    const ended = performance.now();
    const cut = ended >= deadlineAt;  // stopped at the deadline: not a task that ended
    results.push({
      agent: index, client: codex ? 'codex' : 'claude', task: t, ok: res.code === 0 && !cut, cut,
      started: started / 1000, ended: ended / 1000, seconds: res.seconds,
      error: res.code === 0 || cut ? null : res.stderr.slice(-300) || res.stdout.slice(-300),
    });
    if (o.think > 0 && t + 1 < o.tasks) {
      await new Promise((r) => { setTimeout(r, Math.min(o.think * 1000, Math.max(0, deadlineAt - performance.now()))); });
    }
  }
}

// Prometheus text exposition -> [{name, labels, value}].
function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+([^\s]+)/.exec(line);
    if (m) {
      out.push({ name: m[1], labels: m[2] ?? '', value: Number(m[3]) });
    }
  }
  return out;
}

async function scrape(url) {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(10000) });
    return res.ok ? parseMetrics(await res.text()) : null;
  } catch {
    return null;
  }
}

// Prefix-cache counters summed over the engines' /metrics.
async function prefixCounters(urls) {
  const c = { hits: 0, queries: 0, ok: urls.length > 0 };
  for (const url of urls) {
    const series = await scrape(url);
    if (!series) {
      c.ok = false;
      continue;
    }
    for (const s of series) {
      // Tokens a KV connector (CPU offload) loaded instead of computing them are hits too.
      if (s.name === 'vllm:prefix_cache_hits_total' || s.name === 'vllm:external_prefix_cache_hits_total') {
        c.hits += s.value;
      } else if (s.name === 'vllm:prefix_cache_queries_total') {
        c.queries += s.value;
      }
    }
  }
  return c;
}

// The warden's TTFB histogram: cumulative counts by upper bound, summed over models.
async function ttfbBuckets(url) {
  const buckets = new Map();
  const series = url ? await scrape(url) : null;
  for (const s of series ?? []) {
    if (s.name !== 'lm_warden_ttfb_seconds_bucket') {
      continue;
    }
    const le = /le="([^"]+)"/.exec(s.labels)?.[1];
    const bound = le === '+Inf' ? Infinity : Number(le);
    buckets.set(bound, (buckets.get(bound) ?? 0) + s.value);
  }
  return series ? buckets : null;
}

// Quantile of the histogram delta, interpolated inside the bucket as Prometheus' histogram_quantile does.
function histogramQuantile(before, after, q) {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => after.get(b) - (before.get(b) ?? 0));
  const total = counts[counts.length - 1] ?? 0;
  if (!(total > 0)) {
    return null;
  }
  const rank = q * total;
  for (let i = 0; i < bounds.length; ++i) {
    if (counts[i] >= rank) {
      if (bounds[i] === Infinity) {
        return bounds[i - 1] ?? null;
      }
      const lower = i === 0 ? 0 : bounds[i - 1];
      const below = i === 0 ? 0 : counts[i - 1];
      const inside = counts[i] - below;
      return inside > 0 ? lower + ((bounds[i] - lower) * (rank - below)) / inside : bounds[i];
    }
  }
  return null;
}

// NumPy's default percentile (linear between closest ranks), as the bench's table computes it.
function percentile(values, p) {
  if (values.length === 0) {
    return null;
  }
  const v = [...values].sort((a, b) => a - b);
  const rank = (p / 100) * (v.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.min(lo + 1, v.length - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - lo);
}

const fmt = (v, d) => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : v.toFixed(d));

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'agents-load-'));
  const onSignal = () => {
    console.error('agents-load: interrupted, stopping the agents');
    stopChildren('SIGTERM');
    setTimeout(() => { stopChildren('SIGKILL'); process.exit(130); }, 3000).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', () => stopChildren('SIGKILL'));

  const prefixBefore = await prefixCounters(o.metrics);
  const ttfbBefore = await ttfbBuckets(o.wardenMetrics);
  const began = performance.now();
  const deadlineAt = began + o.deadline * 1000;
  // At the deadline every agent still running is stopped (by pid); what it was doing does not count.
  const timer = setTimeout(() => {
    console.error(`agents-load: deadline of ${o.deadline} s reached, stopping ${children.size} agent(s)`);
    stopChildren('SIGTERM');
    setTimeout(() => stopChildren('SIGKILL'), 3000).unref();
  }, o.deadline * 1000);
  const results = [];
  console.error(`agents-load: ${o.agents} agent(s) (${o.codex} Codex), ${o.tasks} task(s) each, against ${o.url}, `
    + `deadline ${o.deadline} s, projects in ${root}`);
  await Promise.all(Array.from({ length: o.agents }, (_, i) => agent(o, i, root, deadlineAt, results)));
  clearTimeout(timer);
  const elapsed = (performance.now() - began) / 1000;
  const prefixAfter = await prefixCounters(o.metrics);
  const ttfbAfter = await ttfbBuckets(o.wardenMetrics);

  const done = results.filter((r) => r.ok);
  const times = done.map((r) => r.seconds);
  const hitsDelta = prefixAfter.hits - prefixBefore.hits;
  const queriesDelta = prefixAfter.queries - prefixBefore.queries;
  const row = {
    policy: 'agents',
    sessions: o.agents,
    tasks: done.length,
    failed: results.filter((r) => !r.ok && !r.cut).length,
    cut_at_deadline: results.filter((r) => r.cut).length,
    tasks_per_hour: elapsed > 0 ? (done.length * 3600) / elapsed : null,
    task_time_p50: percentile(times, 50),
    task_time_p95: percentile(times, 95),
    prefix_hits: prefixBefore.ok && prefixAfter.ok && queriesDelta > 0 ? (100 * hitsDelta) / queriesDelta : null,
    ttfb_p50: ttfbBefore && ttfbAfter ? histogramQuantile(ttfbBefore, ttfbAfter, 0.5) : null,
    ttfb_p95: ttfbBefore && ttfbAfter ? histogramQuantile(ttfbBefore, ttfbAfter, 0.95) : null,
    elapsed_s: elapsed,
  };
  console.log('| Agents | Tasks | Failed | Tasks/h | Task p50 (s) | Task p95 (s) | Prefix hits (%) | TTFB p50 (s) '
    + '| TTFB p95 (s) |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  console.log(`| ${row.sessions} | ${row.tasks} | ${row.failed} | ${fmt(row.tasks_per_hour, 0)} | `
    + `${fmt(row.task_time_p50, 1)} | ${fmt(row.task_time_p95, 1)} | ${fmt(row.prefix_hits, 1)} | `
    + `${fmt(row.ttfb_p50, 2)} | ${fmt(row.ttfb_p95, 2)} |`);
  for (const r of results.filter((x) => x.error).slice(0, 3)) {
    console.error(`agents-load: agent ${r.agent} task ${r.task} (${r.client}) failed: ${r.error}`);
  }
  if (o.out) {
    fs.writeFileSync(o.out, `${JSON.stringify({ rows: [row], tasks: results, meta: {
      tool: 'scripts/agents-load.mjs', url: o.url, model: o.model, agents: o.agents, codex: o.codex,
      tasks_per_agent: o.tasks, deadline_s: o.deadline, think_s: o.think, metrics: o.metrics,
      warden_metrics: o.wardenMetrics,
    } }, null, 2)}\n`);
    console.error(`wrote ${o.out}`);
  }
  if (!o.keep) {
    fs.rmSync(root, { recursive: true, force: true });
  }
  process.exitCode = row.failed > 0 ? 1 : 0;
}

main().catch((e) => {
  console.error(`agents-load: ${e.stack ?? e}`);
  stopChildren('SIGKILL');
  process.exit(1);
});
