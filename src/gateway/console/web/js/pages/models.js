// Models: every configured model, its replicas and their health, requests in flight.
import { getModels } from '../api.js';
import { h, poll } from '../dom.js';
import { formatInt, modelList } from '../present.js';

function replicaBadges(model) {
  if (model.replicas.length === 0) {
    return h('span', { class: 'muted' }, `${model.replicaCount} replica(s)`);
  }
  return h(
    'span',
    { class: 'replica-dots' },
    model.replicas.map((r) =>
      h(
        'span',
        {
          class: `badge ${r.healthy ? 'ok' : 'bad'}`,
          title: `Replica ${r.index} (${r.url}): ${r.healthy ? 'healthy' : r.lastError || 'unhealthy'}`,
        },
        `${r.index} ${r.healthy ? 'up' : 'down'}`,
      ),
    ),
  );
}

function engineBadge(m) {
  if (!m.launch) {
    return h('span', { class: 'muted' }, 'not launched');
  }
  return h(
    'span',
    { class: `badge status ${m.launch.tone}`, title: m.launch.title, dataset: { status: m.launch.status } },
    m.launch.label,
  );
}

function modelRow(m) {
  const href = `#/models/${encodeURIComponent(m.name)}`;
  return h(
    'tr',
    { dataset: { model: m.name } },
    h('th', { scope: 'row', class: 'text-left' }, h('a', { href }, m.name)),
    h('td', { class: 'text-left' }, m.servedName),
    h('td', { class: 'text-left', dataset: { field: 'engine' } }, engineBadge(m),
      m.launch?.reason ? h('div', { class: 'muted small' }, m.launch.reason) : null),
    h('td', {}, `${formatInt(m.healthyCount)} / ${formatInt(m.replicaCount)}`),
    h('td', { class: 'text-left' }, replicaBadges(m), h('div', { class: 'muted small' }, m.layout)),
    h('td', { dataset: { field: 'in-flight' } }, formatInt(m.inFlight)),
    h('td', { class: 'text-left' }, m.affinity ? 'on' : 'off'),
    h('td', { class: 'text-left' }, m.spill.replace(/^Spill threshold /, '')),
    h('td', { class: 'text-left' }, h('a', { href: `#/stats/${encodeURIComponent(m.name)}` }, 'Tokens/s')),
  );
}

export function mount(main) {
  document.title = 'Models · LM Warden';
  const banner = h('p', { class: 'banner', role: 'alert', hidden: true });
  const tbody = h('tbody');
  const table = h(
    'table',
    { id: 'models-table' },
    h('caption', {}, 'Every model configured in the warden. Live: updates every 2 seconds.'),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        [
          ['Model', true],
          ['Served as', true],
          ['Engine', true],
          ['Healthy', false],
          ['Replicas', true],
          ['In flight', false],
          ['Affinity', true],
          ['Spill threshold', true],
          ['Stats', true],
        ].map(([c, left]) => h('th', { scope: 'col', class: left ? 'text-left' : null }, c)),
      ),
    ),
    tbody,
  );
  main.append(
    h('h1', {}, 'Models'),
    banner,
    h('section', { class: 'card', 'aria-labelledby': 'models-heading' },
      h('h2', { id: 'models-heading' }, 'Configured models'),
      h('div', { class: 'table-scroll' }, table)),
  );

  const poller = poll(async (signal) => {
    let json;
    try {
      json = await getModels(signal);
    } catch (err) {
      if (err?.name === 'AbortError') {
        throw err;
      }
      banner.textContent = `Cannot load the models: ${err.message}${err.detail ? ` (${err.detail})` : ''}`;
      banner.hidden = false;
      return;
    }
    banner.hidden = true;
    const models = modelList(json);
    tbody.replaceChildren(
      ...(models.length
        ? models.map(modelRow)
        : [h('tr', {}, h('td', { colspan: 9, class: 'empty' }, 'No models are configured.'))]),
    );
    window.wardenConsole.models = models;
    window.wardenConsole.ready = true;
  }, 2000);
  return { unmount: () => poller.stop() };
}
