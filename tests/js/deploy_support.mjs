// Shared plumbing of the deployment tests (deploy/): a redis-server on a free loopback port, and a list of
// the processes a test started, stopped at its end whatever happened.
import { Child, freePort, waitFor } from './console_support.mjs';

export class Started {
  constructor() {
    this.children = [];
  }

  keep(child) {
    this.children.push(child);
    return child;
  }

  async stopAll() {
    await Promise.all(this.children.map((c) => c.stop()));
  }
}

// Debian's redis-server without persistence, its files in `dir`. Returns its port.
export async function startRedis(started, dir) {
  const port = await freePort();
  const redis = started.keep(
    new Child('redis-server', 'redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
    ]),
  );
  await waitFor(
    () => {
      if (redis.exited) {
        throw new Error(`redis-server exited:\n${redis.output}`);
      }
      return redis.output.includes('Ready to accept connections');
    },
    { what: 'redis-server to accept connections' },
  );
  return port;
}
