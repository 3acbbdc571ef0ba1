// Pure presentation logic: API JSON in, what the pages show out. No DOM, no fetch, no clock of its
// own (time is a parameter), so node's test runner covers it directly (tests/js/console_present.test.mjs).

const intFormat = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const oneDecimal = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });

export function isNumber(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

// 1234 → "1,234"; missing → "–".
export function formatInt(v) {
  return isNumber(v) ? intFormat.format(v) : '–';
}

// A ratio 0..1 → "82.2%"; missing → "–".
export function formatPercent(ratio) {
  return isNumber(ratio) ? `${oneDecimal.format(ratio * 100)}%` : '–';
}

// Tokens per second with one decimal below 100 and none above.
export function formatRate(v) {
  if (!isNumber(v)) {
    return '–';
  }
  return Math.abs(v) >= 100 ? intFormat.format(v) : oneDecimal.format(v);
}

// "3 s", "4 min", "2 h 5 min", "3 d 4 h" from a number of seconds.
export function formatDuration(seconds) {
  if (!isNumber(seconds) || seconds < 0) {
    return '–';
  }
  const s = Math.floor(seconds);
  if (s < 60) {
    return `${s} s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min`;
  }
  if (s < 86400) {
    const m = Math.floor((s % 3600) / 60);
    return m ? `${Math.floor(s / 3600)} h ${m} min` : `${Math.floor(s / 3600)} h`;
  }
  const h = Math.floor((s % 86400) / 3600);
  return h ? `${Math.floor(s / 86400)} d ${h} h` : `${Math.floor(s / 86400)} d`;
}

// Accepts seconds or milliseconds since the epoch, or an ISO 8601 string; returns milliseconds or null.
export function toEpochMs(v) {
  if (isNumber(v)) {
    // Seconds until the year 5138; anything larger is already milliseconds.
    return v < 1e11 ? v * 1000 : v;
  }
  if (typeof v === 'string' && v !== '') {
    const ms = Date.parse(v);
    return Number.isNaN(ms) ? null : ms;
  }
  return null;
}

// "2026-11-29 09:20:11 UTC"
export function formatUtc(ms) {
  if (!isNumber(ms)) {
    return '–';
  }
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

// The spill threshold label of the routing card: "Spill threshold 8 (auto)" or "Spill threshold 4".
export function spillLabel(threshold, isAuto) {
  const n = isNumber(threshold) ? intFormat.format(threshold) : '–';
  return isAuto ? `Spill threshold ${n} (auto)` : `Spill threshold ${n}`;
}

function num(v) {
  return isNumber(v) ? v : null;
}

// One replica row of the routing card from the API's replica object.
export function replicaRow(r, index) {
  return {
    index: isNumber(r.index) ? r.index : index,
    healthy: r.healthy !== false,
    inFlight: num(r.in_flight),
    newCount: num(r.new),
    sticky: num(r.sticky),
    spilledIn: num(r.spilled_in),
    clientPinned: num(r.client_pinned),
    running: num(r.running),
    waiting: num(r.waiting),
    kvUsed: num(r.kv_used),
    prefixHitRate: num(r.prefix_hit_rate),
    preemptions: num(r.preemptions),
    balanced: num(r.balanced),
    failover: num(r.failover),
    rehomed: num(r.rehomed_in),
    heldTokens: num(r.held_tokens),
    peerConversations: num(r.peer_active_conversations),
    peerHeldTokens: num(r.peer_held_tokens),
    kvCapacityTokens: num(r.kv_capacity_tokens),
    offloadCapacityTokens: num(r.offload_capacity_tokens),
    url: typeof r.url === 'string' ? r.url : '',
    lastError: typeof r.last_error === 'string' ? r.last_error : '',
    // Out of routing by outlier ejection until its probe succeeds (docs/config.md, `outlier`).
    ejected: r.ejected === true,
    ejectionReason: typeof r.ejection?.reason === 'string' ? r.ejection.reason : '',
    // Its engine's KV cache events (null: the warden does not listen to them).
    kvEvents:
      r.kv_events && typeof r.kv_events === 'object'
        ? { live: r.kv_events.live === true, cacheUse: num(r.kv_events.cache_use) }
        : null,
  };
}

// The "Cache (events)" cell: what the replica's prefix cache holds of its capacity, as its KV cache
// events tell it, and whether they are live ("93.0% · events live"; "– · estimate" while they fall back).
export function kvEventsText(row) {
  if (!row.kvEvents) {
    return '–';
  }
  return `${formatPercent(row.kvEvents.cacheUse)} · ${row.kvEvents.live ? 'events live' : 'estimate'}`;
}

// Share of continuing turns served by their conversation's home replica: sticky / (sticky + spilled in),
// as the routing core counts it (core/counters.cpp). Null before any conversation has a second turn.
export function stickyShare(rows) {
  let sticky = 0;
  let spilled = 0;
  for (const r of rows) {
    sticky += r.sticky ?? 0;
    spilled += r.spilledIn ?? 0;
  }
  return sticky + spilled > 0 ? sticky / (sticky + spilled) : null;
}

// The model's `shared_state` block → "Shared state: redis up" (or down); '' for a warden on its own.
export function sharedStateLabel(shared) {
  if (!shared || typeof shared !== 'object') {
    return '';
  }
  return `Shared state: redis ${shared.up === true ? 'up' : 'down'}`;
}

// The "Data parallel routing" card from GET /api/models/{name}. The routing facts may sit at the top
// level of the model object or inside a `routing` object; both are read.
export function routingCard(model, nowMs) {
  const routing = model && typeof model.routing === 'object' && model.routing !== null ? model.routing : {};
  const pick = (key) => (routing[key] !== undefined ? routing[key] : model?.[key]);
  const replicasJson = Array.isArray(pick('replicas')) ? pick('replicas') : [];
  const rows = replicasJson.map(replicaRow).sort((a, b) => a.index - b.index);
  const affinity = pick('affinity') !== false;
  // The setting as the routing table writes it ("auto" or a number) and the threshold it resolves to.
  const rawThreshold = pick('spill_threshold');
  const isAuto = rawThreshold === 'auto' || rawThreshold == null;
  const effective = num(pick('spill_threshold_resolved') ?? rawThreshold);
  const stickyPercent = pick('sticky_percent');
  const sticky = isNumber(stickyPercent) ? stickyPercent / 100 : stickyShare(rows);
  let inFlight = num(pick('in_flight'));
  if (inFlight === null) {
    inFlight = rows.reduce((sum, r) => sum + (r.inFlight ?? 0), 0);
  }
  const sinceMs = toEpochMs(model?.since_unix ?? pick('since') ?? model?.since);
  const sum = (key) => rows.reduce((total, r) => total + (r[key] ?? 0), 0);
  const balanced = sum('balanced');
  const failover = sum('failover');
  const rehomed = sum('rehomed');
  const other = [];
  if (balanced > 0) {
    other.push(`${formatInt(balanced)} balanced with affinity off`);
  }
  if (failover > 0) {
    other.push(`${formatInt(failover)} retried on another replica (failover)`);
  }
  if (rehomed > 0) {
    other.push(`${formatInt(rehomed)} moved off an overloaded home (rehomed)`);
  }
  return {
    name: model?.name ?? '',
    affinity,
    isAuto,
    threshold: effective,
    sticky,
    inFlight,
    rows,
    sinceMs,
    otherText: other.length ? `Not in the columns above: ${other.join('; ')}.` : '',
    // Shown only while admission holds conversations back (routing.md, "Admission").
    queuedLabel: queuedLabel(routing.admission),
    // Shown only when a client changed its prompt start within a conversation (session-identity.md).
    prefixBreaksLabel: num(model?.prefix_breaks) > 0 ? `Prefix breaks ${formatInt(num(model.prefix_breaks))}` : '',
    // Shown only for a warden that shares its homes with others (docs/deployment.md).
    sharedStateLabel: sharedStateLabel(model?.shared_state),
    labels: {
      affinity: affinity ? 'Affinity on' : 'Affinity off',
      spill: spillLabel(effective, isAuto),
      sticky: `Sticky ${formatPercent(sticky)}`,
      inFlight: `In flight ${formatInt(inFlight)}`,
    },
    sinceText:
      sinceMs === null
        ? 'Counters accumulate since the warden started.'
        : `Counters accumulate since the warden started (${formatUtc(sinceMs)}, ${formatDuration(
            (nowMs - sinceMs) / 1000,
          )} ago).`,
  };
}

// "Queued 3 conversations" while admission holds requests back, else ''.
export function queuedLabel(admission) {
  const n = num(admission?.queued);
  if (!n) {
    return '';
  }
  return `Queued ${formatInt(n)} conversation${n === 1 ? '' : 's'}`;
}

// The tokens of the conversations resident on a replica against its KV cache: "9,800 of 33,600 tokens",
// with host (CPU) offload "9,800 of 33,600 + 116,496 host tokens", '–' until the engine reported its
// capacity. With shared state, the conversations the other wardens report there follow: "… · 2 at other
// wardens" (each conversation counts at the warden of its latest turn). working_set.js says whether it is
// over.
export function workingSetText(row) {
  if (!isNumber(row.kvCapacityTokens) || row.kvCapacityTokens <= 0) {
    return '–';
  }
  const host = row.offloadCapacityTokens > 0 ? ` + ${formatInt(row.offloadCapacityTokens)} host` : '';
  const text = `${formatInt(row.heldTokens ?? 0)} of ${formatInt(row.kvCapacityTokens)}${host} tokens`;
  const peers = row.peerConversations ?? 0;
  return peers > 0 ? `${text} · ${formatInt(peers)} at other wardens` : text;
}

// The cells of one replica row, in column order, as the card's table shows them.
export const replicaColumns = [
  'Replica',
  'In flight',
  'Sticky',
  'Spilled in',
  'Client pinned',
  'Running / waiting',
  'KV used',
  'Prefix cache hit rate',
  'Preempted',
  'Working set',
  'Cache (events)',
];

export function replicaCells(row) {
  return [
    String(row.index),
    formatInt(row.inFlight),
    formatInt(row.sticky),
    formatInt(row.spilledIn),
    formatInt(row.clientPinned),
    `${formatInt(row.running)} / ${formatInt(row.waiting)}`,
    formatPercent(row.kvUsed),
    formatPercent(row.prefixHitRate),
    formatInt(row.preemptions),
    workingSetText(row),
    kvEventsText(row),
  ];
}

// The models list from GET /api/models (an array, or an object holding `models`).
export function modelList(json) {
  const list = Array.isArray(json) ? json : Array.isArray(json?.models) ? json.models : [];
  return list
    .filter((m) => m && typeof m.name === 'string')
    .map((m) => {
      const card = routingCard(m, 0);
      const replicas = card.rows;
      const count = isNumber(m.replica_count) ? m.replica_count : replicas.length;
      const healthy = isNumber(m.healthy_replicas) ? m.healthy_replicas : replicas.filter((r) => r.healthy).length;
      return {
        name: m.name,
        servedName: m.served_model_name ?? m.name,
        layout: m.mode === 'data_parallel' ? `data parallel, ${count} ranks` : `${count} servers`,
        replicas,
        replicaCount: count,
        healthyCount: healthy,
        inFlight: card.inFlight,
        affinity: card.affinity,
        spill: card.labels.spill,
        launch: launchBadge(m.launch),
      };
    });
}

// Parses the spill threshold field of the settings form: "auto" (or empty) or a positive integer.
export function parseSpillInput(text) {
  const t = String(text ?? '').trim().toLowerCase();
  if (t === '' || t === 'auto') {
    return { ok: true, value: 'auto' };
  }
  if (!/^\d+$/.test(t)) {
    return { ok: false, error: 'Enter "auto" or a whole number of requests.' };
  }
  const n = Number(t);
  if (n < 1 || n > 1_000_000) {
    return { ok: false, error: 'The spill threshold must be at least 1.' };
  }
  return { ok: true, value: n };
}

// What to tell the user after a failed change, by HTTP status.
export function changeErrorText(status, detail) {
  const more = detail ? ` (${detail})` : '';
  if (status === 401) {
    return `The admin token was not accepted (401): it is wrong or missing. The next change asks for it again.${more}`;
  }
  if (status === 403) {
    return `Changes are refused: the warden has no admin token configured or this token may not change settings (403).${more}`;
  }
  if (status === 404) {
    return `This model is not configured in the warden (404).${more}`;
  }
  if (status === 400 || status === 422) {
    return `The warden rejected the value (${status}).${more}`;
  }
  if (status === 0) {
    return `The warden could not be reached.${more}`;
  }
  return `The change failed (HTTP ${status}).${more}`;
}

// ---- Stats: GET /api/stats?model=M&window=S → the chart's arrays ----

// The per-second columns of GET /api/stats (`series: {t, prompt_cached, prompt_computed, completion,
// requests}`, docs/api.md) as plain number arrays; malformed entries count as zero, bad times are skipped.
export function statsBuckets(json) {
  const out = { t: [], hit: [], computed: [], completion: [], requests: [] };
  const cols = json?.series;
  const t = Array.isArray(cols?.t) ? cols.t : [];
  const col = (name) => (Array.isArray(cols?.[name]) ? cols[name] : []);
  const hit = col('prompt_cached');
  const computed = col('prompt_computed');
  const completion = col('completion');
  const requests = col('requests');
  for (let i = 0; i < t.length; i++) {
    const ms = toEpochMs(t[i]);
    if (ms === null) {
      continue;
    }
    out.t.push(ms / 1000);
    out.hit.push(num(hit[i]) ?? 0);
    out.computed.push(num(computed[i]) ?? 0);
    out.completion.push(num(completion[i]) ?? 0);
    out.requests.push(num(requests[i]) ?? 0);
  }
  return out;
}

// The end (exclusive, unix seconds) of the stats window: the API's `end` is the last second it covers.
// The server's clock is used when given, so a skewed browser clock cannot shift bars out of the window.
export function statsEnd(json, nowMs) {
  const end = toEpochMs(json?.end);
  return end !== null ? Math.floor(end / 1000) + 1 : Math.ceil(nowMs / 1000);
}

// Sums per-second buckets into bins of `binSeconds` covering [endS - windowS, endS) and turns them into
// tokens per second (bin total / bin length). Bars are placed at the bin's start.
export function binRates(buckets, { endS, windowS, binSeconds }) {
  const bins = Math.max(1, Math.ceil(windowS / binSeconds));
  const lastBinStart = Math.floor((endS - 1) / binSeconds) * binSeconds;
  const firstBinStart = lastBinStart - (bins - 1) * binSeconds;
  const x = new Array(bins);
  const hit = new Array(bins).fill(0);
  const computed = new Array(bins).fill(0);
  const completion = new Array(bins).fill(0);
  for (let i = 0; i < bins; i++) {
    x[i] = firstBinStart + i * binSeconds;
  }
  const totals = { hit: 0, computed: 0, completion: 0, requests: 0 };
  for (let i = 0; i < buckets.t.length; i++) {
    const bin = Math.floor((buckets.t[i] - firstBinStart) / binSeconds);
    if (bin < 0 || bin >= bins) {
      continue;
    }
    hit[bin] += buckets.hit[i];
    computed[bin] += buckets.computed[i];
    completion[bin] += buckets.completion[i];
    totals.hit += buckets.hit[i];
    totals.computed += buckets.computed[i];
    totals.completion += buckets.completion[i];
    totals.requests += buckets.requests[i] ?? 0;
  }
  for (let i = 0; i < bins; i++) {
    hit[i] /= binSeconds;
    computed[i] /= binSeconds;
    completion[i] /= binSeconds;
  }
  const prompt = totals.hit + totals.computed;
  return {
    x,
    hit,
    computed,
    completion,
    totals,
    hitRate: prompt > 0 ? totals.hit / prompt : null,
  };
}

// The bin length for a window: about 120 bars at most, on round numbers of seconds.
export function binSecondsFor(windowS) {
  for (const s of [1, 2, 5, 10, 15, 30, 60, 120, 300, 600]) {
    if (windowS / s <= 120) {
      return s;
    }
  }
  return 900;
}

// The hit-rate summary (`summary` of GET /api/stats), falling back to the binned totals.
export function statsSummary(json, binned) {
  const s = json?.summary ?? {};
  const rate = num(s.cache_hit_rate) ?? binned.hitRate;
  return {
    hitRate: rate,
    cached: num(s.prompt_cached) ?? binned.totals.hit,
    computed: num(s.prompt_computed) ?? binned.totals.computed,
    completion: num(s.completion) ?? binned.totals.completion,
  };
}

// ---- Engines the warden launches (`launch` of GET /api/models, docs/engines.md) ----

// Every status a launched model or engine can be in, its label and its tone (the badge's colour class).
// The label always carries the meaning, so the colour is never the only cue.
const LAUNCH_STATES = {
  starting: { label: 'Starting', tone: 'warn' },
  ready: { label: 'Ready', tone: 'ok' },
  restarting: { label: 'Restarting', tone: 'warn' },
  failed: { label: 'Failed', tone: 'bad' },
  stopping: { label: 'Stopping', tone: 'muted' },
  stopped: { label: 'Stopped', tone: 'muted' },
};

function text(v) {
  return typeof v === 'string' ? v : '';
}

// One status word → {status, label, tone}; an unknown or missing one is shown as given, in neutral tone.
export function launchState(status) {
  const s = text(status);
  const known = LAUNCH_STATES[s];
  if (known) {
    return { status: s, ...known };
  }
  return { status: s || 'unknown', label: s ? s.charAt(0).toUpperCase() + s.slice(1) : 'Unknown', tone: 'muted' };
}

// The model's `launch` block → its badge (null for a model the warden does not launch).
export function launchBadge(launch) {
  if (!launch || typeof launch !== 'object') {
    return null;
  }
  const state = launchState(launch.status);
  const reason = text(launch.status_reason);
  return { ...state, reason, title: reason ? `Engine ${state.label.toLowerCase()}: ${reason}` : `Engine ${state.label.toLowerCase()}` };
}

// The "Engine" section of the model page from the model's `launch` block.
export function engineSection(launch, nowMs) {
  const badge = launchBadge(launch);
  if (!badge) {
    return { launched: false, text: 'Not launched by the warden: it only talks to engines started elsewhere.' };
  }
  const engines = (Array.isArray(launch.engines) ? launch.engines : [])
    .filter((e) => e && typeof e === 'object')
    .map((e) => {
      const since = isNumber(e.since_unix_ms) && e.since_unix_ms > 0 ? e.since_unix_ms : null;
      return {
        name: text(e.name),
        state: launchState(e.state),
        replicas: Array.isArray(e.replicas) ? e.replicas.filter(isNumber).join(', ') : '',
        pid: isNumber(e.pid) ? String(e.pid) : '–',
        restarts: formatInt(e.restarts),
        since: since === null ? '–' : `${formatDuration((nowMs - since) / 1000)} ago`,
        reason: text(e.reason),
        lastExit: text(e.last_exit) || '–',
        command: text(e.command),
      };
    });
  return {
    launched: true,
    badge,
    reason: badge.reason,
    engines,
    logText: logTailText(launch.log_tail),
  };
}

// `log_tail` (an array of lines) → the text of the log box.
export function logTailText(tail) {
  return Array.isArray(tail) ? tail.filter((l) => typeof l === 'string').join('\n') : '';
}

// "09:20:11" (UTC) of a log line's time.
function clockUtc(ms) {
  return isNumber(ms) ? new Date(ms).toISOString().slice(11, 19) : '--:--:--';
}

// GET /api/models/{name}/logs → the text of the log box: one line per captured line, oldest first, with
// its UTC time and stream ("stderr", "warden" for the warden's own notes); the engine's name leads each
// line when the model runs several processes. Lines of several engines are merged by time.
export function logsText(json) {
  const engines = (Array.isArray(json?.engines) ? json.engines : []).filter((e) => e && Array.isArray(e.lines));
  const several = engines.length > 1;
  const lines = [];
  engines.forEach((e, ei) => {
    e.lines.forEach((l, li) => {
      if (!l || typeof l.text !== 'string') {
        return;
      }
      const who = several ? `${text(e.name)} ` : '';
      lines.push({ t: isNumber(l.t_ms) ? l.t_ms : 0, ei, li, text: `${clockUtc(l.t_ms)} ${who}${text(l.stream) || 'out'}: ${l.text}` });
    });
  });
  lines.sort((a, b) => a.t - b.t || a.ei - b.ei || a.li - b.li);
  return lines.map((l) => l.text).join('\n');
}
