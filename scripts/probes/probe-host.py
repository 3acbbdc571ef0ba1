#!/usr/bin/env python3
"""Finding 11 (Host): missing, empty and duplicate Host on the warden. usage: probe_host.py BINARY"""
import socket, sys
import probe_lib
binary = sys.argv[1]
w, port = probe_lib.warden(binary, "models:\n  - name: m\n    replicas: { urls: [http://127.0.0.1:9] }\n")
for name, head in [('no Host', ''), ('empty Host', 'Host:\r\n'), ('two Hosts', 'Host: 127.0.0.1\r\nHost: evil.example\r\n')]:
    s = socket.create_connection(('127.0.0.1', port))
    s.sendall(f'GET /health HTTP/1.1\r\n{head}Connection: close\r\n\r\n'.encode())
    print(name + ':', s.recv(200).decode(errors='replace').split('\r\n')[0])
