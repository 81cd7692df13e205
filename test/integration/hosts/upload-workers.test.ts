/**
 * Large uploads sent from worker processes, each with an SSH connection of its
 * own, against real OpenSSH servers reached directly: the bytes arrive
 * verified by the host, and a worker that dies, a host that hangs up and a
 * byte corrupted on the host each fail the upload with a typed error and
 * leave the destination as it was.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHost } from '../../../src/hosts/connect.js';
import type { SshHost, UploadWorkerOptions } from '../../../src/hosts/ssh-host.js';
import { maxUploadWorkers } from '../../../src/hosts/upload-worker-runner.js';
import { connectOptionsFor } from '../../support/test-host-connect.js';
import { startTestHosts, type TestHosts } from '../../support/test-hosts.js';

const MIB = 1024 * 1024;
const DEST = '/opt/package.bin';

let env: TestHosts;
let scratch: string;
let file: string;
let data: Buffer;

beforeAll(async () => {
  env = await startTestHosts({ count: 1 });
  scratch = mkdtempSync(join(env.dir, 'scratch-'));
  data = randomBytes(24 * MIB);
  file = join(scratch, 'package.bin');
  writeFileSync(file, data);
});

afterAll(async () => {
  await env?.teardown();
});

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** A host whose uploads of 1 MiB and more go through workers; `workers` collects them. */
async function connect(onWorker?: (worker: ChildProcess) => void): Promise<{ host: SshHost; workers: ChildProcess[] }> {
  const workers: ChildProcess[] = [];
  const uploadWorkers: UploadWorkerOptions = {
    minBytes: MIB,
    onWorker: (worker) => {
      workers.push(worker);
      onWorker?.(worker);
    },
  };
  const host = (await connectHost(connectOptionsFor(env, env.hosts[0]!, { uploadWorkers }))) as SshHost;
  return { host, workers };
}

async function clean(): Promise<void> {
  await env.run(env.hosts[0]!, `rm -f ${DEST} ${DEST}.edgeadm-part /usr/local/bin/cat`);
}

describe('uploads from worker processes', () => {
  it('sends a large file from a worker with its own connection (key signed by this process), verified on the host', async () => {
    await clean();
    const { host, workers } = await connect();
    try {
      const progress: number[] = [];
      const result = await host.put(file, DEST, { onProgress: (p) => progress.push(p.bytesTransferred) });
      expect(workers).toHaveLength(1);
      expect(result).toMatchObject({ skipped: false, bytesSent: data.length, sha256: sha256(data) });
      expect(progress.at(-1)).toBe(data.length);
      expect(await host.sha256(DEST)).toBe(sha256(data));
      expect(await host.exists(`${DEST}.edgeadm-part`)).toBe(false);
      // The same content again: skipped by the probe, no worker started.
      expect(await host.put(file, DEST)).toMatchObject({ skipped: true, bytesSent: 0 });
      expect(workers).toHaveLength(1);
    } finally {
      await host.close();
    }
  }, 60_000);

  it('runs at most one worker per core at once; the uploads beyond run in this process, all verified', async () => {
    await clean();
    const count = maxUploadWorkers() + 1;
    let running = 0;
    let mostAtOnce = 0;
    const { host, workers } = await connect((worker) => {
      mostAtOnce = Math.max(mostAtOnce, ++running);
      worker.once('exit', () => running--);
    });
    try {
      const dests = Array.from({ length: count }, (_, index) => `/opt/parallel-${index}.bin`);
      const results = await Promise.all(dests.map((dest) => host.put(file, dest)));
      expect(results.every((result) => result.bytesSent === data.length)).toBe(true);
      expect(mostAtOnce).toBeGreaterThanOrEqual(1);
      expect(mostAtOnce).toBeLessThanOrEqual(maxUploadWorkers());
      expect(workers.length).toBeLessThan(count);
      for (const dest of dests) expect(await host.sha256(dest)).toBe(sha256(data));
      await env.run(env.hosts[0]!, `rm -f ${dests.join(' ')}`);
    } finally {
      await host.close();
    }
  }, 120_000);

  it('fails with E_HOST_PUT_WORKER when the worker dies mid-upload, keeps the destination, and the next upload resumes', async () => {
    await clean();
    await env.run(env.hosts[0]!, `printf old > ${DEST}`);
    let worker: ChildProcess | undefined;
    const { host } = await connect((started) => (worker = started));
    try {
      let isEnded = false;
      const failure = await host
        .put(file, DEST, {
          onProgress: (p) => {
            if (!isEnded && p.bytesTransferred >= 8 * MIB) {
              isEnded = true;
              worker!.kill('SIGKILL');
            }
          },
        })
        .catch((error: unknown) => error);
      expect(isEnded).toBe(true);
      expect(failure).toMatchObject({ code: 'E_HOST_PUT_WORKER' });
      expect(await env.run(env.hosts[0]!, `cat ${DEST}`)).toBe('old');

      const resumed = await host.put(file, DEST);
      expect(resumed.skipped).toBe(false);
      expect(resumed.resumedFrom + resumed.bytesSent).toBe(data.length);
      expect(await host.sha256(DEST)).toBe(sha256(data));
    } finally {
      await host.close();
    }
  }, 60_000);

  it("fails as disconnected when the host hangs up on the worker's connection, and the next upload resumes", async () => {
    await clean();
    const { host } = await connect();
    try {
      let dropped = 0;
      const failure = await host
        .put(file, DEST, {
          onProgress: (p) => {
            if (dropped === 0 && p.bytesTransferred >= 8 * MIB) dropped = env.dropConnections(env.hosts[0]!);
          },
        })
        .catch((error: unknown) => error);
      expect(dropped).toBeGreaterThan(0);
      expect(failure).toMatchObject({ code: 'E_SSH_DISCONNECTED' });
    } finally {
      await host.close();
    }
    // The host hung up on every connection, this one's own too: the next run connects again.
    const { host: again } = await connect();
    try {
      expect(await again.exists(DEST)).toBe(false);
      const resumed = await again.put(file, DEST);
      expect(resumed.resumedFrom).toBeGreaterThan(0);
      expect(resumed.resumedFrom + resumed.bytesSent).toBe(data.length);
      expect(await again.sha256(DEST)).toBe(sha256(data));
    } finally {
      await again.close();
    }
  }, 60_000);

  it('catches a byte corrupted on the host as the worker’s bytes were written', async () => {
    await clean();
    // Writes one wrong byte into the part file; the bytes on the wire are right.
    await env.run(
      env.hosts[0]!,
      [
        "cat > /usr/local/bin/cat <<'EOF'",
        '#!/bin/sh',
        'case "$(readlink /proc/$$/fd/1)" in',
        '  *.edgeadm-part) head -c 1000; printf X; head -c 1 > /dev/null; exec /bin/cat ;;',
        'esac',
        'exec /bin/cat "$@"',
        'EOF',
        'chmod 755 /usr/local/bin/cat',
      ].join('\n'),
    );
    const { host, workers } = await connect();
    try {
      await expect(host.put(file, DEST)).rejects.toMatchObject({ code: 'E_HOST_PUT_CHECKSUM' });
      expect(workers).toHaveLength(1);
      expect(await host.exists(DEST)).toBe(false);
      expect(await host.exists(`${DEST}.edgeadm-part`)).toBe(false);
    } finally {
      await clean();
      await host.close();
    }
  }, 60_000);
});
