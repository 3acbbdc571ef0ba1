// The "Threads" card of a model page: the sessions whose agents run subagents (threads besides the
// main one), each thread with its home replica, as GET /api/models/{name} lists them (docs/api.md,
// "Threads"). Pure: builds plain values for the page to render.
import { formatDuration, formatInt } from './present.js';

function num(v) {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

// The first 8 hex digits of a key: enough to tell threads apart on one page.
export function shortKey(key) {
  return typeof key === 'string' ? key.slice(0, 8) : '–';
}

// "2 held: 1 interactive (longest 3 s), 1 headless (longest 2 min)", or "Nothing held" (docs/api.md, `held`).
export function heldLabel(held) {
  const list = Array.isArray(held) ? held : [];
  if (list.length === 0) {
    return 'Nothing held';
  }
  const parts = [];
  for (const cls of ['interactive', 'headless']) {
    const of = list.filter((r) => r?.class === cls);
    if (of.length > 0) {
      const longest = Math.max(...of.map((r) => num(r.waited_s)));
      parts.push(`${formatInt(of.length)} ${cls} (longest ${formatDuration(longest)})`);
    }
  }
  return `${formatInt(list.length)} held: ${parts.join(', ')}`;
}

// Labels for the card's header, and one row per thread (sessions in the order given, most recent first).
export function threadsCard(model) {
  const sessions = Array.isArray(model?.sessions) ? model.sessions : [];
  const rows = [];
  for (const s of sessions) {
    const threads = Array.isArray(s?.threads) ? s.threads : [];
    for (const t of threads) {
      rows.push({
        session: shortKey(s.session),
        work: typeof s.class === 'string' ? s.class : '–',
        tenant: typeof s.tenant === 'string' ? shortKey(s.tenant) : '–',
        thread: t.main ? 'main' : shortKey(t.thread),
        parent: t.main ? '' : t.parent ? (t.parent === s.session ? 'main' : shortKey(t.parent)) : '',
        home: typeof t.home === 'number' ? String(t.home) : '–',
        seen: `${formatDuration(num(t.last_seen_s_ago))} ago`,
        breaks: formatInt(num(t.prefix_breaks)),
        compactions: formatInt(num(t.compactions)),
      });
    }
  }
  const threads = num(model?.threads);
  const sessionsWithThreads = num(model?.threaded_sessions);
  return {
    rows,
    labels: {
      threads: `${formatInt(threads)} subagent thread${threads === 1 ? '' : 's'} in ${formatInt(sessionsWithThreads)} session${sessionsWithThreads === 1 ? '' : 's'}`,
      compactions: `Compactions ${formatInt(num(model?.thread_compactions))}`,
      side: `Side requests ${formatInt(num(model?.side_requests))}`,
      held: heldLabel(model?.held),
    },
  };
}

export const threadColumns = ['Session', 'Class', 'Tenant', 'Thread', 'Started by', 'Home', 'Last seen', 'Prefix breaks', 'Compactions'];
