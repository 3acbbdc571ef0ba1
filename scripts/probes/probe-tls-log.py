#!/usr/bin/env python3
"""Finding 11 (TLS port) and 8 (log line). usage: probe_tls_log.py BINARY"""
import json, os, socket, ssl, subprocess, sys, tempfile, time, urllib.request
binary = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
d = tempfile.mkdtemp()
subprocess.run(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=localhost',
                '-keyout', os.path.join(d, 'k.pem'), '-out', os.path.join(d, 'c.pem')], check=True, capture_output=True)
def start(args, err=subprocess.DEVNULL):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, text=True)
    return p, int(p.stdout.readline().strip().rsplit(':', 1)[1])
sim, sim_port = start([binary, 'sim', '--port', '0', '--preset', 'instant', '--served-model-name', 'q', '--log-level', 'warn'])
cfg = os.path.join(d, 'w.yaml')
open(cfg, 'w').write(f"tls: {{ cert_file: {d}/c.pem, key_file: {d}/k.pem }}\nmodels:\n  - name: m\n    served_model_name: q\n    replicas: {{ urls: [http://127.0.0.1:{sim_port}] }}\n")
log = open(os.path.join(d, 'log'), 'w+')
w, port = start([binary, 'serve', '--config', cfg, '--listen', '127.0.0.1:0', '--state-dir', d, '--log-level', 'info'], log)
time.sleep(1)
for sent in [b'GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', b'\x01\x02 garbage\r\n\r\n']:
    s = socket.create_connection(('127.0.0.1', port)); s.settimeout(5)
    s.sendall(sent)
    try:
        got = s.recv(200)
    except Exception as e:
        got = repr(e).encode()
    print('plain bytes on the TLS port:', repr(got.split(b'\r\n')[0]) if got else '(closed, nothing said)')
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
body = json.dumps({'model': 'm', 'max_tokens': 2, 'messages': [{'role': 'user', 'content': 'hi'}]}).encode()
req = urllib.request.Request(f'https://127.0.0.1:{port}/v1/chat/completions', body,
    {'Content-Type': 'application/json', 'X-Warden-Session': 's1', 'X-Claude-Code-Agent-Id': 'a status=999 replica=7'})
print('request:', urllib.request.urlopen(req, context=ctx).status)
m = urllib.request.urlopen(f'https://127.0.0.1:{port}/metrics', context=ctx).read().decode()
print('tls metric:', [l for l in m.splitlines() if 'tls' in l and not l.startswith('#')] or 'none')
time.sleep(0.5)
w.terminate(); w.wait(); sim.terminate()
log.seek(0)
text = log.read()
print('log lines about TLS:', [l[:160] for l in text.splitlines() if 'TLS' in l] or 'none')
print('request log line:', [l[l.find('request model'):] for l in text.splitlines() if 'request model' in l])
