// `make deb`'s package (scripts/make-deb.sh) built from the tested binary: what it installs, its control
// data, lintian's verdict, the unit through `systemd-analyze verify`, and the packaged configuration
// through the packaged binary's `check-config`.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { sourceDir, tempDir, warden } from './console_support.mjs';

let deb;
let root;
const out = tempDir();

after(() => fs.rmSync(out, { recursive: true, force: true }));

before(() => {
  const printed = execFileSync('bash', [path.join(sourceDir, 'scripts', 'make-deb.sh'), path.dirname(warden()), out], {
    encoding: 'utf8',
  });
  deb = printed.trim().split('\n').pop();
  root = path.join(out, 'root');
  execFileSync('dpkg-deb', ['-x', deb, root]);
});

test('the package holds the binary, the unit, the config, the man page, dashboards and examples', () => {
  const listing = execFileSync('dpkg-deb', ['--contents', deb], { encoding: 'utf8' });
  for (const file of [
    './usr/bin/lm-warden',
    './etc/lm-warden/warden.yaml',
    './lib/systemd/system/lm-warden.service',
    './usr/share/man/man1/lm-warden.1.gz',
    './usr/share/doc/lm-warden/copyright',
    './usr/share/doc/lm-warden/deployment.md',
    './usr/share/lm-warden/grafana/lm-warden.json',
    './usr/share/lm-warden/prometheus/lm-warden.rules.yml',
    './usr/share/lm-warden/haproxy/lm-warden.cfg',
  ]) {
    assert.match(listing, new RegExp(` ${file.replaceAll('.', '\\.')}\\n`), file);
  }
  assert.match(listing, /^-rwxr-xr-x root\/root .* \.\/usr\/bin\/lm-warden$/m);
});

test('the config is a conffile and the dependencies name the shared libraries', () => {
  const control = execFileSync('dpkg-deb', ['--info', deb, 'conffiles'], { encoding: 'utf8' });
  assert.equal(control.trim(), '/etc/lm-warden/warden.yaml');
  const depends = execFileSync('dpkg-deb', ['--field', deb, 'Depends'], { encoding: 'utf8' });
  assert.match(depends, /^adduser, /);
  // The maintainer scripts call deb-systemd-helper and deb-systemd-invoke.
  assert.match(depends, /(^|, )init-system-helpers( \(>= [0-9.]+\))?(,|$)/);
  for (const lib of ['libhiredis', 'libyaml-cpp', 'libsqlite3', 'libssl3', 'libstdc\\+\\+6']) {
    assert.match(depends, new RegExp(lib), lib);
  }
  const postinst = execFileSync('dpkg-deb', ['--info', deb, 'postinst'], { encoding: 'utf8' });
  assert.match(postinst, /adduser --system --group [^\n]*\\\n[^\n]* lm-warden\n/);
});

test('lintian reports no error and no warning', () => {
  const r = spawnSync('lintian', [deb], { encoding: 'utf8' });
  const lines = `${r.stdout}${r.stderr}`.split('\n').filter((l) => /^[EW]: /.test(l));
  assert.deepEqual(lines, []);
});

test('systemd-analyze verify accepts the unit', () => {
  // verify checks that ExecStart's binary exists and that Documentation's man page opens: point it at
  // the packaged binary and the packaged man page (MANPATH), not at whatever this machine has installed.
  const unit = path.join(out, 'lm-warden.service');
  const text = fs.readFileSync(path.join(root, 'lib/systemd/system/lm-warden.service'), 'utf8');
  fs.writeFileSync(unit, text.replaceAll('/usr/bin/lm-warden', path.join(root, 'usr/bin/lm-warden')));
  const r = spawnSync('systemd-analyze', ['verify', unit], {
    encoding: 'utf8',
    env: { ...process.env, MANPATH: path.join(root, 'usr/share/man') },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr.trim(), '');
  assert.match(text, /^Type=notify$/m);
  assert.match(text, /^WatchdogSec=/m);
  assert.match(text, /^User=lm-warden$/m);
  assert.match(text, /^StateDirectory=lm-warden$/m);
  // `systemctl reload` checks the file first: a refused file makes the reload fail, not exit 0.
  const reloads = [...text.matchAll(/^ExecReload=(.*)$/gm)].map((m) => m[1]);
  assert.deepEqual(reloads, ['/usr/bin/lm-warden check-config /etc/lm-warden/warden.yaml', '/bin/kill -HUP $MAINPID']);
});

test('the packaged binary accepts the packaged config', () => {
  const out = execFileSync(path.join(root, 'usr/bin/lm-warden'), ['check-config', path.join(root, 'etc/lm-warden/warden.yaml')], {
    encoding: 'utf8',
  });
  assert.match(out, /is valid \(1 model, 4 replicas, listen 127\.0\.0\.1:8080\)/);
});
