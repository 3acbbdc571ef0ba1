#!/usr/bin/env python3
"""Request bodies against the in-flight body budget (256 MiB): N keyed requests of 30 MiB each at once, to an
engine that holds every request, sent chunked, with a Content-Length, or a mix. Prints how many were admitted
(held by the engine, read from the warden's lm_warden_requests_in_flight) and refused (503), and the warden's
peak RSS (VmHWM) beside the bound aimed at: the budget + 64 MiB.

  chunked, length: one round of N bodies of that kind
  mixed:           one round, every other body chunked
  rounds:          on one warden, rounds of each kind after one another (length, chunked, mixed, length,
                   chunked), each round's requests ended before the next: memory a round left behind counts

--runs K repeats it on K fresh wardens and prints each run's peak and their median.
usage: probe-chunked.py LM_WARDEN_BINARY [chunked|length|mixed|rounds] [N] [--runs K]"""
import json, os, re, socket, statistics, sys, threading, time, urllib.request

import probe_lib

BUDGET_MIB = 256
TARGET_MIB = BUDGET_MIB + 64
BODY = json.dumps({'model': 'm', 'max_tokens': 4, 'messages': [{'role': 'user', 'content': 'hi'}]})
BODY = (BODY[:-1] + ' ' * (30 << 20) + '}').encode()  # whitespace: 30 MiB of body, no prompt to refuse
HEAD = ('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer client-key\r\n'
        'Content-Type: application/json\r\n')
KINDS = {
    'chunked': [['chunked']],
    'length': [['length']],
    'mixed': [['chunked', 'length']],
    'rounds': [['length'], ['chunked'], ['chunked', 'length'], ['length'], ['chunked']],
}


def send(s, kind):
    """Sends the body on `s`, in 1 MiB chunks or with a Content-Length. A refusal may cut it off."""
    try:
        if kind == 'chunked':
            s.sendall((HEAD + 'Transfer-Encoding: chunked\r\n\r\n').encode())
            for at in range(0, len(BODY), 1 << 20):
                part = BODY[at:at + (1 << 20)]
                s.sendall(b'%x\r\n' % len(part) + part + b'\r\n')
            s.sendall(b'0\r\n\r\n')
        else:
            s.sendall((HEAD + f'Content-Length: {len(BODY)}\r\n\r\n').encode() + BODY)
    except OSError:
        pass  # refused mid-body: its answer is read below


def in_flight(port):
    """The requests the warden relays now (held by the engine): admitted ones."""
    req = urllib.request.Request(f'http://127.0.0.1:{port}/metrics',
                                 headers={'Authorization': 'Bearer client-key'})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    return int(sum(float(v) for v in re.findall(r'^lm_warden_requests_in_flight\{[^}]*\} (\S+)$', text, re.M)))


def wait_for(what, deadline_s=60):
    deadline = time.monotonic() + deadline_s
    while not what():
        if time.monotonic() > deadline:
            sys.exit('the warden did not get there in time')
        time.sleep(0.02)


def one_round(port, n, kinds):
    """N bodies at once, kinds taken in turn. Returns (admitted, refused, other answers)."""
    answers = {}
    lock = threading.Lock()
    socks = [socket.create_connection(('127.0.0.1', port)) for _ in range(n)]

    def one(i):
        send(socks[i], kinds[i % len(kinds)])
        try:
            got = socks[i].recv(100).decode(errors='replace').split('\r\n')[0] or '(closed)'
        except OSError:
            got = '(closed)'
        with lock:
            answers[i] = got

    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    # Every body is either refused (answered) or admitted (relayed to the engine, which holds it).
    wait_for(lambda: len(answers) + in_flight(port) >= n)
    admitted = in_flight(port)
    for s in socks:
        s.shutdown(socket.SHUT_RDWR)  # the clients leave: the warden ends their requests
    for t in ts:
        t.join()
    for s in socks:
        s.close()
    wait_for(lambda: in_flight(port) == 0)
    others = [a for a in answers.values() if ' 503 ' not in a and a != '(closed)']
    return admitted, sum(1 for a in answers.values() if ' 503 ' in a), others


def run(binary, mode, n):
    fake, fake_port = probe_lib.start(
        [sys.executable, os.path.join(os.path.dirname(__file__), 'fake-engine.py'), 'hang0'])
    w, port = probe_lib.warden(binary, f"""api_keys: [client-key]
max_inflight_body_size: {BUDGET_MIB}MiB
models:
  - name: m
    served_model_name: q
    replicas: {{ urls: [http://127.0.0.1:{fake_port}] }}
""")
    rounds = []
    for kinds in KINDS[mode]:
        admitted, refused, others = one_round(port, n, kinds)
        rounds.append(f'{"+".join(kinds)}: {admitted} admitted, {refused} refused'
                      + (f', other answers {others}' if others else ''))
    hwm = [l for l in open(f'/proc/{w.pid}/status') if l.startswith('VmHWM')][0].split()[1]
    probe_lib.stop(w)
    probe_lib.stop(fake)
    return int(hwm) // 1024, rounds


def main():
    args = [a for a in sys.argv[1:]]
    runs = 1
    if '--runs' in args:
        at = args.index('--runs')
        runs = int(args[at + 1])
        del args[at:at + 2]
    binary = args[0]
    mode = args[1] if len(args) > 1 else 'chunked'
    n = int(args[2]) if len(args) > 2 else 20
    if mode not in KINDS:
        sys.exit(__doc__)
    peaks = []
    for i in range(runs):
        peak, rounds = run(binary, mode, n)
        peaks.append(peak)
        print(f'run {i + 1}: {n} bodies of 30 MiB a round; {"; ".join(rounds)}; warden peak RSS {peak} MiB '
              f'(bound {TARGET_MIB} MiB: budget {BUDGET_MIB} + 64)', flush=True)
    median = statistics.median(peaks)
    print(f'{mode}: peak RSS median {median:g} MiB over {runs} run(s) (min {min(peaks)}, max {max(peaks)}); '
          f'bound {TARGET_MIB} MiB: {"within" if median <= TARGET_MIB else "OVER"}')


main()
