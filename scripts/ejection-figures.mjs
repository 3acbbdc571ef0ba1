#!/usr/bin/env node
// How long clients wait on a failing replica, and how long the warden takes to route around it: for each
// engine stand-in (hang: answers health and metrics, never inference; stall: a stream's first event, then
// silence; black hole: accepts, never answers, not even /metrics; stuck: like hang, and reports its
// requests running with still token counters; sigstop: a SIGSTOPped `lm-warden sim`), a warden in front of
// it and one working `lm-warden sim`, 8 conversations sent at once (round 1) then their next turns (round 2).
//
// Usage: node scripts/ejection-figures.mjs BINARY [--no-outlier] [--first-byte 10s]
//   --no-outlier  leaves the `outlier:` section out (a binary without outlier ejection refuses it)
// Prints one line per stand-in: detection (first request to the replica shown unhealthy or ejected in
// /api/models/m), the slowest client wait and the failed requests of each round.
// Every process is started by this script and stopped by its pid; servers close at the end.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const SERVED = 'Qwen/Qwen3-4B-Instruct-2507';
const args = process.argv.slice(2);
const binary = args[0];
const withOutlier = !args.includes('--no-outlier');
const firstByte = args.includes('--first-byte') ? args[args.indexOf('--first-byte') + 1] : '10s';
if (!binary) {
  console.error('usage: node scripts/ejection-figures.mjs BINARY [--no-outlier] [--first-byte 10s]');
  process.exit(2);
}
const children = [];
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));

// A child that prints `listening on http://HOST:PORT`: resolves to its port.
function start(argv) {
  const child = spawn(binary, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const seen = (d) => {
      out += d;
      const m = out.match(/listening on http:\/\/[^:\s]+:(\d+)/);
      if (m) {
        resolve({ child, port: Number(m[1]) });
      }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.on('exit', () => reject(new Error(`${argv[0]} exited: ${out}`)));
  });
}

const sim = (scale) =>
  start(['sim', '--port', '0', '--preset', 'instant', '--time-scale', String(scale), '--served-model-name', SERVED,
    '--log-level', 'warn']);

// An HTTP stand-in: /metrics and other GETs answered, inference per `fault`.
function standIn(fault) {
  let hanging = 0;
  const server = http.createServer((req, res) => {
    if (req.method === 'GET') {
      const l = `{engine="0",model_name="${SERVED}"}`;
      const running = fault === 'stuck' ? hanging : 0;
      res.end(req.url === '/metrics'
        ? `vllm:num_requests_running${l} ${running}\nvllm:prompt_tokens_total${l} 1000\nvllm:generation_tokens_total${l} 500\n`
        : '{"object":"list","data":[]}');
      return;
    }
    hanging += 1;
    res.on('close', () => { hanging -= 1; });
    if (fault === 'stall') {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n');
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port })));
}

function blackHole() {
  const sockets = [];
  const server = net.createServer((s) => { sockets.push(s); s.pause(); });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port, sockets })));
}

async function warden(dir, badPort, goodPort, slowScrapes) {
  const cfg = path.join(dir, 'warden.yaml');
  fs.writeFileSync(cfg, [
    slowScrapes ? 'metrics: { scrape_interval: 1s, scrape_timeout: 60s, unhealthy_after: 3 }'
      : 'metrics: { scrape_interval: 250ms, scrape_timeout: 1s, unhealthy_after: 3 }',
    `timeouts: { first_byte: ${firstByte}, idle: ${firstByte} }`,
    withOutlier ? 'outlier: { consecutive_failures: 3, base_ejection: 60s, max_ejection: 300s, stall_after: 2s }' : '',
    'models:', `  - name: m`, `    served_model_name: ${SERVED}`,
    `    replicas: { urls: [http://127.0.0.1:${badPort}, http://127.0.0.1:${goodPort}] }`, ''].join('\n'));
  return start(['serve', '--config', cfg, '--listen', '127.0.0.1:0', '--state-dir', path.join(dir, 'state'),
    '--log-level', 'warn']);
}

function post(port, session, stream) {
  const body = JSON.stringify({ model: 'm', max_tokens: 20, stream, messages: [{ role: 'user', content: `turn ${session}` }] });
  const t0 = Date.now();
  return new Promise((resolve) => {
    const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', 'x-warden-session': session } }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, broken: stream && /"error"\s*:/.test(text), waited: Date.now() - t0 }));
      res.on('error', () => resolve({ status: res.statusCode, broken: true, waited: Date.now() - t0 }));
    });
    req.on('error', () => resolve({ status: 0, broken: true, waited: Date.now() - t0 }));
    req.end(body);
  });
}

async function out(port) {
  const r = await fetch(`http://127.0.0.1:${port}/api/models/m`).then((x) => x.json());
  const bad = r.routing.replicas[0];
  return !bad.healthy || bad.ejected === true;
}

async function measure(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ejection-figures-'));
  const good = await sim(0.005);
  const bad = name === 'sigstop' ? await sim(0.005) : name === 'black hole' ? await blackHole() : await standIn(name);
  const w = await warden(dir, bad.port, good.port, name === 'black hole');
  await new Promise((r) => setTimeout(r, 1000));  // first scrapes
  if (name === 'sigstop') {
    bad.child.kill('SIGSTOP');
  }
  const stream = name === 'stall';
  const t0 = Date.now();
  let detected = null;
  const watch = (async () => {
    while (detected === null && Date.now() - t0 < 120000) {
      if (await out(w.port)) {
        detected = Date.now() - t0;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const sessions = Array.from({ length: 8 }, (_, i) => `${name}-${i}`);
  const rounds = [];
  for (let round = 0; round < 2; round += 1) {
    rounds.push(await Promise.all(sessions.map((s) => post(w.port, s, stream))));
  }
  detected = detected ?? -1;
  await watch;
  const failed = (rs) => rs.filter((r) => r.status !== 200 || r.broken).length;
  const slowest = (rs) => Math.max(...rs.map((r) => r.waited));
  console.log(`${name.padEnd(10)} detection ${detected < 0 ? 'never' : `${(detected / 1000).toFixed(1)} s`}`.padEnd(32) +
    rounds.map((rs, i) => `round ${i + 1}: slowest ${(slowest(rs) / 1000).toFixed(1)} s, failed ${failed(rs)}/8`).join('; '));
  if (name === 'sigstop') {
    bad.child.kill('SIGCONT');
  }
  for (const c of [w.child, good.child, bad.child].filter(Boolean)) {
    c.kill('SIGTERM');
  }
  bad.sockets?.forEach((s) => s.destroy());
  bad.server?.close();
  bad.server?.closeAllConnections?.();
  fs.rmSync(dir, { recursive: true, force: true });
}

console.log(`${binary} ${withOutlier ? 'with' : 'without'} outlier ejection, first_byte = idle = ${firstByte}`);
for (const name of ['hang', 'stall', 'black hole', 'stuck', 'sigstop']) {
  await measure(name);
}
process.exit(0);
