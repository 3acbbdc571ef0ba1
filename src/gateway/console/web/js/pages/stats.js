// Stats: "Tokens per second" over the last hour. Prompt tokens/s as stacked bars (cache hit at the
// bottom, computed on top), completion tokens/s in a second panel below with a synced cursor, and the
// cache hit rate over the window as a summary.
import { getModels, getStats } from '../api.js';
import { h, poll, setText } from '../dom.js';
import {
  binRates,
  binSecondsFor,
  formatInt,
  formatPercent,
  formatRate,
  modelList,
  statsBuckets,
  statsEnd,
  statsSummary,
} from '../present.js';

const WINDOWS = [
  { seconds: 300, label: 'Last 5 minutes' },
  { seconds: 900, label: 'Last 15 minutes' },
  { seconds: 3600, label: 'Last hour' },
];

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function clock(seconds) {
  return new Date(seconds * 1000).toISOString().slice(11, 19);
}

// Width for the plots: the container's, but never so narrow that bars become unreadable (the container
// then scrolls sideways).
function plotWidth(container) {
  return Math.max(640, Math.floor(container.clientWidth));
}

export function mount(main, { model: requested }) {
  document.title = 'Stats · LM Warden';
  const banner = h('p', { class: 'banner', role: 'alert', hidden: true });
  const select = h('select', { id: 'stats-model' });
  const windowSelect = h(
    'select',
    { id: 'stats-window' },
    WINDOWS.map((w) => h('option', { value: String(w.seconds), selected: w.seconds === 3600 }, w.label)),
  );
  const summaryValues = {
    hitRate: h('dd', { id: 'summary-hit-rate' }, '–'),
    cached: h('dd', { id: 'summary-cached' }, '–'),
    computed: h('dd', { id: 'summary-computed' }, '–'),
    completion: h('dd', { id: 'summary-completion' }, '–'),
  };
  const windowName = h('span', {}, 'last hour');
  const summary = h(
    'dl',
    { class: 'summary' },
    h('div', {}, h('dt', {}, 'Cache hit rate, ', windowName), summaryValues.hitRate),
    h('div', {}, h('dt', {}, 'Prompt tokens from cache'), summaryValues.cached),
    h('div', {}, h('dt', {}, 'Prompt tokens computed'), summaryValues.computed),
    h('div', {}, h('dt', {}, 'Completion tokens'), summaryValues.completion),
  );
  const promptBox = h('div', { class: 'chart', id: 'chart-prompt' });
  const completionBox = h('div', { class: 'chart', id: 'chart-completion' });
  const tooltip = h('div', { class: 'chart-tooltip', hidden: true, role: 'presentation' });
  const tableBody = h('tbody');
  const note = h('p', { class: 'muted' });
  const scroller = h(
    'div',
    { class: 'chart-scroll' },
    h('p', { class: 'chart-title', id: 'prompt-title' }, 'Prompt tokens per second'),
    promptBox,
    h('p', { class: 'chart-title', id: 'completion-title' }, 'Completion tokens per second'),
    completionBox,
  );
  main.append(
    h('h1', {}, 'Tokens per second'),
    banner,
    h(
      'section',
      { class: 'card', 'aria-labelledby': 'tps-heading' },
      h('h2', { id: 'tps-heading', class: 'visually-hidden' }, 'Tokens per second'),
      h(
        'div',
        { class: 'toolbar' },
        h('label', { for: 'stats-model' }, 'Model', select),
        h('label', { for: 'stats-window' }, 'Window', windowSelect),
      ),
      summary,
      scroller,
      note,
      h(
        'details',
        {},
        h('summary', {}, 'The same data as a table'),
        h(
          'div',
          { class: 'table-scroll' },
          h(
            'table',
            { id: 'stats-table' },
            h('caption', {}, 'Tokens per second in each interval with traffic'),
            h(
              'thead',
              {},
              h('tr', {}, ['Interval (UTC)', 'Cache hit', 'Computed', 'Completion'].map((c) => h('th', { scope: 'col' }, c))),
            ),
            tableBody,
          ),
        ),
      ),
    ),
  );

  let model = requested;
  let windowS = 3600;
  let binned = null;
  let binSeconds = binSecondsFor(windowS);
  let plots = null;
  let xRange = [0, 1];

  const destroyPlots = () => {
    plots?.prompt.destroy();
    plots?.completion.destroy();
    plots = null;
  };

  const showTooltip = (u) => {
    const i = u.cursor.idx;
    if (i == null || !binned || u.cursor.left == null || u.cursor.left < 0) {
      tooltip.hidden = true;
      return;
    }
    const start = binned.x[i];
    tooltip.replaceChildren(
      h('strong', {}, `${clock(start)}–${clock(start + binSeconds)} UTC`),
      h('br'),
      `Cache hit ${formatRate(binned.hit[i])} tokens/s`,
      h('br'),
      `Computed ${formatRate(binned.computed[i])} tokens/s`,
      h('br'),
      `Prompt ${formatRate(binned.hit[i] + binned.computed[i])} tokens/s`,
      h('br'),
      `Completion ${formatRate(binned.completion[i])} tokens/s`,
    );
    tooltip.hidden = false;
    const left = u.cursor.left + u.over.offsetLeft;
    const flip = left > promptBox.clientWidth - 220;
    tooltip.style.left = `${flip ? left - 200 : left + 14}px`;
    tooltip.style.top = `${u.over.offsetTop + 8}px`;
  };

  const axis = (label) => ({
    label,
    stroke: cssVar('--chart-axis'),
    grid: { stroke: cssVar('--chart-grid'), width: 1 },
    ticks: { stroke: cssVar('--chart-grid'), width: 1 },
    size: 60,
    values: (u, splits) => splits.map((v) => formatRate(v)),
  });
  // Ticks in UTC like the tooltip, seconds only when the bins are shorter than a minute.
  const timeAxis = () => ({
    values: (u, splits) => splits.map((v) => (binSeconds < 30 ? clock(v) : clock(v).slice(0, 5))),
    stroke: cssVar('--chart-axis'),
    grid: { stroke: cssVar('--chart-grid'), width: 1 },
    ticks: { stroke: cssVar('--chart-grid'), width: 1 },
  });
  const bars = () => window.uPlot.paths.bars({ size: [0.85, 40], align: 0 });
  const rawValue = (key) => (u, v, si, i) =>
    i == null || !binned ? '–' : `${formatRate(binned[key][i])} tokens/s`;
  const xValue = (u, v) => (v == null ? '–' : `${clock(v - binSeconds / 2)}–${clock(v + binSeconds / 2)}`);
  const scales = () => ({
    x: { time: true, range: () => xRange },
    y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] },
  });

  const createPlots = () => {
    const width = plotWidth(scroller);
    const sync = { key: 'warden-tokens', setSeries: false };
    const hit = cssVar('--chart-hit');
    const computed = cssVar('--chart-computed');
    const completion = cssVar('--chart-completion');
    const prompt = new window.uPlot(
      {
        width,
        height: 260,
        scales: scales(),
        legend: { live: true },
        cursor: { sync, y: false, points: { show: false } },
        series: [
          { label: 'Time (UTC)', value: xValue },
          // Drawn first and as tall as both parts together, so the cache-hit bars drawn over its bottom
          // make the stack; the legend and tooltip show each part's own value.
          { label: 'Prompt, computed', fill: computed, stroke: computed, width: 0, paths: bars(), points: { show: false }, value: rawValue('computed') },
          { label: 'Prompt, cache hit', fill: hit, stroke: hit, width: 0, paths: bars(), points: { show: false }, value: rawValue('hit') },
        ],
        axes: [timeAxis(), axis('prompt tokens/s')],
        hooks: { setCursor: [showTooltip] },
      },
      [[], [], []],
      promptBox,
    );
    const completionPlot = new window.uPlot(
      {
        width,
        height: 170,
        scales: scales(),
        legend: { live: true },
        cursor: { sync, y: false, points: { show: false } },
        series: [
          { label: 'Time (UTC)', value: xValue },
          { label: 'Completion', fill: completion, stroke: completion, width: 0, paths: bars(), points: { show: false }, value: rawValue('completion') },
        ],
        axes: [timeAxis(), axis('completion tokens/s')],
      },
      [[], []],
      completionBox,
    );
    prompt.over.parentNode.appendChild(tooltip);
    prompt.over.addEventListener('mouseleave', () => {
      tooltip.hidden = true;
    });
    plots = { prompt, completion: completionPlot };
    window.wardenConsole.plots = plots;
  };

  const draw = () => {
    if (!binned || !window.uPlot) {
      return;
    }
    if (!plots) {
      createPlots();
    }
    const x = binned.x.map((t) => t + binSeconds / 2);
    xRange = [binned.x[0], binned.x[binned.x.length - 1] + binSeconds];
    const stacked = binned.computed.map((c, i) => c + binned.hit[i]);
    plots.prompt.setData([x, stacked, binned.hit]);
    plots.completion.setData([x, binned.completion]);
    promptBox.dataset.hitSum = String(binned.hit.reduce((a, b) => a + b, 0));
    promptBox.dataset.computedSum = String(binned.computed.reduce((a, b) => a + b, 0));
    completionBox.dataset.completionSum = String(binned.completion.reduce((a, b) => a + b, 0));
  };

  const renderTable = () => {
    const rows = [];
    for (let i = binned.x.length - 1; i >= 0; i--) {
      if (binned.hit[i] + binned.computed[i] + binned.completion[i] === 0) {
        continue;
      }
      const start = binned.x[i];
      rows.push(
        h(
          'tr',
          {},
          h('th', { scope: 'row' }, `${clock(start)}–${clock(start + binSeconds)}`),
          h('td', {}, formatRate(binned.hit[i])),
          h('td', {}, formatRate(binned.computed[i])),
          h('td', {}, formatRate(binned.completion[i])),
        ),
      );
    }
    tableBody.replaceChildren(
      ...(rows.length ? rows : [h('tr', {}, h('td', { colspan: 4, class: 'empty' }, 'No traffic in this window.'))]),
    );
  };

  const loadModels = async () => {
    let models = [];
    try {
      models = modelList(await getModels());
    } catch (err) {
      banner.textContent = `Cannot load the models: ${err.message}${err.detail ? ` (${err.detail})` : ''}`;
      banner.hidden = false;
      return false;
    }
    if (!model && models.length) {
      model = models[0].name;
    }
    const names = models.map((m) => m.name);
    if (model && !names.includes(model)) {
      names.push(model);
    }
    select.replaceChildren(...names.map((n) => h('option', { value: n, selected: n === model }, n)));
    if (!model) {
      banner.textContent = 'No models are configured.';
      banner.hidden = false;
      return false;
    }
    return true;
  };

  let poller = null;
  const refresh = async (signal) => {
    let json;
    try {
      json = await getStats(model, windowS, signal);
    } catch (err) {
      if (err?.name === 'AbortError') {
        throw err;
      }
      banner.textContent = `Cannot load the stats: ${err.message}${err.detail ? ` (${err.detail})` : ''}`;
      banner.hidden = false;
      return;
    }
    banner.hidden = true;
    const buckets = statsBuckets(json);
    const endS = statsEnd(json, Date.now());
    binned = binRates(buckets, { endS, windowS, binSeconds });
    const s = statsSummary(json, binned);
    setText(summaryValues.hitRate, formatPercent(s.hitRate));
    setText(summaryValues.cached, formatInt(s.cached));
    setText(summaryValues.computed, formatInt(s.computed));
    setText(summaryValues.completion, formatInt(s.completion));
    setText(
      note,
      `Bars are ${binSeconds}-second averages. Cache hit: prompt tokens the replica read from its prefix cache, as the engine counted them for each finished request; requests the engine did not measure count as computed.`,
    );
    draw();
    renderTable();
    window.wardenConsole.stats = json;
    window.wardenConsole.chart = { binSeconds, ...binned };
    window.wardenConsole.updates = (window.wardenConsole.updates ?? 0) + 1;
    window.wardenConsole.ready = true;
  };

  select.addEventListener('change', () => {
    location.hash = `#/stats/${encodeURIComponent(select.value)}`;
  });
  windowSelect.addEventListener('change', () => {
    windowS = Number(windowSelect.value);
    binSeconds = binSecondsFor(windowS);
    setText(windowName, WINDOWS.find((w) => w.seconds === windowS)?.label.toLowerCase() ?? '');
    poller?.now();
  });

  const resize = new ResizeObserver(() => {
    if (plots) {
      const width = plotWidth(scroller);
      plots.prompt.setSize({ width, height: 260 });
      plots.completion.setSize({ width, height: 170 });
    }
  });
  resize.observe(scroller);

  // Colours are drawn into the canvas, so a theme switch rebuilds the plots.
  const scheme = window.matchMedia('(prefers-color-scheme: dark)');
  const onScheme = () => {
    destroyPlots();
    draw();
  };
  scheme.addEventListener('change', onScheme);

  let stopped = false;
  loadModels().then((ok) => {
    if (ok && !stopped) {
      document.title = `Stats · ${model} · LM Warden`;
      poller = poll(refresh, 5000);
    }
  });

  return {
    unmount() {
      stopped = true;
      poller?.stop();
      resize.disconnect();
      scheme.removeEventListener('change', onScheme);
      destroyPlots();
    },
  };
}
