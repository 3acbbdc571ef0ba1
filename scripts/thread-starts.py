#!/usr/bin/env python3
"""Where new threads find their prompt start cached, through real processes (docs/routing.md, "Threads").

  scripts/thread-starts.py [--binary build/lm-warden] [--sessions 12]

Starts `lm-warden sim` (4 ranks, instant preset) and `lm-warden serve` in front of it, then sends the
sessions one after another, each a Claude Code main thread (a ~7.3k-token start: system prompt and
tools) and a subagent (X-Claude-Code-Agent-Id, its own ~5.3k-token start), 3 turns each, all staying
active. Prints, per session, each thread's replica and the share of its first request's prompt that the
engine read from cache, and the means. Standard library only; stops both processes however it ends.
"""

import argparse
import json
import os
import re
import subprocess
import tempfile
import time
import urllib.request

TOOLS = [{"name": f"T{i}", "description": "tool " * 200, "input_schema": {"type": "object"}} for i in range(4)]
MAIN = "You are the main agent. " + "main rules " * 3000
AGENT = "You are a subagent. " + "agent rules " * 2000


def start(args):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 20
    for line in p.stdout:
        m = re.search(r"listening on http://[^\s:]+:(\d+)", line)
        if m:
            return p, int(m.group(1))
        if time.monotonic() > deadline:
            break
    p.kill()
    raise SystemExit(f"{args[1]} did not start")


def post(port, session, system, turns, agent=None):
    messages = []
    for i in range(turns):
        messages.append({"role": "user", "content": f"{session} step {i} " + "word " * 300})
        if i + 1 < turns:
            messages.append({"role": "assistant", "content": "ok"})
    body = {"model": "m", "max_tokens": 8, "system": system, "tools": TOOLS, "messages": messages}
    headers = {"Content-Type": "application/json", "X-Claude-Code-Session-Id": session}
    if agent:
        headers["X-Claude-Code-Agent-Id"] = agent
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/messages", json.dumps(body).encode(), headers)
    with urllib.request.urlopen(req, timeout=30) as r:
        usage = json.loads(r.read())["usage"]
        cached = usage.get("cache_read_input_tokens", 0)
        return r.headers["x-warden-replica"], cached / (usage["input_tokens"] + cached)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default="build/lm-warden")
    ap.add_argument("--sessions", type=int, default=12)
    args = ap.parse_args()
    procs = []
    try:
        sim, sim_port = start([args.binary, "sim", "--port", "0", "--data-parallel-size", "4", "--preset",
                               "instant", "--served-model-name", "m", "--log-level", "warn"])
        procs.append(sim)
        state = tempfile.mkdtemp()
        config = os.path.join(state, "warden.yaml")
        with open(config, "w") as f:
            f.write("metrics: { scrape_interval: 100ms }\nmodels:\n  - name: m\n    served_model_name: m\n"
                    f"    max_num_seqs: 32\n    replicas: {{ data_parallel: {{ url: http://127.0.0.1:{sim_port},"
                    " size: 4 } }\n")
        warden, port = start([args.binary, "serve", "--config", config, "--listen", "127.0.0.1:0", "--state-dir",
                              state, "--log-level", "warn"])
        procs.append(warden)
        mains, agents = [], []
        for s in range(args.sessions):
            session, agent = f"session-{s}", f"agent{s}"
            main_replica, main_hit = post(port, session, MAIN, 1)
            agent_replica, agent_hit = post(port, session, AGENT, 1, agent)
            for turns in (2, 3):
                post(port, session, MAIN, turns)
                post(port, session, AGENT, turns, agent)
            mains.append(main_hit)
            agents.append(agent_hit)
            print(f"session {s:2}: main on {main_replica} hit {main_hit:.2f}, subagent on {agent_replica} "
                  f"hit {agent_hit:.2f}")
        print(f"first requests read from cache: main threads {sum(mains) / len(mains):.1%}, "
              f"subagents {sum(agents) / len(agents):.1%}")
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)


if __name__ == "__main__":
    main()
