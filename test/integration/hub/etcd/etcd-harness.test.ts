/**
 * The test etcd itself (test/support/etcd-cluster.ts): three real members
 * with client TLS; one member killed leaves quorum, two lose it, and the
 * restarted members restore it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdTestCluster } from '../../../support/etcd-cluster.js';

describe('test etcd harness', () => {
  let etcd: EtcdTestCluster;
  beforeAll(async () => {
    etcd = await startEtcdCluster();
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  it('keeps quorum with one member down, loses it with two, and recovers', async () => {
    expect(await etcd.isHealthy(0)).toBe(true);
    // A follower, and asked through another member: killing the raft leader would cost an
    // election, during which /health is false although two of three members are up.
    const follower = await etcd.followerIndex();
    const other = follower === 0 ? 1 : 0;
    await etcd.kill(follower);
    expect(await etcd.isHealthy(other)).toBe(true);
    await etcd.restart(follower);
    await etcd.loseQuorum();
    expect(etcd.members[0]!.isRunning()).toBe(true);
    // Without quorum the last member has no leader: /health turns false once it notices.
    let healthy = true;
    for (let i = 0; i < 100 && healthy; i += 1) {
      healthy = await etcd.isHealthy(0);
      if (healthy) await new Promise((r) => setTimeout(r, 100));
    }
    expect(healthy).toBe(false);
    await etcd.restoreQuorum();
    expect(await etcd.isHealthy(0)).toBe(true);
  });
});
