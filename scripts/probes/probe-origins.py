#!/usr/bin/env python3
"""Finding 3: allowed_origins / allowed_hosts changed by a reload. usage: probe_origins.py LM_WARDEN_BINARY"""
import json, os, socket, subprocess, sys, tempfile, time, urllib.request
binary = sys.argv[1]
d = tempfile.mkdtemp()
def start(args):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return p, int(p.stdout.readline().strip().rsplit(':', 1)[1])
sim, sim_port = start([binary, 'sim', '--port', '0', '--preset', 'instant', '--served-model-name', 'q', '--log-level', 'warn'])
cfg = os.path.join(d, 'w.yaml')
def write(extra):
    open(cfg, 'w').write(f"admin_token: secret\n{extra}models:\n  - name: m\n    served_model_name: q\n    replicas: {{ urls: [http://127.0.0.1:{sim_port}] }}\n")
write('allowed_origins: ["https://old.example"]\n')
w, port = start([binary, 'serve', '--config', cfg, '--listen', '127.0.0.1:0', '--state-dir', d, '--log-level', 'warn'])
time.sleep(1)
def status(origin, host='127.0.0.1'):
    body = json.dumps({'model': 'm', 'max_tokens': 2, 'messages': [{'role': 'user', 'content': 'hi'}]})
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}'.encode())
    return s.recv(100).decode().split(' ')[1]
print('before reload: old origin', status('https://old.example'), 'new origin', status('https://new.example'), 'Host warden.lan', status('https://old.example', 'warden.lan'))
write('allowed_origins: ["https://new.example"]\nallowed_hosts: [warden.lan]\n')
req = urllib.request.Request(f'http://127.0.0.1:{port}/api/reload', b'', {'Authorization': 'Bearer secret'}, method='POST')
print('reload:', urllib.request.urlopen(req).read().decode())
print('after reload: old origin', status('https://old.example'), 'new origin', status('https://new.example'), 'Host warden.lan', status('https://new.example', 'warden.lan'))
w.terminate(); sim.terminate()
