#!/usr/bin/env python3
"""Admin reads against the I/O thread: S sessions with 32 threads each on model a, then another model's
(b) chat p50, idle and while 4 clients read the largest sessions page of a in a loop.
usage: probe_sessions.py LM_WARDEN_BINARY [S] [readers] [limit]"""
import http.client, json, statistics, sys, threading, time

import probe_lib

binary = sys.argv[1]
sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
readers = int(sys.argv[3]) if len(sys.argv) > 3 else 4
limit = sys.argv[4] if len(sys.argv) > 4 else '100'
sa, port_a = probe_lib.sim(binary, '--preset', 'instant')
sb, port_b = probe_lib.sim(binary, '--preset', 'instant')
w, port = probe_lib.warden(binary, f"""models:
  - name: a
    served_model_name: q
    replicas: {{ urls: [http://127.0.0.1:{port_a}] }}
  - name: b
    served_model_name: q
    replicas: {{ urls: [http://127.0.0.1:{port_b}] }}
""")


def post(c, model, headers):
    body = json.dumps({'model': model, 'max_tokens': 1, 'messages': [{'role': 'user', 'content': 'hi'}]})
    c.request('POST', '/v1/chat/completions', body, {'Content-Type': 'application/json', **headers})
    r = c.getresponse()
    r.read()
    return r.status


def fill(first, last):
    c = http.client.HTTPConnection('127.0.0.1', port)
    for s in range(first, last):
        for t in range(33):
            h = {'X-Warden-Session': f's{s}'}
            if t:
                h['X-Warden-Thread'] = f's{s}-t{t}'
            post(c, 'a', h)


fills = [threading.Thread(target=fill, args=(i * sessions // 4, (i + 1) * sessions // 4)) for i in range(4)]
for t in fills:
    t.start()
for t in fills:
    t.join()


def chat_p50(n=200):
    c = http.client.HTTPConnection('127.0.0.1', port)
    took = []
    for i in range(n):
        t0 = time.perf_counter()
        post(c, 'b', {'X-Warden-Session': f'b{i}'})
        took.append((time.perf_counter() - t0) * 1000)
    return statistics.median(took)


idle = chat_p50()
stop = [False]
page = {}


def read():
    c = http.client.HTTPConnection('127.0.0.1', port)
    while not stop[0]:
        t0 = time.perf_counter()
        c.request('GET', f'/api/models/a/sessions?limit={limit}')
        r = c.getresponse()
        data = r.read()
        page.update(status=r.status, bytes=len(data), ms=round((time.perf_counter() - t0) * 1000, 1))


rs = [threading.Thread(target=read) for _ in range(readers)]
for t in rs:
    t.start()
time.sleep(1)
busy = chat_p50()
stop[0] = True
for t in rs:
    t.join()
rss = [l for l in open(f'/proc/{w.pid}/status') if l.startswith('VmHWM')][0].split()[1]
print(f'{sessions} sessions x 33 threads; GET ?limit={limit}: {page}; model b chat p50 idle {idle:.2f} ms, '
      f'with {readers} readers {busy:.2f} ms (x{busy / idle:.1f}); warden peak RSS {int(rss) // 1024} MiB')
