#!/usr/bin/env python3
"""Finding 3: allowed_origins / allowed_hosts changed by a reload. usage: probe_origins.py LM_WARDEN_BINARY"""
import json, socket, sys, urllib.request
import probe_lib
binary = sys.argv[1]
sim, sim_port = probe_lib.sim(binary, '--preset', 'instant')
def config(extra):
    return f"admin_token: secret\n{extra}models:\n  - name: m\n    served_model_name: q\n    replicas: {{ urls: [http://127.0.0.1:{sim_port}] }}\n"
w, port = probe_lib.warden(binary, config('allowed_origins: ["https://old.example"]\n'))
def status(origin, host='127.0.0.1'):
    body = json.dumps({'model': 'm', 'max_tokens': 2, 'messages': [{'role': 'user', 'content': 'hi'}]})
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}'.encode())
    return s.recv(100).decode().split(' ')[1]
print('before reload: old origin', status('https://old.example'), 'new origin', status('https://new.example'), 'Host warden.lan', status('https://old.example', 'warden.lan'))
probe_lib.config_file(config('allowed_origins: ["https://new.example"]\nallowed_hosts: [warden.lan]\n'))
req = urllib.request.Request(f'http://127.0.0.1:{port}/api/reload', b'', {'Authorization': 'Bearer secret'}, method='POST')
print('reload:', urllib.request.urlopen(req).read().decode())
print('after reload: old origin', status('https://old.example'), 'new origin', status('https://new.example'), 'Host warden.lan', status('https://new.example', 'warden.lan'))
