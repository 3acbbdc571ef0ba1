// The "Working set" card of a model page: the tokens of the conversations active on the model's replicas
// against what the host holds, GPU caches plus host (CPU) offload, in the words of the rule of thumb
// (keep agents x context below the host's cache), from the `working_set` of GET /api/models/{name}
// (docs/api.md). Also each replica's working-set cell. Pure: plain values in and out, no DOM.
import { formatInt } from './present.js';

function num(v) {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : 0;
}

const oneDecimal = (v) => (Math.round(v * 10) / 10).toFixed(1);

// Tokens as an operator says them: 950, 9.8k, 58k, 941k, 1.5M.
export function compactTokens(n) {
  const v = Math.round(num(n));
  if (v < 1000) {
    return String(v);
  }
  if (v < 9950) {
    return `${oneDecimal(v / 1000)}k`;
  }
  if (v < 999500) {
    return `${Math.round(v / 1000)}k`;
  }
  return `${oneDecimal(v / 1e6)}M`;
}

const plural = (n, word) => `${formatInt(n)} ${word}${n === 1 ? '' : 's'}`;

// Where a working set of `held` tokens stands against `gpu` and `host` tokens of cache: 'unknown' (no GPU
// cache reported), 'within' the GPU cache, 'over-gpu' (the rest in host memory) or 'over' both.
export function pressure(held, gpu, host) {
  if (num(gpu) <= 0) {
    return 'unknown';
  }
  if (num(held) <= num(gpu)) {
    return 'within';
  }
  return num(held) <= num(gpu) + num(host) ? 'over-gpu' : 'over';
}

// The GiB of host offload the replicas name, when some do ('' when none): "16 GiB a replica".
function offloadGib(replicas) {
  const gibs = replicas.map((r) => num(r.offload_gib)).filter((g) => g > 0);
  if (gibs.length === 0) {
    return '';
  }
  const same = gibs.every((g) => g === gibs[0]);
  return same ? `${formatInt(gibs[0])} GiB a replica` : `${formatInt(Math.min(...gibs))}-${formatInt(Math.max(...gibs))} GiB a replica`;
}

// What the host holds, in words: "~1.0M (~941k in GPU caches, ~116k in host memory)".
function holdsText(gpu, host, gib) {
  if (host > 0) {
    return `~${compactTokens(gpu + host)} (~${compactTokens(gpu)} in GPU caches, ~${compactTokens(host)} in host memory)`;
  }
  if (gib) {
    return `~${compactTokens(gpu)} in GPU caches, and host offload of ${gib} whose size in tokens the engine does not report`;
  }
  return `~${compactTokens(gpu)} in GPU caches (no host offload)`;
}

// The card: the rule of thumb in words, the warning when over, the held task starts. `model` is the JSON
// of GET /api/models/{name}.
export function workingSetCard(model) {
  const ws = model?.working_set ?? {};
  const routing = model?.routing ?? {};
  const replicas = Array.isArray(routing.replicas) ? routing.replicas : [];
  const agents = num(ws.conversations);
  const held = num(ws.held_tokens);
  const typical = num(ws.typical_tokens);
  const gpu = num(ws.gpu_capacity_tokens);
  const host = num(ws.host_capacity_tokens);
  const capacity = gpu + host;
  const level = pressure(held, gpu, host);
  const gib = offloadGib(replicas);
  const need = `${plural(agents, 'agent')} of ~${compactTokens(typical)} tokens need ~${compactTokens(held)} tokens`;
  let summary;
  if (level === 'unknown') {
    summary = agents > 0 ? `${need}; the engines have not reported their caches yet.` : 'No agent is active; the engines have not reported their caches yet.';
  } else if (agents === 0) {
    summary = `No agent is active; this host holds ${holdsText(gpu, host, gib)}.`;
  } else {
    summary = `${need}; this host holds ${holdsText(gpu, host, gib)}.`;
  }
  let warning = '';
  if (level === 'over') {
    const fit = typical > 0 ? Math.floor(capacity / typical) : 0;
    warning =
      `The working set is over what this host holds by ~${compactTokens(held - capacity)} tokens: threads evict each ` +
      `other's prefixes and prefill them again. About ${plural(fit, 'agent')} of this size fit; fewer agents, or more ` +
      'cache (replicas, host offload), keep it within.';
  } else if (level === 'over-gpu') {
    warning = `Over the GPU caches by ~${compactTokens(held - gpu)} tokens: that part waits in host memory and loads back over PCIe.`;
  }
  const starts = num(routing.admission?.queued_task_starts);
  return {
    level,
    summary,
    warning,
    heldStarts:
      starts > 0
        ? `Held task starts: ${formatInt(starts)}. A new task waits while the threads under way fill the caches; a task under way is never held.`
        : 'Held task starts: 0.',
    figures: {
      agents,
      typical,
      held,
      gpu,
      host,
      capacity,
    },
  };
}

// Where a replica's working set stands (pressure): its own conversations and those other wardens sharing
// state report there, against its caches. `row` is present.js's replicaRow; workingSetText is its text.
export function replicaLevel(row) {
  return pressure(num(row.heldTokens) + num(row.peerHeldTokens), row.kvCapacityTokens, row.offloadCapacityTokens);
}
