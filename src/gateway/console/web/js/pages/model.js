// One model: the "Data parallel routing" card (routing.md, "What users see"), live, and the controls to
// turn affinity off/on and set the spill threshold.
import { getModel, getModelLogs, patchRouting } from '../api.js';
import { h, poll, setText } from '../dom.js';
import {
  changeErrorText,
  engineSection,
  formatInt,
  logsText,
  parseSpillInput,
  replicaCells,
  replicaColumns,
  routingCard,
} from '../present.js';
import { threadColumns, threadsCard } from '../threads.js';
import { replicaLevel, workingSetCard } from '../working_set.js';
import { adminToken, forgetToken, hasToken } from '../token.js';

const FIELDS = ['replica', 'in-flight', 'sticky', 'spilled-in', 'client-pinned', 'running-waiting', 'kv-used', 'prefix-hit-rate', 'preempted', 'working-set', 'cache-events'];
// A replica's working set over its caches: the badge's word, its tone, and what it means.
const LEVEL_BADGES = {
  'over-gpu': { word: 'in host', tone: 'warn', title: 'Over the GPU cache: the rest waits in host memory' },
  over: { word: 'over', tone: 'bad', title: 'Over the GPU cache and host offload: conversations evict each other' },
};

function replicaRowElement(row) {
  const cells = replicaCells(row);
  return h(
    'tr',
    {
      dataset: { replica: String(row.index) },
      class: row.healthy && !row.ejected ? null : 'unhealthy',
      title: !row.healthy ? `${row.url}: ${row.lastError || 'not answering'}`
        : row.ejected ? `${row.url}: ejected (${row.ejectionReason})` : row.url,
    },
    h('th', { scope: 'row', dataset: { field: FIELDS[0] } }, cells[0],
      row.healthy ? null : h('span', { class: 'badge bad' }, 'unhealthy'),
      row.ejected ? h('span', { class: 'badge bad', title: row.ejectionReason }, 'ejected') : null),
    cells.slice(1).map((text, i) => h('td', { dataset: { field: FIELDS[i + 1] } }, text)),
  );
}

// The working-set cell of a replica row marked by where it stands (working_set.js, pressure).
function markWorkingSet(tr, row) {
  const cell = tr.querySelector('[data-field="working-set"]');
  const level = replicaLevel(row);
  cell.dataset.level = level;
  const badge = LEVEL_BADGES[level];
  if (badge) {
    cell.append(h('span', { class: `badge ${badge.tone}`, title: badge.title }, badge.word));
  }
  return tr;
}

// The "Working set" card: the rule of thumb in words, a warning when over, the held task starts.
function workingSetSection() {
  const summary = h('p', { id: 'working-set-summary' }, '…');
  const warning = h('p', { id: 'working-set-warning', class: 'banner warn', role: 'status', hidden: true });
  const starts = h('p', { id: 'working-set-starts', class: 'muted' });
  const section = h(
    'section',
    { class: 'card', id: 'working-set-card', 'aria-labelledby': 'working-set-heading' },
    h('h2', { id: 'working-set-heading' }, 'Working set'),
    summary,
    warning,
    starts,
    h('p', { class: 'since' }, 'Agents: the conversations and subagent threads active on the replicas. Each holds its last prompt in the cache; the host holds the GPU caches of its healthy replicas plus their host (CPU) offload.'),
  );
  return {
    section,
    update(json) {
      const view = workingSetCard(json);
      setText(summary, view.summary);
      setText(warning, view.warning);
      warning.hidden = view.warning === '';
      warning.className = `banner ${view.level === 'over' ? 'bad' : 'warn'}`;
      warning.dataset.level = view.level;
      setText(starts, view.heldStarts);
      return view;
    },
  };
}

const ENGINE_COLUMNS = ['Process', 'Status', 'Replicas', 'PID', 'Restarts', 'Since', 'Last exit'];
const LOG_LINES = 200;

function engineRowElement(e) {
  return h(
    'tr',
    { dataset: { engine: e.name }, title: e.command || null },
    h('th', { scope: 'row', class: 'text-left' }, e.name),
    h('td', { class: 'text-left' }, h('span', { class: `badge status ${e.state.tone}` }, e.state.label),
      e.reason ? h('div', { class: 'muted small' }, e.reason) : null),
    h('td', {}, e.replicas || '–'),
    h('td', {}, e.pid),
    h('td', {}, e.restarts),
    h('td', {}, e.since),
    h('td', { class: 'text-left' }, e.lastExit),
  );
}

// The "Engine" section: what the warden launched for this model, its status and its last output lines.
// The log box follows new lines while it is scrolled to the bottom, and stays put while the user reads
// further up.
function engineCard() {
  const status = h('span', { class: 'badge status muted', id: 'engine-status' }, '…');
  const reason = h('p', { id: 'engine-reason', hidden: true });
  const notLaunched = h('p', { class: 'muted', id: 'engine-not-launched', hidden: true });
  const tbody = h('tbody');
  const table = h(
    'div',
    { class: 'table-scroll' },
    h(
      'table',
      { id: 'engine-table' },
      h('caption', {}, 'One row per engine process the warden runs for this model.'),
      h('thead', {}, h('tr', {}, ENGINE_COLUMNS.map((c, i) => h('th', { scope: 'col', class: i === 0 || i === 1 || i === 6 ? 'text-left' : null }, c)))),
      tbody,
    ),
  );
  const log = h('pre', { id: 'engine-log', class: 'log', tabindex: 0, 'aria-labelledby': 'engine-log-heading' });
  const launched = h(
    'div',
    { id: 'engine-launched', hidden: true },
    h('p', { class: 'engine-status-line' }, 'Status: ', status),
    reason,
    table,
    h('h3', { id: 'engine-log-heading' }, `Last log lines (live, up to ${LOG_LINES})`),
    log,
  );
  const section = h(
    'section',
    { class: 'card', id: 'engine-card', 'aria-labelledby': 'engine-heading' },
    h('h2', { id: 'engine-heading' }, 'Engine'),
    notLaunched,
    launched,
  );
  const showLog = (textValue) => {
    if (log.textContent === textValue) {
      return;
    }
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 8;
    log.textContent = textValue || '(no output yet)';
    if (atBottom) {
      log.scrollTop = log.scrollHeight;
    }
  };
  return {
    section,
    showLog,
    // Returns whether the model is launched by the warden.
    update(launch, nowMs, logsFetched) {
      const view = engineSection(launch, nowMs);
      notLaunched.hidden = view.launched;
      launched.hidden = !view.launched;
      if (!view.launched) {
        setText(notLaunched, view.text);
        return false;
      }
      setText(status, view.badge.label);
      status.className = `badge status ${view.badge.tone}`;
      status.dataset.status = view.badge.status;
      setText(reason, view.reason ? `Reason: ${view.reason}` : '');
      reason.hidden = view.reason === '';
      tbody.replaceChildren(...view.engines.map(engineRowElement));
      if (!logsFetched) {
        showLog(view.logText);
      }
      return true;
    },
  };
}

export function mount(main, { model: name }) {
  document.title = `${name} · LM Warden`;
  const banner = h('p', { class: 'banner', role: 'alert', hidden: true });
  const info = h('p', { class: 'muted' });

  const engine = engineCard();
  const workingSet = workingSetSection();
  let logsFetched = false;
  let logPoller = null;

  // The card.
  const label = (key) => h('li', { dataset: { label: key } }, '…');
  const labels = { affinity: label('affinity'), spill: label('spill'), sticky: label('sticky'), inFlight: label('in-flight') };
  const prefixBreaks = h('li', { dataset: { label: 'prefix-breaks' }, hidden: true }, '');
  const queued = h('li', { dataset: { label: 'queued' }, hidden: true }, '');
  const sharedState = h('li', { dataset: { label: 'shared-state' }, hidden: true }, '');
  const tbody = h('tbody');
  const since = h('p', { class: 'since', id: 'routing-since' }, 'Counters accumulate since the warden started.');
  const other = h('p', { class: 'since', id: 'routing-other', hidden: true });
  const card = h(
    'section',
    { class: 'card', id: 'routing-card', 'aria-labelledby': 'routing-heading' },
    h('h2', { id: 'routing-heading' }, 'Data parallel routing'),
    h('ul', { class: 'labels', 'aria-label': 'Routing summary' }, [...Object.values(labels), queued, prefixBreaks, sharedState]),
    h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { id: 'replica-table', 'aria-describedby': 'routing-since' },
        h('caption', {}, 'One row per replica. Live: updates every 1.5 seconds.'),
        h('thead', {}, h('tr', {}, replicaColumns.map((c) => h('th', { scope: 'col' }, c)))),
        tbody,
      ),
    ),
    since,
    other,
  );

  // The threads card: sessions whose agents run subagents, one row per thread.
  const threadLabels = {
    threads: h('li', { dataset: { label: 'threads' } }, '…'),
    compactions: h('li', { dataset: { label: 'compactions' } }, '…'),
    side: h('li', { dataset: { label: 'side-requests' } }, '…'),
    held: h('li', { dataset: { label: 'held' } }, '…'),
  };
  const threadBody = h('tbody');
  const threads = h(
    'section',
    { class: 'card', id: 'threads-card', 'aria-labelledby': 'threads-heading' },
    h('h2', { id: 'threads-heading' }, 'Threads'),
    h('ul', { class: 'labels', 'aria-label': 'Threads summary' }, Object.values(threadLabels)),
    h(
      'div',
      { class: 'table-scroll' },
      h(
        'table',
        { id: 'thread-table' },
        h('caption', {}, 'The most recent sessions with subagents: each thread stays on its own home replica.'),
        h('thead', {}, h('tr', {}, threadColumns.map((c) => h('th', { scope: 'col' }, c)))),
        threadBody,
      ),
    ),
  );
  const updateThreads = (json) => {
    const view = threadsCard(json);
    for (const [key, el] of Object.entries(threadLabels)) {
      setText(el, view.labels[key]);
    }
    threadBody.replaceChildren(
      ...(view.rows.length
        ? view.rows.map((r) => h('tr', {}, [r.session, r.work, r.tenant, r.thread, r.parent, r.home, r.seen, r.breaks, r.compactions].map((text) => h('td', {}, text))))
        : [h('tr', {}, h('td', { colspan: threadColumns.length, class: 'empty' }, 'No session has run a subagent yet.'))]),
    );
  };

  // The controls.
  const feedback = h('p', { class: 'feedback', role: 'status', 'aria-live': 'polite', id: 'routing-feedback' });
  const affinityButton = h('button', { type: 'button', id: 'affinity-toggle', class: 'primary' }, 'Turn affinity off');
  const spillInput = h('input', {
    type: 'text',
    id: 'spill-input',
    inputmode: 'numeric',
    placeholder: 'auto',
    size: 8,
    'aria-describedby': 'spill-help',
  });
  const spillApply = h('button', { type: 'submit', id: 'spill-apply' }, 'Set threshold');
  const spillAuto = h('button', { type: 'button', id: 'spill-auto' }, 'Use auto');
  const forget = h('button', { type: 'button', id: 'forget-token', hidden: !hasToken() }, 'Forget admin token');
  const spillHelp = h('span', { id: 'spill-help', class: 'muted' });
  const spillForm = h(
    'form',
    { id: 'spill-form', class: 'controls', novalidate: true },
    h('label', { for: 'spill-input' }, 'Spill threshold (requests in flight on the home replica)'),
    spillInput,
    spillApply,
    spillAuto,
  );
  const settings = h(
    'section',
    { class: 'card', 'aria-labelledby': 'settings-heading' },
    h('h2', { id: 'settings-heading' }, 'Routing settings'),
    h('p', { class: 'muted' }, 'Changes take effect for the next request, without a restart. They need the admin token.'),
    h('fieldset', {}, h('legend', {}, 'Affinity'),
      h('p', { class: 'muted', id: 'affinity-help' }, 'On: each conversation stays on the replica holding its prefix cache. Off: every request goes to the least-loaded replica, like vLLM\u2019s own balancer.'),
      affinityButton),
    h('fieldset', {}, h('legend', {}, 'Spill threshold'), spillForm, h('p', {}, spillHelp)),
    h('div', { class: 'feedback-row' }, feedback, forget),
  );

  main.append(
    h('p', {}, h('a', { href: '#/models' }, '\u2190 All models'), ' \u00b7 ',
      h('a', { href: `#/stats/${encodeURIComponent(name)}` }, 'Tokens per second')),
    h('h1', {}, name),
    info,
    banner,
    engine.section,
    card,
    workingSet.section,
    threads,
    settings,
  );

  let state = null;

  const say = (text, ok) => {
    feedback.textContent = text;
    feedback.className = `feedback ${ok ? 'ok' : 'bad'}`;
  };

  const change = async (body, done) => {
    const token = await adminToken();
    forget.hidden = !hasToken();
    if (!token) {
      say('Nothing changed: no admin token was given.', false);
      return;
    }
    for (const b of [affinityButton, spillApply, spillAuto]) {
      b.disabled = true;
    }
    try {
      await patchRouting(name, body, token);
      say(`${done} It applies from the next request.`, true);
      poller.now();
    } catch (err) {
      if (err.status === 401) {
        forgetToken();
        forget.hidden = true;
      }
      say(changeErrorText(err.status ?? 0, err.detail), false);
    } finally {
      for (const b of [affinityButton, spillApply, spillAuto]) {
        b.disabled = false;
      }
    }
  };

  affinityButton.addEventListener('click', () => {
    const next = !(state?.affinity ?? true);
    change({ affinity: next }, next ? 'Affinity is on.' : 'Affinity is off.');
  });
  spillForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const parsed = parseSpillInput(spillInput.value);
    if (!parsed.ok) {
      say(parsed.error, false);
      spillInput.focus();
      return;
    }
    change({ spill_threshold: parsed.value },
      parsed.value === 'auto' ? 'The spill threshold is auto.' : `The spill threshold is ${parsed.value}.`);
  });
  spillAuto.addEventListener('click', () => {
    spillInput.value = '';
    change({ spill_threshold: 'auto' }, 'The spill threshold is auto.');
  });
  forget.addEventListener('click', () => {
    forgetToken();
    forget.hidden = true;
    say('The admin token is forgotten; the next change asks for it again.', true);
  });

  const update = (json) => {
    updateThreads(json);
    const view = routingCard(json, Date.now());
    state = view;
    setText(labels.affinity, view.labels.affinity);
    labels.affinity.className = view.affinity ? 'on' : 'off';
    setText(labels.spill, view.labels.spill);
    setText(labels.sticky, view.labels.sticky);
    setText(labels.inFlight, view.labels.inFlight);
    setText(prefixBreaks, view.prefixBreaksLabel);
    prefixBreaks.hidden = view.prefixBreaksLabel === '';
    setText(queued, view.queuedLabel);
    queued.hidden = view.queuedLabel === '';
    setText(sharedState, view.sharedStateLabel);
    sharedState.hidden = view.sharedStateLabel === '';
    tbody.replaceChildren(
      ...(view.rows.length
        ? view.rows.map((row) => markWorkingSet(replicaRowElement(row), row))
        : [h('tr', {}, h('td', { colspan: replicaColumns.length, class: 'empty' }, 'No replicas.'))]),
    );
    setText(since, view.sinceText);
    setText(other, view.otherText);
    other.hidden = view.otherText === '';
    setText(affinityButton, view.affinity ? 'Turn affinity off' : 'Turn affinity on');
    affinityButton.setAttribute('aria-describedby', 'affinity-help');
    setText(spillHelp, view.isAuto
      ? `Now auto: ${formatInt(view.threshold)} (a quarter of max_num_seqs). Enter a number to fix it.`
      : `Now fixed at ${formatInt(view.threshold)}. “Use auto” goes back to a quarter of max_num_seqs.`);
    const parts = [];
    if (json.served_model_name) {
      parts.push(`Served as ${json.served_model_name}`);
    }
    if (typeof json.max_num_seqs === 'number') {
      parts.push(`max_num_seqs ${json.max_num_seqs}`);
    }
    parts.push(`${view.rows.length} replica${view.rows.length === 1 ? '' : 's'}`);
    setText(info, parts.join(' \u00b7 '));
    // The logs endpoint is asked only for a launched model (it answers 404 for the others).
    if (engine.update(json.launch, Date.now(), logsFetched) && !logPoller) {
      logPoller = poll(async (signal) => {
        try {
          const logs = await getModelLogs(name, LOG_LINES, signal);
          logsFetched = true;
          engine.showLog(logsText(logs));
          window.wardenConsole.logs = logs;
          window.wardenConsole.logUpdates = (window.wardenConsole.logUpdates ?? 0) + 1;
        } catch (err) {
          if (err?.name === 'AbortError') {
            throw err;
          }
          logsFetched = false;
        }
      }, 2000);
    }
    window.wardenConsole.model = json;
    window.wardenConsole.card = view;
    window.wardenConsole.workingSet = workingSet.update(json);
    window.wardenConsole.updates = (window.wardenConsole.updates ?? 0) + 1;
    window.wardenConsole.ready = true;
  };

  const poller = poll(async (signal) => {
    try {
      update(await getModel(name, signal));
      banner.hidden = true;
    } catch (err) {
      if (err?.name === 'AbortError') {
        throw err;
      }
      banner.textContent =
        err.status === 404 ? `No model named “${name}” is configured.` : `Cannot load the model: ${err.message}${err.detail ? ` (${err.detail})` : ''}`;
      banner.hidden = false;
    }
  }, 1500);

  return {
    unmount: () => {
      poller.stop();
      logPoller?.stop();
    },
  };
}
