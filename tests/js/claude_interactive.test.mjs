// The README's interactive Claude Code line, typed into a terminal as a person would: a fresh home with only
// the first-start step of docs/agents.md done (no internet here), the line run in tmux against a real
// `lm-warden serve` launching `lm-warden sim` with tool calls and the context `make run` gives it, the
// folder trusted with the arrow keys, and a prompt that starts subagents. The session must come back to its
// prompt with the subagents done, without a compaction loop, a gateway notice or a failed request, and the
// warden must show the session with its threads and no prefix break.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { skip, startRecorder, useWarden } from './agents_support.mjs';
import { MODEL, sourceDir, tempDir, waitFor } from './console_support.mjs';

const CONTEXT = 40000;  // config/demo.yaml's --max-model-len, which `make run` prints as the window

// The README's line (between backticks, over several lines), pointed at `url` instead of port 8080.
function readmeLine(url) {
  const readme = fs.readFileSync(path.join(sourceDir, 'README.md'), 'utf8');
  const m = readme.match(/`(ANTHROPIC_BASE_URL=[^`]*claude --model[^`]*)`/s);
  assert.ok(m, 'the README has a Claude Code line');
  const line = m[1].replace(/\s+/g, ' ').trim();
  assert.match(line, new RegExp(`CLAUDE_CODE_MAX_CONTEXT_TOKENS=${CONTEXT}\\b`), 'the README names make run\'s window');
  return line.replace('http://127.0.0.1:8080', url);
}

// A tmux server of the test's own (its own socket), one window of a person's terminal size.
function terminal(dir) {
  const socket = path.join(dir, 'tmux.sock');
  const tmux = (...args) => execFileSync('tmux', ['-S', socket, ...args], { encoding: 'utf8' });
  return {
    start: (cwd, command) => tmux('new-session', '-d', '-s', 'cc', '-x', '180', '-y', '50', '-c', cwd, command),
    screen: () => tmux('capture-pane', '-p', '-t', 'cc'),  // what the window shows now
    keys: (...keys) => tmux('send-keys', '-t', 'cc', ...keys),
    type: (text) => tmux('send-keys', '-t', 'cc', text),
    // Ends the session and waits until Claude Code (the pane's process) has exited: it still writes to its
    // home for a moment after the terminal goes, and the home is removed next.
    stop: async () => {
      let pid = null;
      try {
        pid = Number(tmux('list-panes', '-t', 'cc', '-F', '#{pane_pid}').trim()) || null;
        tmux('kill-server');
      } catch {
        // already gone
      }
      // Gone, or a zombie its new parent has not reaped yet.
      const alive = () => {
        try {
          const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
          return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
        } catch {
          return false;
        }
      };
      if (pid) {
        await waitFor(() => !alive(), { timeoutMs: 15000, intervalMs: 100, what: 'Claude Code to exit' });
      }
    },
  };
}

describe('the README\'s interactive Claude Code line, typed in tmux', { skip, timeout: 300000 }, () => {
  const w = useWarden(['--tool-rounds', '3.5'], CONTEXT);

  test('a first start in a fresh offline home runs subagents and comes back to its prompt', async (t) => {
    const home = tempDir();  // its own: Claude Code may still write there while the warden's folder goes
    const cwd = path.join(home, 'project');
    fs.mkdirSync(cwd, { recursive: true });
    fs.writeFileSync(path.join(cwd, 'notes.txt'), 'The release is planned for Friday.\n');
    fs.writeFileSync(path.join(cwd, 'main.py'), 'print("hello")\n');
    // docs/agents.md, "First start in a fresh home, without internet access", step 1.
    fs.writeFileSync(path.join(home, '.claude.json'), JSON.stringify({ hasCompletedOnboarding: true }));
    const recorder = await startRecorder(w.base);
    w.recorders.push(recorder);
    const bin = path.join(sourceDir, 'node_modules', '.bin');
    const term = terminal(w.dir);
    t.after(async () => {
      await term.stop();
      fs.rmSync(home, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    });
    term.start(cwd, `env HOME=${home} PATH=${bin}:${process.env.PATH} ${readmeLine(recorder.url)}`);

    // Waits for the screen to satisfy `seen`; a timeout says what the screen showed.
    const until = async (seen, what, timeoutMs = 30000) => {
      try {
        await waitFor(() => seen(term.screen()), { timeoutMs, intervalMs: 250, what });
      } catch (e) {
        const sent = recorder.records.map((r) => `${r.method} ${r.url} ${r.status} ${r.body?.model ?? ''}`);
        throw new Error(`${e.message}; the screen:\n${term.screen()}\nrequests:\n${sent.join('\n')}`);
      }
    };
    // A terminal program reads keys only once it has drawn its question, a little after: a person looks
    // again and presses the key again. So each step presses what the screen asks for until the screen moves
    // on (a key pressed twice does no harm: the second one finds the next screen).
    await until((screen) => {
      if (screen.includes('manual mode on')) {
        return true;
      }
      if (/❯ No, exit/.test(screen)) {
        term.keys('Down');
      } else if (/❯ Yes, I trust this folder/.test(screen)) {
        term.keys('Enter');
      }
      return false;
    }, 'the folder trusted and the prompt in manual mode');
    const prompt = 'explore this folder using a subagent, then read notes.txt';
    let looks = 0;
    await until((screen) => {
      if (recorder.records.some((r) => r.url.startsWith('/v1/messages'))) {
        return true;  // sent: the warden has its first request
      }
      if (screen.includes(prompt)) {
        term.keys('Enter');
      } else if (looks++ % 8 === 0) {
        term.type(prompt);  // again if two seconds on the input box is still empty
      }
      return false;
    }, 'the prompt typed and sent');
    // Done: the turn's time line, after the subagents finished: "✻ <verb> for 42s", with a verb picked at
    // random that may not be ASCII ("Sautéed"), and past a minute (a loaded machine) "for 1m 5s" or "for 2m".
    await until((screen) => /✻ \S+ for (\d+[dhm] )*\d+[dhms]\b/.test(screen), 'the turn to end', 180000);
    // A request sent as the turn ends (Claude Code's own follow-ups) may still be on its way: its answer first.
    const answered = () => recorder.records.every((r) => !r.url.startsWith('/v1/messages') || r.status !== 0);
    await until(answered, 'every request sent to have its answer');
    const screen = term.screen();
    for (const bad of ['Autocompact is thrashing', "isn't eligible", 'API Error', 'Prompt is too long']) {
      assert.ok(!screen.includes(bad), `the screen shows "${bad}":\n${screen}`);
    }
    const agentCalls = recorder.records.filter((r) => r.url.startsWith('/v1/messages'));
    assert.ok(agentCalls.length >= 3, `${agentCalls.length} requests`);
    const failed = agentCalls.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body?.model}`);
    assert.deepEqual(failed, [], 'every request of the session answered 200');

    const card = await (await fetch(`${w.base}/api/models/${encodeURIComponent(MODEL)}`)).json();
    assert.equal(card.prefix_breaks, 0, `prefix breaks: ${JSON.stringify(card.sessions)}`);
    const session = card.sessions.find((s) => s.threads.length >= 2);
    assert.ok(session, `a session with its main thread and a subagent: ${JSON.stringify(card.sessions)}`);
    assert.ok(session.threads[0].main, 'the main thread first');
  });
});
