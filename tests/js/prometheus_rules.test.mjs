// The Grafana dashboard and the Prometheus alert rules of deploy/, against Debian's real Prometheus: it
// scrapes a warden (sharing state through a redis-server) and its simulated engine every second; promtool
// checks the rules; after a few conversations every dashboard query and every alert expression, run through
// Prometheus's HTTP API, returns data.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import {
  Child,
  MODEL,
  conversations,
  freePort,
  sourceDir,
  startSim,
  startWarden,
  tempDir,
  waitFor,
  writeConfig,
} from './console_support.mjs';
import { Started, startRedis } from './deploy_support.mjs';

const RULES = path.join(sourceDir, 'deploy', 'prometheus', 'lm-warden.rules.yml');
const DASHBOARD = path.join(sourceDir, 'deploy', 'grafana', 'lm-warden.json');
const started = new Started();
const SIM_BLOCKS = 160;
let prometheus;
let wardenBase;



async function startPrometheus(dir, wardenPort, simPort) {
  const port = await freePort();
  const config = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(
    config,
    `global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: [${JSON.stringify(RULES)}]
scrape_configs:
  - job_name: lm-warden
    static_configs: [{ targets: ["127.0.0.1:${wardenPort}"] }]
  - job_name: vllm
    static_configs: [{ targets: ["127.0.0.1:${simPort}"] }]
`,
  );
  execFileSync('promtool', ['check', 'config', config], { stdio: 'pipe' });
  const child = started.keep(
    new Child('prometheus', 'prometheus', [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ]),
  );
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exited) {
      throw new Error(`prometheus exited:\n${child.output}`);
    }
    return (await fetch(`${base}/-/ready`)).ok;
  }, { timeoutMs: 30000, what: 'prometheus to be ready' });
  return base;
}

async function query(expr) {
  const r = await fetch(`${prometheus}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = await r.json();
  if (body.status !== 'success') {
    throw new Error(`${expr}: ${body.error}`);
  }
  return body.data.result;
}

// Waits (bounded) until every expression returns data; fails listing the ones that never did.
async function expectData(exprs, timeoutMs = 30000) {
  const empty = new Map(exprs.map((e) => [e, 'no data']));
  const deadline = Date.now() + timeoutMs;
  while (empty.size > 0 && Date.now() < deadline) {
    for (const e of [...empty.keys()]) {
      try {
        if ((await query(e)).length > 0) {
          empty.delete(e);
        }
      } catch (err) {
        empty.set(e, err.message);
      }
    }
    if (empty.size > 0) {
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  assert.deepEqual([...empty.entries()], [], 'queries without data');
}

// Every `expr` of the dashboard's panels (rows included), with Grafana's variables given values.
function dashboardQueries() {
  const dash = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8'));
  const out = [];
  const walk = (panels) => {
    for (const p of panels ?? []) {
      walk(p.panels);
      for (const t of p.targets ?? []) {
        out.push(t.expr.replaceAll('$__rate_interval', '30s').replaceAll('$model', '.*'));
      }
    }
  };
  walk(dash.panels);
  return out;
}

// `A > B` → `A > bool B` for the comparison at the top level (outside brackets and strings), so the
// expression gives a value for every series instead of only the firing ones.
function withBool(expr) {
  let depth = 0;
  let quote = null;
  let at = -1;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i];
    if (quote) {
      quote = c === '\\' ? (i++, quote) : c === quote ? null : quote;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if ('({['.includes(c)) {
      depth++;
    } else if (')}]'.includes(c)) {
      depth--;
    } else if (depth === 0 && /[<>=!]/.test(c) && expr[i + 1] !== '~') {
      at = expr[i + 1] === '=' ? i + 2 : i + 1;
      break;
    }
  }
  assert.ok(at > 0, `no comparison at the top level of ${expr}`);
  return `${expr.slice(0, at)} bool${expr.slice(at)}`;
}

before(async () => {
  const dir = tempDir();
  const redisPort = await startRedis(started, dir);
  // 160 blocks of 16 tokens a rank: 4 x 2,560 tokens of GPU cache, which the first conversations stay
  // within and the working-set test's outgrow.
  const sim = await startSim(['--num-gpu-blocks', String(SIM_BLOCKS)]);
  started.keep(sim.child);
  const w = await startWarden(
    writeConfig(dir, sim.url, `state: { redis: redis://127.0.0.1:${redisPort}/0, prefix: "t:" }`),
  );
  started.keep(w.child);
  wardenBase = w.base;
  prometheus = await startPrometheus(dir, w.port, sim.port);
  await conversations(w.base, { sessions: 4, turns: 3 });
});

after(async () => {
  await started.stopAll();
});

test('promtool accepts the alert rules', () => {
  const out = execFileSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
  assert.match(out, /SUCCESS: \d+ rules found/);
});

test('every dashboard query returns data', async () => {
  const exprs = dashboardQueries();
  assert.ok(exprs.length >= 30, `the dashboard has ${exprs.length} queries`);
  await expectData(exprs);
});

test('Prometheus loaded every alert rule, evaluates it without error, and each expression returns data', async () => {
  const alertRules = async () =>
    (await (await fetch(`${prometheus}/api/v1/rules?type=alert`)).json()).data.groups.flatMap((g) => g.rules);
  let rules = await alertRules();
  assert.equal(rules.length, fs.readFileSync(RULES, 'utf8').match(/^\s+- alert: /gm).length);
  // health is "unknown" until a rule's first evaluation, "err" (with lastError) if it failed.
  await waitFor(async () => (rules = await alertRules()).every((r) => r.health !== 'unknown'), {
    what: 'every rule evaluated',
  });
  assert.deepEqual(rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`), []);
  await expectData(rules.map((r) => withBool(r.query)));
});

// The alert's state for the model (inactive when Prometheus lists no alert of that name for it).
async function alertState(name) {
  const alerts = (await (await fetch(`${prometheus}/api/v1/alerts`)).json()).data.alerts;
  return alerts.find((a) => a.labels.alertname === name && a.labels.model === MODEL)?.state ?? 'inactive';
}

test('the working-set alert goes off once the active conversations outgrow GPU cache and host offload', async () => {
  const capacity = 4 * SIM_BLOCKS * 16;
  const ws = async () => (await query(`lm_warden_model_working_set_tokens{model="${MODEL}"}`))[0]?.value[1];
  await waitFor(async () => (await query(`lm_warden_model_kv_capacity_tokens{model="${MODEL}"}`)).length > 0, {
    what: 'the model capacity in Prometheus',
  });
  const [cap] = await query(`lm_warden_model_kv_capacity_tokens + lm_warden_model_offload_capacity_tokens`);
  assert.equal(Number(cap.value[1]), capacity, 'GPU caches of 4 ranks, no host offload');
  assert.ok(Number(await ws()) < capacity, `the first conversations fit (${await ws()} of ${capacity} tokens)`);
  assert.equal(await alertState('LmWardenWorkingSetOverCache'), 'inactive');

  // 16 more conversations of ~850 tokens each: ~17k tokens against 10,240. The rule's `for` keeps it
  // pending rather than firing within the test; pending is its expression holding.
  const run = conversations(wardenBase, { sessions: 16, turns: 2, tag: 'over' });
  await waitFor(async () => (await alertState('LmWardenWorkingSetOverCache')) === 'pending', {
    timeoutMs: 30000,
    intervalMs: 250,
    what: 'LmWardenWorkingSetOverCache to be pending',
  });
  assert.ok(Number(await ws()) > capacity, `the working set (${await ws()} tokens) is over ${capacity}`);
  await run;
});

test('withBool puts bool after the top-level comparison only', () => {
  assert.equal(withBool('up{job="a"} == 0'), 'up{job="a"} == bool 0');
  assert.equal(withBool('sum by (x) (rate(m{a=~"b|c",d!="e"}[5m])) > 0.1'), 'sum by (x) (rate(m{a=~"b|c",d!="e"}[5m])) > bool 0.1');
  assert.equal(withBool('(a > 1 or b) / c >= 2'), '(a > 1 or b) / c >= bool 2');
});
