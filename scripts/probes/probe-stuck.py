#!/usr/bin/env python3
"""A replica that hangs with `running 0` (hang0; hang0-bare: an engine without token counters), whose
streams stall while it reports them running (stall), or that wedges with 20 pinned prompts of ~60,000
tokens running (wedged), next to a working sim.
usage: probe_stuck.py LM_WARDEN_BINARY hang0|hang0-bare|stall|wedged [seconds]"""
import json, os, socket, sys, threading, time, urllib.request

import probe_lib

binary, mode = sys.argv[1], sys.argv[2]
limit = float(sys.argv[3]) if len(sys.argv) > 3 else 20

fake, fake_port = probe_lib.start([sys.executable, os.path.join(os.path.dirname(__file__), 'fake-engine.py'), mode])
sim, sim_port = probe_lib.sim(binary, '--preset', 'instant', '--time-scale', '0.005')
w, port = probe_lib.warden(binary, f"""metrics: {{ scrape_interval: 200ms }}
outlier: {{ stall_after: 2s }}
models:
  - name: m
    served_model_name: q
    replicas: {{ urls: [http://127.0.0.1:{fake_port}, http://127.0.0.1:{sim_port}] }}
""")
t0 = time.time()
out = {}

def one(i):
    stream = mode == 'stall'
    hdr = {'Content-Type': 'application/json', 'X-Warden-Session': f'conv-{i}'}
    if mode in ('stall', 'wedged'):
        hdr['X-Warden-Replica'] = '0'
    content = f'turn {i} ' + ('x ' * 120_000 if mode == 'wedged' else '')  # ~60,000 estimated tokens
    body = json.dumps({'model': 'm', 'max_tokens': 20, 'stream': stream, 'messages': [{'role': 'user', 'content': content}]}).encode()
    s = socket.create_connection(('127.0.0.1', port))
    s.settimeout(limit)
    h = ''.join(f'{k}: {v}\r\n' for k, v in hdr.items())
    s.sendall(f'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n{h}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n'.encode() + body)
    got = b''
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
            if stream and (b'"error"' in got or b'[DONE]' in got):
                break
    except socket.timeout:
        pass
    text = got.decode(errors='replace')
    status = text.split('\r\n')[0][9:12] if text else '---'
    what = 'error event' if stream and '"error"' in text else ('done' if '[DONE]' in text or (not stream and status == '200') else 'silent')
    out[i] = (status, what, round(time.time() - t0, 1))

n = {'stall': 2, 'wedged': 20}.get(mode, 24)
ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in ts:
    t.start()
for t in ts:
    t.join()
answered = sum(1 for v in out.values() if v[1] != 'silent')
print(f'{mode}: {answered} of {n} answered within {limit:.0f} s;', sorted(set((v[0], v[1]) for v in out.values())),
      'last at', max(v[2] for v in out.values()), 's')
m = urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics').read().decode()
print('ejections:', [l for l in m.splitlines() if l.startswith('lm_warden_replica_ejections_total')] or 'none')
