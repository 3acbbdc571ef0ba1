#!/usr/bin/env python3
"""Many connections without a key, each sending an admin body under the admin limit slowly, and keyed
inference beside them. usage: probe-flood.py LM_WARDEN_BINARY N"""
import json, socket, sys, time
import probe_lib
binary = sys.argv[1]; n = int(sys.argv[2])
sim, sim_port = probe_lib.sim(binary, '--preset', 'instant')
w, port = probe_lib.warden(binary, f"api_keys: [k]\nmax_inflight_body_size: 1MiB\nmodels:\n  - name: m\n    served_model_name: q\n    replicas: {{ urls: [http://127.0.0.1:{sim_port}] }}\n")
held = []
for i in range(n):
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'PATCH /api/models/m/routing HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000\r\n\r\n{{'.encode())
    held.append(s)
time.sleep(0.5)
body = json.dumps({'model': 'm', 'max_tokens': 4, 'messages': [{'role': 'user', 'content': 'x' * 200000}]})
st = []
for i in range(5):
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}'.encode())
    st.append(s.recv(20).decode().split('\r\n')[0]); s.close()
print(f'{n} unauthenticated 60 KB admin bodies held open (budget 1 MiB); keyed 200 KB inference:', st)
for s in held:
    s.close()
