/**
 * The real kubectl (/usr/bin/kubectl) against the simulated API server: the
 * proof that the simulation is faithful enough for the suites that drive
 * edgeadm and kubectl through it. Covers get, create/delete, apply (server-
 * and client-side), watch, logs -f, exec, port-forward in both of kubectl's
 * wire forms (SPDY after an HTTP upgrade, and SPDY tunnelled in WebSocket),
 * RBAC for anonymous callers, and impersonation.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, connect } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKubectl, startKubectl, startSimApiServer } from '../../support/sim-apiserver/index.js';
import type { KubeObject, SimApiServer } from '../../support/sim-apiserver/index.js';

const POD = 'edge-worker';

function pod(name: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { containers: [{ name: 'main', image: 'sim' }] },
  };
}

/** An echo server; the payload goes through kubectl's port-forward and back. */
async function startEcho(): Promise<Server> {
  const echo = createServer((socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
  return echo;
}

/** Sends `payload` to a local port, half-closes, and collects everything until the peer closes. */
function roundTrip(port: number, payload: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('end', () => resolve(Buffer.concat(chunks)));
    socket.on('error', reject);
    socket.end(payload);
  });
}

async function portForwardRoundTrip(server: SimApiServer, env: Record<string, string>): Promise<void> {
  const echo = await startEcho();
  server.setPortForward('default', POD, 80, { host: '127.0.0.1', port: (echo.address() as AddressInfo).port });
  const forward = await startKubectl(['port-forward', `pod/${POD}`, ':80'], { kubeconfig: server.kubeconfig(), env });
  try {
    const [, localPort] = await forward.waitForOutput(/Forwarding from 127\.0\.0\.1:(\d+) -> 80/);
    const payload = randomBytes(256 * 1024);
    const echoed = await roundTrip(Number(localPort), payload);
    expect(createHash('sha256').update(echoed).digest('hex')).toBe(createHash('sha256').update(payload).digest('hex'));
  } finally {
    await forward.stop();
    echo.close();
  }
}

describe('kubectl against the simulated API server', () => {
  let server: SimApiServer;
  let kubeconfig: string;

  beforeAll(async () => {
    server = await startSimApiServer({ recordRequests: true, objects: [pod(POD)] });
    kubeconfig = server.kubeconfig();
  });

  afterAll(async () => {
    await server.stop();
  });

  it('reports the simulated server version', async () => {
    const { exitCode, stdout } = await runKubectl(['version', '-o', 'json'], { kubeconfig });
    expect(exitCode).toBe(0);
    expect(JSON.parse(stdout).serverVersion.gitVersion).toBe('v1.30.4+sim');
  });

  it('gets the system namespaces', async () => {
    const { exitCode, stdout } = await runKubectl(['get', 'ns'], { kubeconfig });
    expect(exitCode).toBe(0);
    expect(stdout).toMatch(/^NAME\s+STATUS\s+AGE$/m);
    for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease'])
      expect(stdout).toMatch(new RegExp(`^${ns}\\s+Active\\s`, 'm'));
  });

  it('creates, gets and deletes a secret, and reports a missing one as NotFound', async () => {
    const created = await runKubectl(['create', 'secret', 'generic', 'db-password', '--from-literal=password=s3cret'], {
      kubeconfig,
    });
    expect(created).toMatchObject({ exitCode: 0, stdout: 'secret/db-password created\n' });
    const value = await runKubectl(['get', 'secret', 'db-password', '-o', 'jsonpath={.data.password}'], { kubeconfig });
    expect(Buffer.from(value.stdout, 'base64').toString()).toBe('s3cret');
    const again = await runKubectl(['create', 'secret', 'generic', 'db-password', '--from-literal=password=x'], {
      kubeconfig,
    });
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toContain('secrets "db-password" already exists');
    expect(await runKubectl(['delete', 'secret', 'db-password'], { kubeconfig })).toMatchObject({
      exitCode: 0,
      stdout: 'secret "db-password" deleted\n',
    });
    const missing = await runKubectl(['delete', 'secret', 'db-password'], { kubeconfig });
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toBe('Error from server (NotFound): secrets "db-password" not found\n');
  });

  it('applies server-side twice, the second time without changing the object', async () => {
    const manifest =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: edge-config\n  namespace: default\ndata:\n  mode: autonomous\n';
    const first = await runKubectl(['apply', '--server-side', '-f', '-'], { kubeconfig, input: manifest });
    expect(first).toMatchObject({ exitCode: 0, stdout: 'configmap/edge-config serverside-applied\n' });
    const ref = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'edge-config' };
    const before = server.getObject(ref);
    const second = await runKubectl(['apply', '--server-side', '-f', '-'], { kubeconfig, input: manifest });
    expect(second.exitCode).toBe(0);
    const after = server.getObject(ref);
    expect(after?.metadata.resourceVersion).toBe(before?.metadata.resourceVersion);
    expect(after?.metadata.managedFields).toEqual([
      expect.objectContaining({ manager: 'kubectl', operation: 'Apply' }),
    ]);
    // The PATCH carried kubectl's apply parameters.
    expect(
      server.requests.some(
        (r) =>
          r.method === 'PATCH' &&
          r.url.includes('fieldManager=kubectl') &&
          r.headers['content-type'] === 'application/apply-patch+yaml',
      ),
    ).toBe(true);
  });

  it('applies client-side: created, then unchanged', async () => {
    const manifest =
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: client-side\n  namespace: default\ndata:\n  a: "1"\n';
    expect((await runKubectl(['apply', '-f', '-'], { kubeconfig, input: manifest })).stdout).toBe(
      'configmap/client-side created\n',
    );
    expect((await runKubectl(['apply', '-f', '-'], { kubeconfig, input: manifest })).stdout).toBe(
      'configmap/client-side unchanged\n',
    );
  });

  it('watches pods (get -w) and prints an event the test triggers', async () => {
    const watch = await startKubectl(['get', 'pods', '-w', '--output-watch-events'], { kubeconfig });
    try {
      await watch.waitForOutput(new RegExp(`ADDED\\s+${POD}\\s`));
      server.setObject(pod('arrives-later'));
      await watch.waitForOutput(/ADDED\s+arrives-later\s+1\/1\s+Running/);
      server.deleteObject({ apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'arrives-later' });
      await watch.waitForOutput(/DELETED\s+arrives-later\s/);
    } finally {
      await watch.stop();
    }
  });

  it('follows logs (logs -f) as lines are appended, until the log ends', async () => {
    server.appendPodLog('default', POD, 'booting');
    const logs = await startKubectl(['logs', '-f', POD], { kubeconfig });
    await logs.waitForOutput(/booting\n/);
    server.appendPodLog('default', POD, 'serving');
    await logs.waitForOutput(/serving\n/);
    server.endPodLog('default', POD);
    expect(await logs.result).toMatchObject({ exitCode: 0, stdout: 'booting\nserving\n' });
  });

  it('execs cat with stdin (exec -i) and returns what it sent', async () => {
    const result = await runKubectl(['exec', '-i', POD, '--', 'cat'], {
      kubeconfig,
      input: 'hello through the simulation\n',
    });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'hello through the simulation\n' });
    const upgrade = server.requests.find((r) => r.subresource === 'exec');
    expect(upgrade).toMatchObject({ status: 101 });
    expect(upgrade?.headers['sec-websocket-protocol']).toContain('v5.channel.k8s.io');
  });

  it('execs over SPDY when kubectl is told not to use WebSocket (kubectl up to 1.29)', async () => {
    server.clearRequests();
    const env = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: 'false' };
    const result = await runKubectl(['exec', '-i', POD, '--', 'cat'], { kubeconfig, input: 'over spdy\n', env });
    expect(result).toMatchObject({ exitCode: 0, stdout: 'over spdy\n' });
    const upgrade = server.requests.find((r) => r.subresource === 'exec');
    expect(upgrade).toMatchObject({ status: 101, headers: { upgrade: 'SPDY/3.1' } });
    const failed = await runKubectl(['exec', POD, '--', 'sh', '-c', 'exit 5'], { kubeconfig, env });
    expect(failed.exitCode).toBe(5);
  });

  it('passes the command exit code through exec', async () => {
    const result = await runKubectl(['exec', POD, '--', 'sh', '-c', 'echo partial; exit 3'], { kubeconfig });
    expect(result.exitCode).toBe(3);
    expect(result.stdout).toBe('partial\n');
  });

  it('forwards a port over SPDY after an HTTP upgrade (kubectl before 1.31)', async () => {
    server.clearRequests();
    await portForwardRoundTrip(server, { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' });
    const upgrade = server.requests.find((r) => r.subresource === 'portforward');
    expect(upgrade).toMatchObject({
      status: 101,
      headers: { upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'portforward.k8s.io' },
    });
  });

  it('forwards a port over SPDY tunnelled in WebSocket (kubectl 1.31+)', async () => {
    server.clearRequests();
    await portForwardRoundTrip(server, { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'true' });
    const upgrade = server.requests.find((r) => r.subresource === 'portforward');
    expect(upgrade).toMatchObject({
      status: 101,
      headers: { upgrade: 'websocket', 'sec-websocket-protocol': 'SPDY/3.1+portforward.k8s.io' },
    });
  });

  it('denies anonymous access to cluster-info until a RoleBinding grants it', async () => {
    server.setObject({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cluster-info', namespace: 'kube-public' },
      data: { kubeconfig: 'sim' },
    });
    const anonymous = server.kubeconfig({ isAnonymous: true });
    const path = '/api/v1/namespaces/kube-public/configmaps/cluster-info';
    const denied = await runKubectl(['get', '--raw', path], { kubeconfig: anonymous });
    expect(denied.exitCode).toBe(1);
    expect(denied.stderr).toContain('Error from server (Forbidden)');
    server.setObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'edgeadm:bootstrap-signer-clusterinfo', namespace: 'kube-public' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['cluster-info'], verbs: ['get'] }],
    });
    server.setObject({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'edgeadm:bootstrap-signer-clusterinfo', namespace: 'kube-public' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'edgeadm:bootstrap-signer-clusterinfo' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:anonymous' }],
    });
    const allowed = await runKubectl(['get', '--raw', path], { kubeconfig: anonymous });
    expect(allowed.exitCode).toBe(0);
    expect(JSON.parse(allowed.stdout).data).toEqual({ kubeconfig: 'sim' });
  });

  it('records the impersonation headers kubectl --as sends', async () => {
    server.clearRequests();
    const result = await runKubectl(['auth', 'whoami', '--as', 'jane', '--as-group', 'edge-operators', '-o', 'json'], {
      kubeconfig,
    });
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout).status.userInfo).toEqual({
      username: 'jane',
      groups: ['edge-operators', 'system:authenticated'],
    });
    const recorded = server.requests.find((r) => r.resource === 'selfsubjectreviews');
    expect(recorded).toMatchObject({
      user: 'system:admin',
      impersonatedUser: 'jane',
      impersonatedGroups: ['edge-operators'],
    });
    const denied = await runKubectl(['get', 'secrets', '--as', 'jane'], { kubeconfig });
    expect(denied.exitCode).toBe(1);
    expect(denied.stderr).toContain('User "jane" cannot list resource "secrets"');
  });
});

describe('kubectl against a simulation that reports Kubernetes 1.32', () => {
  let server: SimApiServer;

  beforeAll(async () => {
    server = await startSimApiServer({ recordRequests: true, gitVersion: 'v1.32.2+sim', objects: [pod(POD)] });
  });

  afterAll(async () => {
    await server.stop();
  });

  it('port-forwards and execs with kubectl defaults', async () => {
    await portForwardRoundTrip(server, {});
    const exec = await runKubectl(['exec', '-i', POD, '--', 'cat'], {
      kubeconfig: server.kubeconfig(),
      input: 'v1.32\n',
    });
    expect(exec).toMatchObject({ exitCode: 0, stdout: 'v1.32\n' });
  });
});
