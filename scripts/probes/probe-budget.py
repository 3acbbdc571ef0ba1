#!/usr/bin/env python3
"""Finding 1: eight unauthenticated connections declaring 32 MiB bodies, then keyed inference.
usage: probe_budget.py LM_WARDEN_BINARY"""
import json, socket, sys

import probe_lib

binary = sys.argv[1]
sim, sim_port = probe_lib.sim(binary, '--preset', 'instant')
w, port = probe_lib.warden(binary, f"""admin_token: secret
api_keys: [client-key]
models:
  - name: m
    served_model_name: q
    replicas: {{ urls: [http://127.0.0.1:{sim_port}] }}
""")
held = []
paths = [('GET', '/health'), ('GET', '/'), ('POST', '/no/such/path'), ('PATCH', '/api/models/m/routing'), ('POST', '/api/reload')]
which = sys.argv[2] if len(sys.argv) > 2 else 'admin'
if which == 'inference':
    paths = [('POST', '/v1/chat/completions'), ('POST', '/v1/messages')]
for method, path in (paths * 8)[:8]:
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {32 << 20}\r\n\r\n'.encode() + b' ' * 1024)
    s.settimeout(2)
    try:
        got = s.recv(200).decode(errors='replace').split('\r\n')[0]
    except socket.timeout:
        got = '(no answer: the body is awaited, its 32 MiB reserved)'
    print(f'{method} {path}: {got}')
    held.append(s)
body = json.dumps({'model': 'm', 'max_tokens': 4, 'messages': [{'role': 'user', 'content': 'hi'}]})
statuses = []
for i in range(5):
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer client-key\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}'.encode())
    statuses.append(s.recv(100).decode(errors='replace').split('\r\n')[0])
    s.close()
print('keyed inference beside them:', statuses)
for s in held:
    s.close()
