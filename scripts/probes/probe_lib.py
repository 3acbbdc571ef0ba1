"""What the probes share: a scratch directory, the processes they start (the sim, the warden, a stand-in
engine), readiness by polling GET /health instead of sleeping, and a stop of each of those processes, by
its pid, when the probe exits."""
import atexit, os, shutil, ssl, subprocess, sys, tempfile, time, urllib.request

workdir = tempfile.mkdtemp(prefix='lm-warden-probe-')
atexit.register(shutil.rmtree, workdir, True)  # registered first: runs after the processes are stopped

# The warden's own certificate on a TLS listener is self-signed: the probes talk to it without checking it.
insecure = ssl.create_default_context()
insecure.check_hostname = False
insecure.verify_mode = ssl.CERT_NONE


def stop(p):
    """SIGTERM to `p` (by its pid) if it still runs, then wait for it; SIGKILL after 30 s."""
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def wait_healthy(port, tls=False, timeout=30):
    """Polls GET /health on 127.0.0.1:`port` until it answers 200."""
    url = f'{"https" if tls else "http"}://127.0.0.1:{port}/health'
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2, context=insecure if tls else None) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit(f'{url} did not answer 200 within {timeout} s')
        time.sleep(0.05)


def start(args, stderr=subprocess.DEVNULL, tls=False):
    """Starts `args`, reads its port from its first line ("listening on http://127.0.0.1:PORT") and waits
    until it answers /health. It is stopped when the probe exits. Returns (process, port)."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=stderr, text=True)
    atexit.register(stop, p)
    line = p.stdout.readline()
    if not line:
        sys.exit(f'{" ".join(args[:2])} exited ({p.wait()}) before it listened')
    port = int(line.strip().rsplit(':', 1)[1])
    wait_healthy(port, tls)
    return p, port


def sim(binary, *args):
    """`lm-warden sim` serving model "q" on a free port, with `args` (a preset, sizes...)."""
    return start([binary, 'sim', '--port', '0', '--served-model-name', 'q', '--log-level', 'warn', *args])


def config_file(text):
    """Writes the warden's configuration into the scratch directory; returns its path."""
    path = os.path.join(workdir, 'w.yaml')
    with open(path, 'w') as f:
        f.write(text)
    return path


def warden(binary, config, log_level='warn', stderr=subprocess.DEVNULL, tls=False):
    """`lm-warden serve` with the configuration `config` (text) on a free loopback port."""
    return start([binary, 'serve', '--config', config_file(config), '--listen', '127.0.0.1:0', '--state-dir',
                  workdir, '--log-level', log_level], stderr, tls)
