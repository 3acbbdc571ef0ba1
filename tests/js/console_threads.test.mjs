// The console's threads card (src/gateway/console/web/js/threads.js): the model JSON's sessions → rows.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { heldLabel, shortKey, threadsCard } from '../../src/gateway/console/web/js/threads.js';

test('a session with its main thread and a subagent gives one row per thread', () => {
  const view = threadsCard({
    threads: 1,
    threaded_sessions: 1,
    thread_compactions: 2,
    side_requests: 1234,
    sessions: [
      {
        session: 'aaaaaaaa11111111',
        last_seen_s_ago: 1,
        threads: [
          { thread: 'aaaaaaaa11111111', main: true, parent: null, home: 0, last_seen_s_ago: 1, prefix_breaks: 0, compactions: 2 },
          { thread: 'bbbbbbbb22222222', main: false, parent: 'aaaaaaaa11111111', home: 3, last_seen_s_ago: 65, prefix_breaks: 1, compactions: 0 },
          { thread: 'cccccccc33333333', main: false, parent: 'bbbbbbbb22222222', home: null, last_seen_s_ago: 2, prefix_breaks: 0, compactions: 0 },
        ],
      },
    ],
  });
  assert.equal(view.rows.length, 3);
  assert.deepEqual(
    view.rows.map((r) => [r.session, r.thread, r.parent, r.home, r.breaks, r.compactions]),
    [
      ['aaaaaaaa', 'main', '', '0', '0', '2'],
      ['aaaaaaaa', 'bbbbbbbb', 'main', '3', '1', '0'],
      ['aaaaaaaa', 'cccccccc', 'bbbbbbbb', '–', '0', '0'],
    ],
  );
  assert.equal(view.labels.threads, '1 subagent thread in 1 session');
  assert.equal(view.labels.compactions, 'Compactions 2');
  assert.equal(view.labels.side, 'Side requests 1,234');
});

test('nothing to show, or a malformed answer, gives no rows and zero labels', () => {
  for (const model of [undefined, {}, { sessions: 'x' }, { sessions: [{ threads: null }] }]) {
    const view = threadsCard(model);
    assert.deepEqual(view.rows, []);
    assert.equal(view.labels.threads, '0 subagent threads in 0 sessions');
  }
  assert.equal(shortKey(undefined), '–');
});

test('a session says the class and tenant of its task under way, and the held requests are counted by class', () => {
  const view = threadsCard({
    sessions: [
      {
        session: 'aaaaaaaa11111111',
        class: 'interactive',
        tenant: '5e0c9a4b1f2d3c7e',
        threads: [{ thread: 'aaaaaaaa11111111', main: true, home: 0 }],
      },
      { session: 'bbbbbbbb22222222', class: null, tenant: null, threads: [{ thread: 'bbbbbbbb22222222', main: true }] },
    ],
    held: [
      { class: 'headless', tenant: null, weight: 1, waited_s: 125 },
      { class: 'interactive', tenant: 'x', weight: 1, waited_s: 3 },
      { class: 'headless', tenant: null, weight: 1, waited_s: 40 },
    ],
  });
  assert.deepEqual(
    view.rows.map((r) => [r.session, r.work, r.tenant]),
    [
      ['aaaaaaaa', 'interactive', '5e0c9a4b'],
      ['bbbbbbbb', '–', '–'],
    ],
  );
  assert.equal(view.labels.held, '3 held: 1 interactive (longest 3 s), 2 headless (longest 2 min)');
  assert.equal(heldLabel(undefined), 'Nothing held');
});
