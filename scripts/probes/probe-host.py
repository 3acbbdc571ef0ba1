#!/usr/bin/env python3
"""Finding 11 (Host): missing, empty and duplicate Host on the warden. usage: probe_host.py BINARY"""
import os, socket, subprocess, sys, tempfile, time
binary = sys.argv[1]
d = tempfile.mkdtemp()
cfg = os.path.join(d, 'w.yaml')
open(cfg, 'w').write("models:\n  - name: m\n    replicas: { urls: [http://127.0.0.1:9] }\n")
w = subprocess.Popen([binary, 'serve', '--config', cfg, '--listen', '127.0.0.1:0', '--state-dir', d, '--log-level', 'warn'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
port = int(w.stdout.readline().strip().rsplit(':', 1)[1])
for name, head in [('no Host', ''), ('empty Host', 'Host:\r\n'), ('two Hosts', 'Host: 127.0.0.1\r\nHost: evil.example\r\n')]:
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'GET /health HTTP/1.1\r\n{head}Connection: close\r\n\r\n'.encode())
    print(name + ':', s.recv(200).decode(errors='replace').split('\r\n')[0])
w.terminate()
