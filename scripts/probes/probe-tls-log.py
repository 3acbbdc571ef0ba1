#!/usr/bin/env python3
"""Finding 11 (TLS port) and 8 (log line). usage: probe_tls_log.py BINARY"""
import json, os, socket, subprocess, sys, urllib.request
import probe_lib
binary = sys.argv[1]
d = probe_lib.workdir
subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost',
                '-keyout', os.path.join(d, 'k.pem'), '-out', os.path.join(d, 'c.pem')], check=True, capture_output=True)
sim, sim_port = probe_lib.sim(binary, '--preset', 'instant')
config = f"tls: {{ cert_file: {d}/c.pem, key_file: {d}/k.pem }}\nmodels:\n  - name: m\n    served_model_name: q\n    replicas: {{ urls: [http://127.0.0.1:{sim_port}] }}\n"
log = open(os.path.join(d, 'log'), 'w+')
w, port = probe_lib.warden(binary, config, 'info', log, tls=True)
for sent in [b'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', b'\x01\x02 garbage\r\n\r\n']:
    s = socket.create_connection(('127.0.0.1', port)); s.settimeout(5)
    s.sendall(sent)
    try:
        got = s.recv(200)
    except Exception as e:
        got = repr(e).encode()
    print('plain bytes on the TLS port:', repr(got.split(b'\r\n')[0]) if got else '(closed, nothing said)')
ctx = probe_lib.insecure
body = json.dumps({'model': 'm', 'max_tokens': 2, 'messages': [{'role': 'user', 'content': 'hi'}]}).encode()
req = urllib.request.Request(f'https://127.0.0.1:{port}/v1/chat/completions', body,
    {'Content-Type': 'application/json', 'X-Warden-Session': 's1', 'X-Claude-Code-Agent-Id': 'a status=999 replica=7'})
print('request:', urllib.request.urlopen(req, context=ctx).status)
m = urllib.request.urlopen(f'https://127.0.0.1:{port}/metrics', context=ctx).read().decode()
print('tls metric:', [l for l in m.splitlines() if 'tls' in l and not l.startswith('#')] or 'none')
probe_lib.stop(w)  # the log is whole once the warden has exited
log.seek(0)
text = log.read()
print('log lines about TLS:', [l[:160] for l in text.splitlines() if 'TLS' in l] or 'none')
print('request log line:', [l[l.find('request model'):] for l in text.splitlines() if 'request model' in l])
