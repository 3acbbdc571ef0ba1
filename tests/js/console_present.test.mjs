// The console's presentation logic (src/gateway/console/web/js/present.js): API JSON → what the pages show.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  binRates,
  binSecondsFor,
  changeErrorText,
  engineSection,
  formatDuration,
  launchBadge,
  launchState,
  logsText,
  logTailText,
  formatPercent,
  modelList,
  parseSpillInput,
  replicaCells,
  routingCard,
  spillLabel,
  statsBuckets,
  statsEnd,
  statsSummary,
  stickyShare,
  workingSetText,
} from '../../src/gateway/console/web/js/present.js';

const replicas = [
  { index: 1, in_flight: 2, new: 1, sticky: 21, spilled_in: 3, client_pinned: 0, running: 2, waiting: 1, kv_used: 0.4, prefix_hit_rate: 0.86, preemptions: 1250, healthy: true, held_tokens: 9800, kv_capacity_tokens: 33600 },
  { index: 0, in_flight: 1, new: 2, sticky: 38, spilled_in: 0, client_pinned: 4, running: 1, waiting: 0, kv_used: 0.125, prefix_hit_rate: 0.822, healthy: false },
];

test('the routing card header labels read as routing.md shows them', () => {
  const card = routingCard(
    { name: 'm', routing: { affinity: true, spill_threshold: 'auto', spill_threshold_resolved: 8, sticky_percent: 100, in_flight: 0, replicas: [] } },
    0,
  );
  assert.deepEqual(card.labels, {
    affinity: 'Affinity on',
    spill: 'Spill threshold 8 (auto)',
    sticky: 'Sticky 100.0%',
    inFlight: 'In flight 0',
  });
});

test('a warden sharing its homes through redis says whether redis is up; one on its own says nothing', () => {
  assert.equal(routingCard({ name: 'm', routing: { replicas: [] } }, 0).sharedStateLabel, '');
  assert.equal(routingCard({ name: 'm', shared_state: null, routing: { replicas: [] } }, 0).sharedStateLabel, '');
  const up = { name: 'm', shared_state: { redis: 'redis://127.0.0.1:6379/0', up: true }, routing: { replicas: [] } };
  assert.equal(routingCard(up, 0).sharedStateLabel, 'Shared state: redis up');
  assert.equal(routingCard({ ...up, shared_state: { up: false } }, 0).sharedStateLabel, 'Shared state: redis down');
});

test('prefix breaks get a header label only once there are some', () => {
  assert.equal(routingCard({ name: 'm', prefix_breaks: 0, routing: { replicas: [] } }, 0).prefixBreaksLabel, '');
  assert.equal(routingCard({ name: 'm', routing: { replicas: [] } }, 0).prefixBreaksLabel, '');
  assert.equal(routingCard({ name: 'm', prefix_breaks: 1234, routing: { replicas: [] } }, 0).prefixBreaksLabel, 'Prefix breaks 1,234');
});

test('an explicit spill threshold has no (auto) suffix and affinity off is shown', () => {
  const card = routingCard({ routing: { affinity: false, spill_threshold: 4, spill_threshold_resolved: 4, replicas } }, 0);
  assert.equal(card.labels.affinity, 'Affinity off');
  assert.equal(card.labels.spill, 'Spill threshold 4');
  assert.equal(spillLabel(12, true), 'Spill threshold 12 (auto)');
});

test('replica rows are ordered by index and formatted per column', () => {
  const card = routingCard({ routing: { replicas } }, 0);
  assert.deepEqual(card.rows.map((r) => r.index), [0, 1]);
  assert.equal(card.rows[0].healthy, false);
  assert.deepEqual(replicaCells(card.rows[0]), ['0', '1', '38', '0', '4', '1 / 0', '12.5%', '82.2%', '–', '–', '–']);
  assert.deepEqual(replicaCells(card.rows[1]), ['1', '2', '21', '3', '0', '2 / 1', '40.0%', '86.0%', '1,250', '9,800 of 33,600 tokens', '–']);
});

test('an ejected replica row says so with its reason; one in routing does not', () => {
  const ejected = { index: 0, healthy: true, ejected: true, ejection: { reason: 'first_byte', until: '2026-11-29T09:21:11Z' } };
  const card = routingCard({ routing: { replicas: [ejected, { index: 1, healthy: true, ejected: false, ejection: null }] } }, 0);
  assert.equal(card.rows[0].ejected, true);
  assert.equal(card.rows[0].ejectionReason, 'first_byte');
  assert.equal(card.rows[1].ejected, false);
  assert.equal(card.rows[1].ejectionReason, '');
});

test('the working set names the conversations other wardens report on the replica', () => {
  const row = { kvCapacityTokens: 33600, heldTokens: 9800 };
  assert.equal(workingSetText(row), '9,800 of 33,600 tokens');
  assert.equal(workingSetText({ ...row, peerConversations: 0 }), '9,800 of 33,600 tokens');
  assert.equal(workingSetText({ ...row, peerConversations: 2 }), '9,800 of 33,600 tokens · 2 at other wardens');
  assert.equal(workingSetText({ ...row, kvCapacityTokens: 0, peerConversations: 2 }), '–');
  assert.equal(workingSetText({ ...row, offloadCapacityTokens: 116496 }), '9,800 of 33,600 + 116,496 host tokens');
});

test('the header shows queued conversations only while admission holds some', () => {
  assert.equal(routingCard({ routing: { replicas: [] } }, 0).queuedLabel, '');
  assert.equal(routingCard({ routing: { admission: { mode: 'auto', queued: 0 }, replicas: [] } }, 0).queuedLabel, '');
  assert.equal(routingCard({ routing: { admission: { mode: 'auto', queued: 1 }, replicas: [] } }, 0).queuedLabel, 'Queued 1 conversation');
  assert.equal(routingCard({ routing: { admission: { mode: 'auto', queued: 12 }, replicas: [] } }, 0).queuedLabel, 'Queued 12 conversations');
});

test('in flight and sticky share fall back to the replicas when the API gives no totals', () => {
  const card = routingCard({ routing: { replicas } }, 0);
  assert.equal(card.inFlight, 3);
  // sticky / (sticky + spilled in) = 59 / 62, as the routing core counts it
  assert.equal(stickyShare(card.rows), 59 / 62);
  assert.equal(card.labels.sticky, 'Sticky 95.2%');
  assert.equal(stickyShare([{ sticky: 0, spilledIn: 0 }]), null);
});

test('missing numbers show as a dash, never as NaN or 0', () => {
  const card = routingCard({ routing: { replicas: [{ index: 0 }] } }, 0);
  assert.deepEqual(replicaCells(card.rows[0]), ['0', '–', '–', '–', '–', '– / –', '–', '–', '–', '–', '–']);
  assert.equal(card.labels.sticky, 'Sticky –');
});

test('the since line names the start time and the age', () => {
  const since = Date.UTC(2026, 10, 29, 9, 0, 0);
  const card = routingCard({ since: since / 1000, routing: { replicas: [] } }, since + 125_000);
  assert.equal(card.sinceText, 'Counters accumulate since the warden started (2026-11-29 09:00:00 UTC, 2 min ago).');
  const iso = routingCard({ since: '2026-11-29T09:00:00Z', routing: {} }, since + 7_500_000);
  assert.match(iso.sinceText, /09:00:00 UTC, 2 h 5 min ago/);
});

test('durations read naturally', () => {
  assert.equal(formatDuration(0), '0 s');
  assert.equal(formatDuration(59.9), '59 s');
  assert.equal(formatDuration(3600), '1 h');
  assert.equal(formatDuration(90000), '1 d 1 h');
  assert.equal(formatDuration(-1), '–');
});

test('the models list accepts an array or {models: [...]}', () => {
  const m = { name: 'a', served_model_name: 'A', routing: { affinity: false, spill_threshold: 'auto', spill_threshold_resolved: 8, replicas } };
  for (const json of [[m], { models: [m] }]) {
    const [row] = modelList(json);
    assert.equal(row.name, 'a');
    assert.equal(row.servedName, 'A');
    assert.equal(row.replicaCount, 2);
    assert.equal(row.healthyCount, 1);
    assert.equal(row.inFlight, 3);
    assert.equal(row.affinity, false);
    assert.equal(row.layout, '2 servers');
  }
  assert.equal(modelList([{ ...m, mode: 'data_parallel', replica_count: 4 }])[0].layout, 'data parallel, 4 ranks');
  assert.deepEqual(modelList({ models: [{ nope: 1 }, null] }), []);
  assert.deepEqual(modelList('garbage'), []);
});

test('the spill threshold input takes auto or a positive whole number', () => {
  assert.deepEqual(parseSpillInput(''), { ok: true, value: 'auto' });
  assert.deepEqual(parseSpillInput(' Auto '), { ok: true, value: 'auto' });
  assert.deepEqual(parseSpillInput('4'), { ok: true, value: 4 });
  for (const bad of ['0', '-3', '2.5', 'four', '1e3']) {
    assert.equal(parseSpillInput(bad).ok, false, bad);
  }
});

test('a refused token says the token is wrong', () => {
  assert.match(changeErrorText(401), /admin token was not accepted/);
  assert.match(changeErrorText(403, 'no admin token configured'), /403/);
  assert.match(changeErrorText(500), /HTTP 500/);
  assert.match(changeErrorText(0), /could not be reached/);
});

test('stats columns are read, bad entries count as zero and bad times are skipped', () => {
  const b = statsBuckets({ series: { t: [100, 'x', 101], prompt_cached: [10, 1, null], prompt_computed: [5, 1, 7], completion: [1, 1, 2], requests: [1, 1, 1] } });
  assert.deepEqual(b, { t: [100, 101], hit: [10, 0], computed: [5, 7], completion: [1, 2], requests: [1, 1] });
  assert.deepEqual(statsBuckets({ series: 'nope' }).t, []);
  assert.deepEqual(statsBuckets(null).t, []);
});

test('the stats window ends after the last second the API covers', () => {
  assert.equal(statsEnd({ end: 1000 }, 5_000_000), 1001);
  assert.equal(statsEnd({}, 5_000_500), 5001);
});

test('binning sums seconds into bins and divides by the bin length', () => {
  const buckets = { t: [940, 995, 996, 999, 1000, 10], hit: [30, 100, 50, 0, 999, 7], computed: [0, 10, 0, 20, 999, 7], completion: [3, 5, 5, 0, 999, 7], requests: [1, 1, 1, 1, 1, 1] };
  // Window [940, 1000): bins of 10 s starting at 940; t=1000 and t=10 are outside.
  const b = binRates(buckets, { endS: 1000, windowS: 60, binSeconds: 10 });
  assert.deepEqual(b.x, [940, 950, 960, 970, 980, 990]);
  assert.deepEqual(b.hit, [3, 0, 0, 0, 0, 15]);
  assert.deepEqual(b.computed, [0, 0, 0, 0, 0, 3]);
  assert.deepEqual(b.completion, [0.3, 0, 0, 0, 0, 1]);
  assert.deepEqual(b.totals, { hit: 180, computed: 30, completion: 13, requests: 4 });
  assert.equal(b.hitRate, 180 / 210);
});

test('bins stay at or under 120 bars', () => {
  assert.equal(binSecondsFor(3600), 30);
  assert.equal(binSecondsFor(900), 10);
  assert.equal(binSecondsFor(300), 5);
  assert.equal(binSecondsFor(60), 1);
});

test('the summary takes the API figures and falls back to the bars', () => {
  const binned = { hitRate: 0.5, totals: { hit: 1, computed: 1, completion: 2 } };
  assert.deepEqual(statsSummary({ summary: { cache_hit_rate: 0.78, prompt_cached: 78, prompt_computed: 22, completion: 9 } }, binned), {
    hitRate: 0.78,
    cached: 78,
    computed: 22,
    completion: 9,
  });
  assert.deepEqual(statsSummary({ summary: { cache_hit_rate: null } }, binned), { hitRate: 0.5, cached: 1, computed: 1, completion: 2 });
});

test('balanced and failover requests, which have no column, are named under the table', () => {
  assert.equal(routingCard({ routing: { replicas } }, 0).otherText, '');
  const card = routingCard({ routing: { replicas: [{ index: 0, balanced: 1200 }, { index: 1, balanced: 3, failover: 1 }] } }, 0);
  assert.equal(card.otherText, 'Not in the columns above: 1,203 balanced with affinity off; 1 retried on another replica (failover).');
  const moved = routingCard({ routing: { replicas: [{ index: 0, sticky: 9 }, { index: 1, rehomed_in: 2 }] } }, 0);
  assert.equal(moved.otherText, 'Not in the columns above: 2 moved off an overloaded home (rehomed).');
});

test('launch states read as words with a tone; unknown ones are shown as given', () => {
  assert.deepEqual(launchState('ready'), { status: 'ready', label: 'Ready', tone: 'ok' });
  assert.deepEqual(launchState('failed'), { status: 'failed', label: 'Failed', tone: 'bad' });
  assert.equal(launchState('starting').tone, 'warn');
  assert.equal(launchState('restarting').label, 'Restarting');
  assert.equal(launchState('stopped').tone, 'muted');
  assert.deepEqual(launchState('paused'), { status: 'paused', label: 'Paused', tone: 'muted' });
  assert.deepEqual(launchState(undefined), { status: 'unknown', label: 'Unknown', tone: 'muted' });
  assert.deepEqual(launchState(42), { status: 'unknown', label: 'Unknown', tone: 'muted' });
});

test('the models list carries a launch badge for launched models only', () => {
  const list = modelList({
    models: [
      { name: 'a', replicas: [], launch: { status: 'failed', status_reason: 'exited with status 2; gave up after 3 starts', engines: [] } },
      { name: 'b', replicas: [], launch: null },
      { name: 'c', replicas: [] },
    ],
  });
  assert.equal(list[0].launch.label, 'Failed');
  assert.equal(list[0].launch.tone, 'bad');
  assert.equal(list[0].launch.reason, 'exited with status 2; gave up after 3 starts');
  assert.equal(list[0].launch.title, 'Engine failed: exited with status 2; gave up after 3 starts');
  assert.equal(list[1].launch, null);
  assert.equal(list[2].launch, null);
  assert.equal(launchBadge({ status: 'ready', status_reason: null }).title, 'Engine ready');
});

test('the Engine section: not launched, or status, reason, processes and the log tail', () => {
  assert.equal(engineSection(null, 0).launched, false);
  assert.match(engineSection(undefined, 0).text, /Not launched by the warden/);
  const view = engineSection(
    {
      status: 'restarting',
      status_reason: 'killed by signal 9; started again (restart 1)',
      log_tail: ['loading', 7, 'killed by signal 9'],
      engines: [
        { name: 'm#0', replicas: [0], state: 'ready', reason: null, pid: 4242, restarts: 0, since_unix_ms: 1_000_000, last_exit: null, command: 'sim --port 1' },
        { name: 'm#1', replicas: [1, 2], state: 'restarting', reason: 'backoff', pid: null, restarts: 1234, since_unix_ms: 0, last_exit: 'killed by signal 9', command: 'sim --port 2' },
        null,
      ],
    },
    1_000_000 + 125_000,
  );
  assert.equal(view.launched, true);
  assert.equal(view.badge.label, 'Restarting');
  assert.equal(view.reason, 'killed by signal 9; started again (restart 1)');
  assert.equal(view.logText, 'loading\nkilled by signal 9');
  assert.equal(view.engines.length, 2);
  assert.deepEqual(
    view.engines.map((e) => [e.name, e.state.label, e.replicas, e.pid, e.restarts, e.since, e.lastExit]),
    [
      ['m#0', 'Ready', '0', '4242', '0', '2 min ago', '–'],
      ['m#1', 'Restarting', '1, 2', '–', '1,234', '–', 'killed by signal 9'],
    ],
  );
  assert.equal(logTailText('x'), '');
});

test('the logs endpoint becomes timed lines with their stream, merged by time across engines', () => {
  const t0 = Date.UTC(2026, 10, 29, 9, 20, 11);
  const one = logsText({
    model: 'm',
    engines: [{ name: 'm', lines: [
      { t_ms: t0, stream: 'warden', text: 'started pid 1: sim' },
      { t_ms: t0 + 1000, stream: 'stdout', text: 'listening on 127.0.0.1:8000' },
      { t_ms: t0 + 2000, stream: 'stderr', text: '<b>not markup</b>' },
      { t_ms: t0 + 3000, stream: 'stderr' },
    ] }],
  });
  assert.equal(one, [
    '09:20:11 warden: started pid 1: sim',
    '09:20:12 stdout: listening on 127.0.0.1:8000',
    '09:20:13 stderr: <b>not markup</b>',
  ].join('\n'));
  const two = logsText({
    engines: [
      { name: 'a', lines: [{ t_ms: t0 + 2000, stream: 'stdout', text: 'a2' }, { t_ms: t0, stream: 'stdout', text: 'a0' }] },
      { name: 'b', lines: [{ t_ms: t0 + 1000, stream: 'stderr', text: 'b1' }] },
      { name: 'c' },
    ],
  });
  // Same-time lines keep their order; otherwise by time.
  assert.equal(two, ['09:20:11 a stdout: a0', '09:20:12 b stderr: b1', '09:20:13 a stdout: a2'].join('\n'));
  assert.equal(logsText(null), '');
  assert.equal(logsText({ engines: 'x' }), '');
});

test('a replica with KV cache events shows its cache use and whether they are live', () => {
  const live = routingCard({ routing: { replicas: [{ index: 0, kv_events: { live: true, cache_use: 0.93 } }] } }, 0);
  assert.equal(replicaCells(live.rows[0]).at(-1), '93.0% · events live');
  const fallback = routingCard({ routing: { replicas: [{ index: 0, kv_events: { live: false, cache_use: null } }] } }, 0);
  assert.equal(replicaCells(fallback.rows[0]).at(-1), '– · estimate');
});
