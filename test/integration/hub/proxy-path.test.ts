/**
 * The kube proxy's path, end to end and as an attacker sends it: a real hub
 * (`hub serve`), a real agent (`register-cloud --foreground`) in front of a
 * SIMULATED API server that records the raw target of every request, and a
 * trap beside it on loopback: an HTTPS server whose certificate comes from
 * the cluster's own CA for the same address (so an agent that checks the CA
 * would still trust it) and a plain TCP listener, both recording every
 * connection. Requests are written raw on a TLS socket to the hub, so no
 * URL parser tidies them first. Whatever the path, a request reaches the
 * cluster's API server with exactly the target the user sent, or is
 * refused; the trap never sees a connection, and the agent's token appears
 * nowhere but at the API server.
 */
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseApiPath } from '../../../src/kube/api-path.js';
import { ensureCliBuilt } from '../../support/cli-build.js';
import { runCli } from '../../support/cli.js';
import { SimCertificateAuthority } from '../../support/sim-apiserver/pki.js';
import { startSimApiServer } from '../../support/sim-apiserver/index.js';
import {
  READY_WAIT_MS,
  outputAndLogs,
  registerAndRun,
  createHubToken,
  startHubProcess,
  waitFor,
  type EdgeCluster,
  type HubProcess,
} from './hub-fixture.js';
import { printedBy } from '../../support/run-output.js';

/** Cases of the end-to-end property: each is a real request through hub, tunnel and agent. */
const PROPERTY_RUNS = 300;
const CLUSTER = 'dev-1';

/** An answer read raw from the hub. */
interface RawAnswer {
  status: number;
  /** Everything the hub sent back, head and body. */
  text: string;
}

let hub: HubProcess;
let cluster: EdgeCluster;
let hubCaPem: string;
let userToken: string;
let trapTls: HttpsServer;
let trapTcp: TcpServer;
let trapTlsPort: number;
let trapTcpPort: number;
const trapped: string[] = [];
let trapConnections = 0;
const answers: string[] = [];

function portOf(server: { address(): unknown }): number {
  return (server.address() as { port: number }).port;
}

/** Writes one request to the hub byte for byte on a TLS socket and reads until the hub closes it. */
async function rawRequest(options: { path: string; headers?: string[]; isUpgrade?: boolean }): Promise<RawAnswer> {
  const lines = [
    `GET ${options.path} HTTP/1.1`,
    `Host: 127.0.0.1:${hub.port}`,
    `Authorization: Bearer ${userToken}`,
    ...(options.isUpgrade
      ? [
          'Connection: Upgrade',
          'Upgrade: websocket',
          'Sec-WebSocket-Version: 13',
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
        ]
      : ['Connection: close']),
    ...(options.headers ?? []),
  ];
  const socket = tlsConnect({ host: '127.0.0.1', port: hub.port, ca: hubCaPem });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await once(socket, 'secureConnect');
  // write, not end: a server that sees the client half-close abandons the request.
  socket.write(Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'utf8'));
  // A bound on a hang, not a timing assertion: every answer here ends with the connection.
  const guard = setTimeout(
    () => socket.destroy(new Error(`no end of answer for ${JSON.stringify(options.path)}`)),
    READY_WAIT_MS,
  );
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('close', () => resolve());
      socket.once('error', (error) =>
        (error as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve() : reject(error),
      );
    });
  } finally {
    clearTimeout(guard);
  }
  const text = Buffer.concat(chunks).toString('latin1');
  answers.push(text);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  return { status, text };
}

/** The target the API server must receive for `/clusters/NAME<suffix>`, when the suffix keeps the cluster name. */
function expectedTarget(suffix: string): string {
  return suffix === '' || suffix.startsWith('?') ? `/${suffix}` : suffix;
}

function expectTrapUntouched(): void {
  expect(trapConnections).toBe(0);
  expect(trapped).toEqual([]);
}

describe('hub: the proxied path is a path', { timeout: 240_000 }, () => {
  beforeAll(async () => {
    ensureCliBuilt('index.js', ['src']);
    const ca = await SimCertificateAuthority.generate('edge cluster CA');
    const api = await startSimApiServer({ recordRequests: true, gitVersion: 'v1.30.4+sim', ca });
    const dir = mkdtempSync(join(tmpdir(), 'edgeadm-proxy-path-'));
    const kubeconfigPath = join(dir, 'admin.kubeconfig');
    writeFileSync(kubeconfigPath, api.kubeconfig(), { mode: 0o600 });
    cluster = { name: CLUSTER, api, kubeconfigPath, dataDir: join(dir, 'agent') };

    // The trap: the cluster CA's certificate for the API server's own address, on another port.
    const trapCertificate = await ca.issueServing(['127.0.0.1', 'localhost']);
    trapTls = createHttpsServer({ cert: trapCertificate.certPem, key: trapCertificate.keyPem });
    trapTls.on('connection', (socket) => {
      trapConnections += 1;
      socket.on('error', () => {});
    });
    trapTls.on('request', (req, res) => {
      trapped.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)}`);
      res.end('{}');
    });
    trapTcp = createTcpServer((socket) => {
      trapConnections += 1;
      socket.on('data', (chunk: Buffer) => trapped.push(chunk.toString('latin1')));
      socket.on('error', () => {});
    });
    for (const server of [trapTls, trapTcp]) {
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
    }
    trapTlsPort = portOf(trapTls);
    trapTcpPort = portOf(trapTcp);

    hub = await startHubProcess();
    hubCaPem = readFileSync(join(hub.dataDir, 'pki', 'ca.crt'), 'utf8');
    const token = await createHubToken(hub);
    await registerAndRun({ hub, token, cluster, labels: 'env=dev' });
    const userConfig = join(dir, 'dev-user.yaml');
    const created = await runCli([
      'hub',
      'user',
      'create',
      'dev-user',
      '--clusters-selector',
      'env=dev',
      '--groups',
      'system:masters',
      '--output',
      userConfig,
      '--hub-config',
      hub.adminConfig,
    ]);
    expect(created.exitCode, printedBy(created)).toBe(0);
    userToken = (/^token: (\S+)$/m.exec(readFileSync(userConfig, 'utf8')) as RegExpExecArray)[1] as string;
  });

  afterAll(async () => {
    await cluster?.agent?.stop();
    await hub?.stop();
    await cluster?.api.stop();
    trapTls?.close();
    trapTcp?.close();
  });

  beforeEach(() => {
    cluster.api.clearRequests();
  });

  it.each([
    ['//HOST:PORT/steal-me'],
    ['/\\HOST:PORT/steal-me'],
    ['/..//HOST:PORT/steal-me'],
    ['/%2e%2e//HOST:PORT/steal-me'],
    ['/.//HOST:PORT/steal-me'],
  ])('refuses /clusters/dev-1%s with 400 before anything is forwarded (HOST:PORT = the trap)', async (template) => {
    for (const port of [trapTlsPort, trapTcpPort]) {
      for (const isUpgrade of [false, true]) {
        const suffix = template.replace('HOST:PORT', `127.0.0.1:${port}`);
        const answer = await rawRequest({ path: `/clusters/${CLUSTER}${suffix}`, isUpgrade });
        expect(answer.status, answer.text).toBe(400);
        expect(answer.text).toContain('E_HUB_PROXY_PATH');
      }
    }
    expect(cluster.api.requests).toEqual([]);
    expectTrapUntouched();
  });

  it("keeps a user away from the agent's control handler: /.edgeadm/hello, /refuse and /welcome are refused, and the agent asks nothing as itself", async () => {
    for (const path of ['/.edgeadm/hello', '/.edgeadm/refuse', '/.edgeadm/welcome']) {
      const answer = await rawRequest({ path: `/clusters/${CLUSTER}${path}` });
      expect(answer.status, answer.text).toBe(400);
      expect(answer.text).not.toContain(`"cluster":"${CLUSTER}"`);
    }
    // Nothing reached the API server, least of all a request made with the agent's own rights.
    expect(cluster.api.requests.filter((r) => r.impersonatedUser === undefined)).toEqual([]);
    expect(cluster.api.requests).toEqual([]);
    // A forged /refuse did not close the tunnel.
    const still = await rawRequest({ path: `/clusters/${CLUSTER}/version` });
    expect(still.status).toBe(200);
  });

  it('strips X-Remote-User, X-Remote-Group, X-Remote-Extra-* and other identity headers the user sends', async () => {
    const answer = await rawRequest({
      path: `/clusters/${CLUSTER}/api/v1/namespaces`,
      headers: [
        'X-Remote-User: system:admin',
        'X-Remote-Group: system:masters',
        'X-Remote-Extra-Scopes: all',
        'X-Forwarded-User: root',
        'X-Forwarded-For: 10.9.9.9',
        'Impersonate-User: system:admin',
        'Impersonate-Uid: 0',
      ],
    });
    expect(answer.status, answer.text).toBe(200);
    expect(cluster.api.requests).toHaveLength(1);
    const [seen] = cluster.api.requests;
    expect(seen?.impersonatedUser).toBe('dev-user');
    for (const name of Object.keys(seen?.headers ?? {})) {
      expect(name).not.toMatch(/^(x-remote-|x-forwarded-|impersonate-uid$)/);
    }
  });

  it("does not name the API server's address or port when the agent cannot reach it", async () => {
    await cluster.api.kill();
    try {
      for (const isUpgrade of [false, true]) {
        const answer = await rawRequest({ path: `/clusters/${CLUSTER}/api/v1/namespaces`, isUpgrade });
        expect(answer.status, answer.text).toBe(502);
        if (!isUpgrade) expect(answer.text).toContain('ECONNREFUSED');
        expect(answer.text).not.toContain('127.0.0.1');
        expect(answer.text).not.toContain(`:${cluster.api.port}`);
      }
    } finally {
      await cluster.api.restart();
    }
    await waitFor('the API server to answer through the hub again', async () =>
      (await rawRequest({ path: `/clusters/${CLUSTER}/version` })).status === 200 ? true : undefined,
    );
  });

  it('sends a generated path to the API server byte for byte, or refuses it; the trap never sees a request', async () => {
    const piece = fc.constantFrom(
      '/',
      '//',
      '\\',
      '.',
      '..',
      '%2e',
      '%2E%2e',
      '%2f',
      '%5C',
      '%',
      '%zz',
      '%00',
      '@',
      ':',
      '?',
      '#',
      ';',
      'http:',
      'https://',
      `127.0.0.1:${trapTlsPort}`,
      `127.0.0.1:${trapTcpPort}`,
      `localhost:${trapTlsPort}`,
      `user@127.0.0.1:${trapTlsPort}`,
      '.edgeadm',
      'hello',
      'é',
      '\u2215',
      '\uff0f',
      'api',
      'v1',
      'namespaces',
      'version',
      'x=1',
      '&',
      '~',
    );
    // Mostly paths under the cluster, sometimes glued to its name.
    const suffix = fc.tuple(fc.constantFrom('/', '/', '/', '?', ''), fc.array(piece, { maxLength: 8 }));
    const cases = fc.tuple(
      suffix.map(([first, rest]) => first + rest.join('')),
      fc.boolean(),
    );
    let forwarded = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(cases, async ([rest, isUpgrade]) => {
        cluster.api.clearRequests();
        const answer = await rawRequest({ path: `/clusters/${CLUSTER}${rest}`, isUpgrade });
        const seen = cluster.api.requests;
        // Whatever reached the API server is exactly what the user sent there, and is an API path.
        expect(seen.length).toBeLessThanOrEqual(1);
        if (seen.length === 1) {
          forwarded += 1;
          expect(seen[0]?.target).toBe(expectedTarget(rest));
          expect(parseApiPath(seen[0]?.target ?? '').ok).toBe(true);
          expect(seen[0]?.impersonatedUser).toBe('dev-user');
        } else {
          refused += 1;
          expect(answer.status, answer.text).toBeGreaterThanOrEqual(400);
          expect(answer.status, answer.text).toBeLessThan(500);
        }
        // An API path under the cluster is not refused at the hub (no over-eager rule).
        const isPlainApiPath =
          (rest === '' || rest.startsWith('/') || rest.startsWith('?')) &&
          parseApiPath(expectedTarget(rest)).ok &&
          !/^\/\.edgeadm([/?]|$)/i.test(expectedTarget(rest));
        if (isPlainApiPath) expect(seen, rest).toHaveLength(1);
        expect(trapConnections).toBe(0);
      }),
      { numRuns: PROPERTY_RUNS },
    );
    expect(forwarded).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
    expectTrapUntouched();
  });

  it("shows the agent's token to nobody: not in any answer, not to the trap, not in the hub's or agent's logs", () => {
    const agentToken = cluster.api.adminToken;
    expect(agentToken.length).toBeGreaterThan(8);
    for (const text of [...answers, ...trapped, outputAndLogs(hub), outputAndLogs(cluster.agent as never)]) {
      expect(text.includes(agentToken), 'the agent token leaked').toBe(false);
    }
    expectTrapUntouched();
    // The suite above ran: this check looked at its answers.
    expect(answers.length).toBeGreaterThan(PROPERTY_RUNS);
  });
});
