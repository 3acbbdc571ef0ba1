#!/usr/bin/env python3
"""Finding 2: two prompts longer to prefill than stall_after on a two-replica model (sim, A4000 preset,
time scale 1), small requests beside them. usage: probe_prefill.py LM_WARDEN_BINARY [stall_after] [words]"""
import json, sys, threading, time, urllib.request

import probe_lib

binary = sys.argv[1]
stall = sys.argv[2] if len(sys.argv) > 2 else '2s'
words = int(sys.argv[3]) if len(sys.argv) > 3 else 28000

sim, sim_port = probe_lib.sim(binary, '-d', '2', '--preset', 'a4000-qwen3-4b', '--time-scale', '1')
w, port = probe_lib.warden(binary, f"""admin_token: secret
metrics: {{ scrape_interval: 200ms }}
outlier: {{ stall_after: {stall} }}
models:
  - name: m
    served_model_name: q
    max_num_seqs: 32
    replicas: {{ data_parallel: {{ url: http://127.0.0.1:{sim_port}, size: 2 }} }}
""")

def post(text, headers, out, key):
    body = json.dumps({'model': 'm', 'max_tokens': 4, 'messages': [{'role': 'user', 'content': text}]}).encode()
    req = urllib.request.Request(f'http://127.0.0.1:{port}/v1/chat/completions', body, {'Content-Type': 'application/json', **headers})
    t = time.time()
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            out[key] = (r.status, round(time.time() - t, 1))
    except urllib.error.HTTPError as e:
        out[key] = (e.code, round(time.time() - t, 1), e.read()[:120])

out = {}
longs = [threading.Thread(target=post, args=(f'prompt-{i}' + ' lorem' * words, {'X-Warden-Replica': str(i)}, out, f'long{i}')) for i in range(2)]
for t in longs:
    t.start()
time.sleep(1)
smalls = []
for i in range(6):
    t = threading.Thread(target=post, args=(f'small {i}', {'X-Warden-Session': f's{i}'}, out, f'small{i}'))
    t.start(); smalls.append(t); time.sleep(0.5)
for t in longs + smalls:
    t.join()
for k in sorted(out):
    print(k, out[k])
m = urllib.request.urlopen(f'http://127.0.0.1:{port}/metrics').read().decode()
print('ejections:', [l for l in m.splitlines() if l.startswith('lm_warden_replica_ejections_total')] or 'none')
