#!/usr/bin/env python3
"""A stuck engine: answers /health, /v1/models and /metrics (token counters that never move), and holds every
inference request. mode hang0: never answers, reports running 0. mode hang0-bare: the same without token
counters. mode stall: sends a stream's header and first event, then nothing, reporting the held requests as
running. mode wedged: never answers, reporting the held requests as running. Prints its port."""
import socket, sys, threading

mode = sys.argv[1]
held = [0]
lock = threading.Lock()

def serve(c):
    buf = b''
    while b'\r\n\r\n' not in buf:
        d = c.recv(65536)
        if not d:
            return
        buf += d
    head, _, rest = buf.partition(b'\r\n\r\n')
    line = head.split(b'\r\n')[0].decode()
    length = 0
    for h in head.split(b'\r\n')[1:]:
        k, _, v = h.partition(b':')
        if k.strip().lower() == b'content-length':
            length = int(v)
    while len(rest) < length:
        rest += c.recv(65536)
    path = line.split(' ')[1]
    if path.endswith('/metrics'):
        running = held[0] if mode in ('stall', 'wedged') else 0
        body = f'vllm:num_requests_running{{model_name="q"}} {running}\nvllm:num_requests_waiting{{model_name="q"}} 0\n'
        if mode != 'hang0-bare':
            body += 'vllm:prompt_tokens_total{model_name="q"} 1000\nvllm:generation_tokens_total{model_name="q"} 500\n'
    elif path.endswith('/v1/models'):
        body = '{"object":"list","data":[{"id":"q","object":"model","max_model_len":32768}]}'
    elif path.endswith('/health'):
        body = ''
    else:
        with lock:
            held[0] += 1
        if mode == 'stall':
            ev = b'data: {"id":"c","object":"chat.completion.chunk","model":"q","choices":[{"index":0,"delta":{"role":"assistant","content":"first"}}]}\n\n'
            c.sendall(b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n' + b'%x\r\n' % len(ev) + ev + b'\r\n')
        try:
            while c.recv(4096):
                pass
        finally:
            with lock:
                held[0] -= 1
        return
    c.sendall(f'HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}'.encode())
    c.close()

s = socket.socket()
s.bind(('127.0.0.1', 0))
s.listen(128)
print(f'listening on http://127.0.0.1:{s.getsockname()[1]}', flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
