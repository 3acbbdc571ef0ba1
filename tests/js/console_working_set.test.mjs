// The "Working set" card of the model page (src/gateway/console/web/js/working_set.js): the working set
// against GPU caches and host offload, the rule of thumb in words, the warning, the held task starts.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { routingCard } from '../../src/gateway/console/web/js/present.js';
import { compactTokens, pressure, replicaLevel, workingSetCard } from '../../src/gateway/console/web/js/working_set.js';

// A model JSON as GET /api/models/{name} gives it (docs/api.md).
function model(ws, { replicas = [], queuedTaskStarts = 0 } = {}) {
  return { name: 'm', working_set: ws, routing: { admission: { queued: queuedTaskStarts, queued_task_starts: queuedTaskStarts }, replicas } };
}

// The seed's host: 26 agents of ~58k tokens on seven replicas of ~134k tokens of GPU cache each.
const seed = {
  conversations: 26,
  held_tokens: 26 * 58000,
  typical_tokens: 58000,
  gpu_capacity_tokens: 7 * 134400,
  host_capacity_tokens: 100000,
  capacity_tokens: 7 * 134400 + 100000,
};

test('tokens read as an operator says them', () => {
  assert.equal(compactTokens(0), '0');
  assert.equal(compactTokens(950), '950');
  assert.equal(compactTokens(9800), '9.8k');
  assert.equal(compactTokens(9960), '10k');
  assert.equal(compactTokens(58000), '58k');
  assert.equal(compactTokens(940800), '941k');
  assert.equal(compactTokens(999700), '1.0M');
  assert.equal(compactTokens(1508000), '1.5M');
  assert.equal(compactTokens(-3), '0');
  assert.equal(compactTokens(undefined), '0');
});

test('the working set against GPU cache and host offload', () => {
  assert.equal(pressure(100, 0, 0), 'unknown');
  assert.equal(pressure(100, 200, 0), 'within');
  assert.equal(pressure(200, 200, 0), 'within', 'a working set that exactly fills the cache fits');
  assert.equal(pressure(201, 200, 0), 'over');
  assert.equal(pressure(201, 200, 1), 'over-gpu');
  assert.equal(pressure(300, 200, 100), 'over-gpu');
  assert.equal(pressure(301, 200, 100), 'over');
});

test("the seed's host: 26 agents over the cache, in the rule of thumb's words, with the warning", () => {
  const card = workingSetCard(model(seed, { queuedTaskStarts: 3 }));
  assert.equal(card.level, 'over');
  assert.equal(
    card.summary,
    '26 agents of ~58k tokens need ~1.5M tokens; this host holds ~1.0M (~941k in GPU caches, ~100k in host memory).',
  );
  assert.deepEqual(card.figures, { agents: 26, typical: 58000, held: 1508000, gpu: 940800, host: 100000, capacity: 1040800 });
  // 1,508,000 - 1,040,800 = 467,200 over; 1,040,800 / 58,000 = 17.9: 17 agents of this size fit.
  assert.equal(
    card.warning,
    "The working set is over what this host holds by ~467k tokens: threads evict each other's prefixes and prefill them again. " +
      'About 17 agents of this size fit; fewer agents, or more cache (replicas, host offload), keep it within.',
  );
  assert.equal(card.heldStarts, 'Held task starts: 3. A new task waits while the threads under way fill the caches; a task under way is never held.');
});

test('16 agents fit: no warning; over the GPU caches alone, the rest waits in host memory', () => {
  const sixteen = { ...seed, conversations: 16, held_tokens: 16 * 58000 };
  const fits = workingSetCard(model(sixteen));
  assert.equal(fits.level, 'within');
  assert.equal(fits.summary, '16 agents of ~58k tokens need ~928k tokens; this host holds ~1.0M (~941k in GPU caches, ~100k in host memory).');
  assert.equal(fits.warning, '');
  assert.equal(fits.heldStarts, 'Held task starts: 0.');

  const offload = { ...seed, conversations: 17, held_tokens: 17 * 58000, host_capacity_tokens: 7 * 116496 };
  const inHost = workingSetCard(model(offload));
  assert.equal(inHost.level, 'over-gpu');
  assert.equal(inHost.warning, 'Over the GPU caches by ~45k tokens: that part waits in host memory and loads back over PCIe.');
  assert.match(inHost.summary, /this host holds ~1\.8M \(~941k in GPU caches, ~815k in host memory\)\.$/);
});

test('without host offload, or with offload of a size the engine does not report in tokens', () => {
  const gpuOnly = { ...seed, host_capacity_tokens: 0 };
  assert.match(workingSetCard(model(gpuOnly)).summary, /this host holds ~941k in GPU caches \(no host offload\)\.$/);
  const replicas = [{ index: 0, offload_gib: 16 }, { index: 1, offload_gib: 16 }];
  assert.match(
    workingSetCard(model(gpuOnly, { replicas })).summary,
    /this host holds ~941k in GPU caches, and host offload of 16 GiB a replica whose size in tokens the engine does not report\.$/,
  );
  assert.equal(workingSetCard(model(gpuOnly, { replicas })).level, 'over', 'an unknown host size counts as none');
});

test('no agent, no caches reported yet, or no working set in the JSON at all', () => {
  const idle = { ...seed, conversations: 0, held_tokens: 0, typical_tokens: 0 };
  assert.equal(workingSetCard(model(idle)).summary, 'No agent is active; this host holds ~1.0M (~941k in GPU caches, ~100k in host memory).');
  const early = { ...seed, gpu_capacity_tokens: 0, host_capacity_tokens: 0 };
  const card = workingSetCard(model(early));
  assert.equal(card.level, 'unknown');
  assert.equal(card.summary, '26 agents of ~58k tokens need ~1.5M tokens; the engines have not reported their caches yet.');
  assert.equal(card.warning, '');
  const none = workingSetCard({});
  assert.equal(none.summary, 'No agent is active; the engines have not reported their caches yet.');
  assert.equal(workingSetCard(model({ ...seed, conversations: 1, held_tokens: 950, typical_tokens: 950 })).summary.slice(0, 35), '1 agent of ~950 tokens need ~950 to');
});

test("a replica's row is marked by its own and the other wardens' conversations against its caches", () => {
  const rows = routingCard(
    {
      routing: {
        replicas: [
          { index: 0, held_tokens: 30000, kv_capacity_tokens: 33600 },
          { index: 1, held_tokens: 30000, peer_held_tokens: 5000, kv_capacity_tokens: 33600 },
          { index: 2, held_tokens: 30000, peer_held_tokens: 5000, kv_capacity_tokens: 33600, offload_capacity_tokens: 116496 },
          { index: 3, held_tokens: 30000 },
        ],
      },
    },
    0,
  ).rows;
  assert.deepEqual(rows.map(replicaLevel), ['within', 'over', 'over-gpu', 'unknown']);
});
