/**
 * The rollout identity model (SECURITY.md, rollout-permissions.ts) as a
 * property over generated sequences of actions by several hub users (apply,
 * delete, undo, pause, resume, abort, set properties, hold, release) through
 * the real operator API and controller, onto a fake cluster that enforces
 * RBAC per impersonated user and records the identity of every write:
 *
 * - the hub allows exactly what the model allows (owner or admin changes a
 *   rollout; admins alone hold clusters and set properties);
 * - every copy is written as the rollout's owner (who last applied or undid
 *   it), every removal as the user who deleted the rollout;
 * - no write outside its identity's rights on the cluster succeeds.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { HubContext } from '../../../../src/hub/api/hub-context.js';
import { HUB_ADMIN_USER } from '../../../../src/hub/identity/authenticate.js';
import type { HubPki } from '../../../../src/hub/identity/hub-pki.js';
import { hashUserToken, newUserToken } from '../../../../src/hub/identity/hub-tokens.js';
import { HubMetrics } from '../../../../src/hub/metrics/hub-metrics.js';
import { RolloutController } from '../../../../src/hub/rollouts/rollout-controller.js';
import { type DeliveryOutcome } from '../../../../src/hub/rollouts/rollout-delivery.js';
import { SqliteHubStore } from '../../../../src/hub/store/sqlite-store.js';
import { silentLogger } from '../../../../src/log/run-log.js';
import type { CopyMessage, RemoveMessage, RolloutOwner } from '../../../../src/rollout/wire.js';
import { callApi } from '../api/operator-api-harness.js';

type UserName = 'admin' | 'eve' | 'bob';
const USERS: Record<UserName, { name: string; groups: string[]; selector: string; isAdmin: boolean }> = {
  admin: { name: HUB_ADMIN_USER, groups: [], selector: '', isAdmin: true },
  eve: { name: 'eve', groups: ['shops-eu'], selector: 'region=eu', isAdmin: false },
  bob: { name: 'bob', groups: ['shops-bob'], selector: 'region=eu', isAdmin: false },
};
/** The cluster's RBAC: the namespaces each impersonated user may write ('*': all). */
const RIGHTS: Record<string, readonly string[]> = { [HUB_ADMIN_USER]: ['*'], eve: ['shop'], bob: ['shop', 'bob'] };
const CLUSTERS = ['eu-1', 'eu-2'];
const ROLLOUTS = ['web', 'api'];

function mayWrite(identity: RolloutOwner, namespace: string): boolean {
  const rights = RIGHTS[identity.user] ?? [];
  return rights.includes('*') || rights.includes(namespace);
}

/** One write the fake cluster saw. */
interface Write {
  kind: 'apply' | 'remove';
  cluster: string;
  rollout: string;
  identity: RolloutOwner;
  namespace: string;
  isAllowed: boolean;
}

/**
 * Edge clusters as their API servers would act on the agent's impersonated
 * writes: each object is written or removed only if its identity may write
 * its namespace; every attempt is recorded.
 */
class FakeClusters {
  readonly writes: Write[] = [];
  /** cluster → rollout → namespaces holding its objects. */
  readonly objects = new Map<string, Map<string, Set<string>>>();

  apply(cluster: string, message: CopyMessage): DeliveryOutcome {
    const held = this.objects.get(cluster) ?? new Map<string, Set<string>>();
    this.objects.set(cluster, held);
    for (const object of message.copy.objects) {
      const namespace = object.metadata.namespace ?? 'default';
      const isAllowed = mayWrite(message.owner, namespace);
      this.writes.push({
        kind: 'apply',
        cluster,
        rollout: message.rollout,
        identity: message.owner,
        namespace,
        isAllowed,
      });
      if (isAllowed) held.set(message.rollout, (held.get(message.rollout) ?? new Set()).add(namespace));
    }
    return { status: 'delivered' };
  }

  remove(cluster: string, message: RemoveMessage): DeliveryOutcome {
    const namespaces = this.objects.get(cluster)?.get(message.rollout) ?? new Set<string>();
    for (const namespace of [...namespaces]) {
      const isAllowed = mayWrite(message.owner, namespace);
      this.writes.push({
        kind: 'remove',
        cluster,
        rollout: message.rollout,
        identity: message.owner,
        namespace,
        isAllowed,
      });
      if (isAllowed) namespaces.delete(namespace);
    }
    return { status: 'delivered' };
  }
}

type Action =
  | { kind: 'apply'; user: UserName; rollout: string; namespace: string; variant: number }
  | { kind: 'delete' | 'undo' | 'pause' | 'resume' | 'abort'; user: UserName; rollout: string }
  | { kind: 'properties'; user: UserName; cluster: string; tag: string }
  | { kind: 'hold' | 'release'; user: UserName; cluster: string };

const user = fc.constantFrom<UserName>('admin', 'eve', 'bob');
const rollout = fc.constantFrom(...ROLLOUTS);
const cluster = fc.constantFrom(...CLUSTERS);
const action: fc.Arbitrary<Action> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('apply' as const),
      user,
      rollout,
      namespace: fc.constantFrom('shop', 'bob', 'kube-system'),
      variant: fc.integer({ min: 0, max: 2 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), user, rollout }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constantFrom('undo' as const, 'pause' as const, 'resume' as const, 'abort' as const),
      user,
      rollout,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('properties' as const),
      user,
      cluster,
      tag: fc.constantFrom('1.0', '2.0', 'evil'),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('hold' as const, 'release' as const), user, cluster }) },
);

/** A Rollout of one ConfigMap in `namespace`, whose data reads a property (so properties change what is written). */
function rolloutDocument(name: string, namespace: string, variant: number): Record<string, unknown> {
  return {
    apiVersion: 'edgeadm.io/v1alpha1',
    kind: 'Rollout',
    metadata: { name },
    spec: {
      resources: [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `${name}-config`, namespace },
          data: { tag: '${property:tag|none}', variant: String(variant) },
        },
      ],
      placement: { clusterSelector: 'region=eu' },
      strategy: { waves: ['100%'], maxUnavailable: '100%', soakSeconds: 0 },
    },
  };
}

interface World {
  store: SqliteHubStore;
  controller: RolloutController;
  context: HubContext;
  clusters: FakeClusters;
  tokens: Record<UserName, string>;
}

const worlds: World[] = [];
afterEach(async () => {
  for (const world of worlds.splice(0)) {
    await world.controller.stop();
    await world.store.close();
  }
});

async function newWorld(): Promise<World> {
  const store = await SqliteHubStore.open(':memory:');
  const tokens = { admin: newUserToken(), eve: newUserToken(), bob: newUserToken() };
  for (const [key, spec] of Object.entries(USERS) as [UserName, (typeof USERS)[UserName]][]) {
    await store.putUser({
      name: spec.name,
      tokenHash: hashUserToken(tokens[key]),
      clustersSelector: spec.selector,
      groups: spec.groups,
      isAdmin: spec.isAdmin,
      createdAt: '2026-01-01T00:00:00.000Z',
    });
  }
  for (const name of CLUSTERS) {
    await store.addCluster({
      name,
      labels: { region: 'eu' },
      certSerial: name,
      certNotAfter: '2030-01-01T00:00:00.000Z',
      registeredAt: '2026-01-01T00:00:00.000Z',
    });
  }
  const clusters = new FakeClusters();
  const controller = await RolloutController.start({
    store,
    delivery: {
      sendCopy: async (name, message) => clusters.apply(name, message),
      sendRemove: async (name, message) => clusters.remove(name, message),
    },
    logger: silentLogger,
    passIntervalMs: 0,
    connected: CLUSTERS,
  });
  const context: HubContext = {
    store,
    pki: {} as HubPki,
    metrics: new HubMetrics(),
    logger: silentLogger,
    now: () => new Date('2026-03-01T10:00:00.000Z'),
    advertiseUrl: 'https://127.0.0.1:9443',
    tunnels: new Map(),
    closeTunnel: () => {},
    rollouts: controller,
  };
  const world = { store, controller, context, clusters, tokens };
  worlds.push(world);
  return world;
}

/** What the identity model says of each rollout. */
interface Model {
  /** The owner of each existing rollout. */
  owners: Map<string, string>;
  /** Who last deleted each rollout: the identity its owed removals run as. */
  deleters: Map<string, string>;
}

/** Whether the model allows `action` (state conflicts such as "nothing to undo" aside). */
function isAllowed(model: Model, act: Action): boolean {
  const actor = USERS[act.user];
  if (!('rollout' in act)) return actor.isAdmin;
  const owner = model.owners.get(act.rollout);
  if (act.kind === 'apply') return owner === undefined || owner === actor.name || actor.isAdmin;
  return owner !== undefined && (owner === actor.name || actor.isAdmin);
}

async function perform(world: World, act: Action) {
  const token = world.tokens[act.user];
  switch (act.kind) {
    case 'apply':
      return callApi(world.context, 'PUT', `/hub/v1/rollouts/${act.rollout}`, {
        token,
        body: rolloutDocument(act.rollout, act.namespace, act.variant),
      });
    case 'delete':
      return callApi(world.context, 'DELETE', `/hub/v1/rollouts/${act.rollout}`, { token });
    case 'properties':
      return callApi(world.context, 'PUT', `/hub/v1/clusters/${act.cluster}/properties`, {
        token,
        body: { properties: { tag: act.tag } },
      });
    case 'hold':
      return callApi(world.context, 'PUT', `/hub/v1/clusters/${act.cluster}/hold`, { token, body: { reason: 'work' } });
    case 'release':
      return callApi(world.context, 'DELETE', `/hub/v1/clusters/${act.cluster}/hold`, { token });
    default:
      return callApi(world.context, 'POST', `/hub/v1/rollouts/${act.rollout}/${act.kind}`, { token });
  }
}

describe('rollout identity model', () => {
  it('makes every write as the user whose action caused it, and none outside that user’s rights', async () => {
    const stats = { applies: 0, removals: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 30 }), async (actions) => {
        const world = await newWorld();
        const model: Model = { owners: new Map(), deleters: new Map() };
        for (const act of actions) {
          const before = world.clusters.writes.length;
          const allowed = isAllowed(model, act);
          const answer = await perform(world, act);
          expect(answer.crash).toBeUndefined();
          const label = `${act.user} ${act.kind} ${'rollout' in act ? act.rollout : act.cluster}: ${answer.status} ${JSON.stringify(answer.json).slice(0, 200)}`;
          if (allowed) expect([403, 404], label).not.toContain(answer.status);
          else expect([403, 404], label).toContain(answer.status);
          const isDone = answer.status >= 200 && answer.status < 300;
          const actor = USERS[act.user].name;
          if (isDone && act.kind === 'apply' && answer.json['isUnchanged'] !== true)
            model.owners.set(act.rollout, actor);
          if (isDone && act.kind === 'undo') model.owners.set(act.rollout, actor);
          if (isDone && act.kind === 'delete') {
            model.owners.delete(act.rollout);
            model.deleters.set(act.rollout, actor);
          }
          await world.controller.settled();
          for (const write of world.clusters.writes.slice(before)) {
            const expected =
              write.kind === 'apply' ? model.owners.get(write.rollout) : model.deleters.get(write.rollout);
            expect(write.identity.user, `${label}; ${JSON.stringify(write)}`).toBe(expected);
            const spec = Object.values(USERS).find((candidate) => candidate.name === write.identity.user);
            expect(write.identity.groups).toEqual(spec?.groups);
          }
        }
        // What the cluster took was within each identity's rights: the fake enforces RBAC, so an object of a
        // rollout stays only where some write of it was allowed, and no object left behind was removable by a
        // user whose removal was refused.
        for (const write of world.clusters.writes) {
          expect(write.isAllowed).toBe(mayWrite(write.identity, write.namespace));
          if (write.kind === 'apply') stats.applies += 1;
          else stats.removals += 1;
          if (!write.isAllowed) stats.refused += 1;
        }
      }),
      { numRuns: 80 },
    );
    // The sequences did reach the clusters, with writes of every kind.
    expect(stats.applies).toBeGreaterThan(0);
    expect(stats.removals).toBeGreaterThan(0);
    expect(stats.refused).toBeGreaterThan(0);
  });
});
