#!/usr/bin/env python3
"""Chunked bodies against the in-flight body budget (256 MiB): N keyed requests of 30 MiB each, sent chunked
(or with a Content-Length) to an engine that holds every request, at once. Prints how many were admitted
(no answer: held by the engine) and refused (503), and the warden's peak RSS (VmHWM).
usage: probe_chunked.py LM_WARDEN_BINARY [chunked|length] [N]"""
import json, os, socket, sys, threading

import probe_lib

binary = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else 'chunked'
n = int(sys.argv[3]) if len(sys.argv) > 3 else 20
fake, fake_port = probe_lib.start([sys.executable, os.path.join(os.path.dirname(__file__), 'fake-engine.py'), 'hang0'])
w, port = probe_lib.warden(binary, f"""api_keys: [client-key]
models:
  - name: m
    served_model_name: q
    replicas: {{ urls: [http://127.0.0.1:{fake_port}] }}
""")
body = json.dumps({'model': 'm', 'max_tokens': 4, 'messages': [{'role': 'user', 'content': 'hi'}]})
body = (body[:-1] + ' ' * (30 << 20) + '}').encode()  # whitespace: 30 MiB of body, no prompt to refuse
out = []
lock = threading.Lock()


def one():
    s = socket.create_connection(('127.0.0.1', port))
    head = 'POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer client-key\r\nContent-Type: application/json\r\n'
    try:
        if mode == 'chunked':
            s.sendall((head + 'Transfer-Encoding: chunked\r\n\r\n').encode())
            for at in range(0, len(body), 1 << 20):
                part = body[at:at + (1 << 20)]
                s.sendall(b'%x\r\n' % len(part) + part + b'\r\n')
            s.sendall(b'0\r\n\r\n')
        else:
            s.sendall((head + f'Content-Length: {len(body)}\r\n\r\n').encode() + body)
    except OSError:
        pass  # refused mid-body: its answer is read below
    s.settimeout(5)
    try:
        got = s.recv(100).decode(errors='replace').split('\r\n')[0] or '(closed)'
    except socket.timeout:
        got = 'admitted (held by the engine)'
    with lock:
        out.append((got, s))


ts = [threading.Thread(target=one) for _ in range(n)]
for t in ts:
    t.start()
for t in ts:
    t.join()
hwm = [l for l in open(f'/proc/{w.pid}/status') if l.startswith('VmHWM')][0].split()[1]
counts = {}
for got, _ in out:
    counts[got] = counts.get(got, 0) + 1
print(f'{n} {mode} bodies of 30 MiB: {counts}; warden peak RSS {int(hwm) // 1024} MiB')
for _, s in out:
    s.close()
