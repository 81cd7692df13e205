/**
 * A SIMULATED Kubernetes API server for edgeadm's test suites — not
 * kube-apiserver, and never to be presented as one. The real Kubernetes
 * binaries cannot be downloaded on the project's machines, so tests drive
 * edgeadm's real code paths, and the real `kubectl`, against this
 * in-process HTTPS server.
 *
 * It owns the request pipeline: authentication and impersonation, RBAC,
 * routing to discovery, objects, watches, logs, exec and port-forward, the
 * request log tests assert on, and the test controls (kill and restart on
 * the same port with the same store and CA, pause and resume, direct object
 * writes, pod logs, port-forward targets).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createSecureServer } from 'node:http2';
import { createServer } from 'node:https';
import type { Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { dump as dumpYaml } from 'js-yaml';
import { ANONYMOUS, Authenticator, impersonate } from './authn.js';
import type { TokenIdentity } from './authn.js';
import { csrRbacObjects, defaultNamespaces, defaultRbacObjects } from './bootstrap-objects.js';
import { approveAndSign, recordRequestor } from './csr-controllers.js';
import { AGGREGATED_DISCOVERY_CONTENT_TYPE, Discovery, wantsAggregatedDiscovery } from './discovery.js';
import { evictPod } from './eviction.js';
import { EXEC_PROTOCOLS, runExecSession, serveSpdyExec } from './exec.js';
import type { ExecCommand, ExecRequest } from './exec.js';
import { ObjectService } from './objects.js';
import { OpenApiV3 } from './openapi.js';
import { defaultFieldManager } from './patch.js';
import { SimCertificateAuthority } from './pki.js';
import type { CertificateAndKey, ClientIdentity } from './pki.js';
import { PodLogs } from './pod-logs.js';
import {
  SPDY_TUNNEL_PROTOCOL,
  WEBSOCKET_PORT_FORWARD_PROTOCOLS,
  serveSpdyPortForward,
  serveWebSocketPortForward,
} from './port-forward.js';
import { socketTransport, tunnelTransport } from './spdy-session.js';
import type { PortForwardTarget } from './port-forward.js';
import { RbacAuthorizer } from './rbac.js';
import type { UserInfo } from './rbac.js';
import { parseRequestInfo } from './request-info.js';
import type { RequestInfo } from './request-info.js';
import {
  BUILTIN_RESOURCES,
  CERTIFICATE_SIGNING_REQUESTS,
  ResourceRegistry,
  groupVersionOf,
  listKindOf,
} from './resources.js';
import type { ResourceDefinition } from './resources.js';
import { parseFieldSelector, parseLabelSelector } from './selectors.js';
import {
  ApiError,
  badRequest,
  forbidden,
  internalError,
  methodNotSupported,
  notFound,
  pathNotFound,
  unsupportedBodyEncoding,
} from './status.js';
import type { StatusObject } from './status.js';
import { SimStore } from './store.js';
import { startTokenController } from './service-account-tokens.js';
import { startWorkloadControllers, type WorkloadControllerOptions } from './workload-controllers.js';
import { startNodeLifecycle, type NodeLifecycleOptions } from './node-lifecycle.js';
import type { KubeObject, StoreSnapshot } from './store.js';
import type { IncludeObject } from './tables.js';
import { TABLE_CONTENT_TYPE, toTable, wantsTable } from './tables.js';
import { DEFAULT_BOOKMARK_INTERVAL_MS, serveWatch } from './watch.js';
import { acceptWebSocket, isWebSocketUpgrade, negotiateProtocol } from './websocket-connection.js';

/** The version the simulation reports; the `+sim` suffix marks it as simulated. */
export const DEFAULT_SIM_GIT_VERSION = 'v1.30.4+sim';
/** Largest request body accepted (the real server's limit is about 3 MiB). */
export const MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024;
/** Most requests kept in `requests`; older ones are dropped first. */
export const MAX_RECORDED_REQUESTS = 10_000;
/** The user the admin token authenticates as. */
export const ADMIN_USER = 'system:admin';
/** Annotation prefix that maps a pod port to a local TCP target ("<host>:<port>"), for processes without the handle. */
export const PORT_FORWARD_ANNOTATION_PREFIX = 'sim-apiserver.edgeadm.io/port-forward-';
/** The groups k3s's supervisor lets fetch agent certificates (`version.Program + ":agent"`, nodes, bootstrappers). */
const K3S_AGENT_ROLES = ['k3s:agent', 'system:nodes', 'system:bootstrappers'];
/**
 * The supervisor paths a k3s agent asks at every start, before its kubelet
 * runs (k3s pkg/agent/config/config.go, `get`), all behind the agent roles.
 */
const K3S_AGENT_START_PATHS: ReadonlySet<string> = new Set([
  '/v1-k3s/config',
  '/v1-k3s/client-ca.crt',
  '/v1-k3s/server-ca.crt',
  '/v1-k3s/serving-kubelet.crt',
  '/v1-k3s/client-kubelet.crt',
  '/v1-k3s/client-kube-proxy.crt',
  '/v1-k3s/client-k3s-controller.crt',
]);
/** The field manager of objects written through the test handle. */
const HANDLE_FIELD_MANAGER = 'sim-apiserver-test-handle';

/** Options of {@link startSimApiServer}. */
export interface SimApiServerOptions {
  /** Listen address (default 127.0.0.1); may be an address inside a network namespace. */
  host?: string;
  /** Listen port (default 0: any free port). */
  port?: number;
  /** Extra DNS names or IPs for the serving certificate (the listen address, localhost and 127.0.0.1 are always in). */
  sans?: string[];
  /** Days the serving certificate is valid (365 by default): a short one tests expiry reports. */
  servingValidityDays?: number;
  /** Objects to create at start, after the system namespaces. */
  objects?: KubeObject[];
  /** Static bearer tokens. */
  tokens?: Record<string, TokenIdentity>;
  /** The admin bearer token (system:admin in system:masters); generated when absent. */
  adminToken?: string;
  /** Whether client certificates signed by the CA authenticate (CN = user, O = groups). Default true. */
  acceptClientCertificates?: boolean;
  /** Whether bootstrap-token Secrets authenticate. Default true. */
  acceptBootstrapTokens?: boolean;
  /**
   * Whether the server also offers HTTP/2 (ALPN `h2`, as kube-apiserver does), HTTP/1.1 clients
   * and upgrades served as before. Default false. For the tunnel bench's HTTP/2 upstream: plain
   * requests only (the simulation's watches and log follows flush with HTTP/1.1's `flushHeaders`).
   */
  http2?: boolean;
  /**
   * Whether requests without credentials are anonymous (kube-apiserver's
   * default, true) or refused with 401 (`--anonymous-auth=false`, as k3s
   * starts its kube-apiserver).
   */
  anonymousAuth?: boolean;
  /**
   * A file whose bytes are served at `GET /cacerts` to anyone, before
   * authentication, as k3s's supervisor serves its server CA file on the
   * API port (k3s pkg/server/handlers: `CACerts`, read once and kept).
   * Absent: no `/cacerts` (kube-apiserver has none).
   */
  caCertsFile?: string;
  /**
   * Whether to serve the supervisor paths a k3s agent asks at every start,
   * as k3s's supervisor does on the API port (k3s
   * pkg/server/handlers/router.go), to a caller in `system:bootstrappers`,
   * `system:nodes` or `k3s:agent`: `/v1-k3s/config`, `client-ca.crt`,
   * `server-ca.crt`, `serving-kubelet.crt` and `client-kubelet.crt` (for the
   * `k3s-Node-Name` node: `system:node:<name>` in `system:nodes`),
   * `client-kube-proxy.crt` and `client-k3s-controller.crt`. Default false.
   */
  k3sAgentCertificates?: boolean;
  /**
   * Whether to run the simulated CSR controllers of kube-controller-manager
   * for kubelet client certificates (csr-controllers.ts), with the
   * certificates.k8s.io API and the default ClusterRoles they need.
   * Default false.
   */
  csrControllers?: boolean;
  /** Whether to keep a log of requests in `requests`. Default false. */
  recordRequests?: boolean;
  /** Whether to create the default RBAC policy (discovery, public info, cluster-admin). Default true. */
  defaultRbac?: boolean;
  /** The reported version. Default {@link DEFAULT_SIM_GIT_VERSION}. */
  gitVersion?: string;
  /** How many change events are kept for resuming watches. */
  eventHistoryLimit?: number;
  /** Interval between watch bookmarks. */
  bookmarkIntervalMs?: number;
  /** Whether pods created without a status start Running. Default true. */
  podsStartRunning?: boolean;
  /** Extra exec commands by name, besides the built-in ones. */
  execCommands?: Record<string, ExecCommand>;
  /** Extra resource types to serve. */
  resources?: ResourceDefinition[];
  /** An existing CA to use instead of generating one (a restarted process keeps its trust). */
  ca?: { certPem: string; keyPem: string };
  /** A store snapshot to start from instead of the bootstrap objects. */
  snapshot?: StoreSnapshot;
  /**
   * The simulated workload controllers (workload-controllers.ts): Deployments,
   * StatefulSets, DaemonSets and Jobs get the status their controllers would
   * write, with compressed time. On by default; `false` leaves them stored only.
   */
  workloadControllers?: WorkloadControllerOptions | false;
  /**
   * The simulated node lifecycle (node-lifecycle.ts): nodes that stop
   * heartbeating become Unknown and are tainted, pods without a matching
   * toleration are evicted, and pods get the DefaultTolerationSeconds
   * tolerations. Off by default; `{}` runs it with Kubernetes' periods.
   */
  nodeLifecycle?: NodeLifecycleOptions | false;
  /** Called after every change to the store (the CLI persists snapshots from here). */
  onChange?: () => void;
}

/** One request as it reached the server. */
export interface RecordedRequest {
  time: string;
  method: string;
  /** Path with query string. */
  url: string;
  /** The request target exactly as it arrived on the wire (before any URL parsing). */
  target: string;
  path: string;
  verb: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** The authenticated caller (before impersonation). */
  user: string;
  groups: string[];
  impersonatedUser?: string;
  impersonatedGroups?: string[];
  /** Request headers without Authorization / Proxy-Authorization. */
  headers: Record<string, string | string[] | undefined>;
  /** HTTP status of the answer (101 for upgrades); set when known. */
  status?: number;
}

/** Counters a test can read. */
export interface SimCounters {
  requests: number;
  byVerb: Record<string, number>;
  unauthorized: number;
  forbidden: number;
  watchesStarted: number;
  watchesActive: number;
  logStreams: number;
  execSessions: number;
  portForwardSessions: number;
  portForwardConnections: number;
  restarts: number;
}

/** Names one object for the handle's object methods. */
export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

/** Options for {@link SimApiServer.kubeconfig}. */
export interface KubeconfigOptions {
  /** Bearer token (default: the admin token, unless a client certificate is given). */
  token?: string;
  clientCertificate?: CertificateAndKey;
  /** Anonymous access: kubectl then sends only a Basic header the server ignores. */
  isAnonymous?: boolean;
  namespace?: string;
  /** Server URL to write (default: the server's URL). */
  server?: string;
}

/** The running simulation and its test controls. */
export interface SimApiServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  readonly caPem: string;
  readonly adminToken: string;
  readonly store: SimStore;
  readonly requests: RecordedRequest[];
  readonly counters: SimCounters;
  /** Whether the server is listening. */
  readonly isRunning: boolean;
  /** Stops for good: closes the listener and every connection. */
  stop(): Promise<void>;
  /** Simulates an outage: closes the listener and drops every connection; state survives for {@link restart}. */
  kill(): Promise<void>;
  /** Listens again on the same address and port, with the same CA, certificate and store. */
  restart(): Promise<void>;
  /** Holds every request (and watch event) until {@link resume}: an API server that hangs. */
  pause(): void;
  resume(): void;
  /** Creates or replaces an object directly (no auth, defaults applied); returns the stored object. */
  setObject(object: KubeObject): KubeObject;
  getObject(ref: ObjectRef): KubeObject | undefined;
  /** Deletes an object directly; false when it did not exist. */
  deleteObject(ref: ObjectRef): boolean;
  appendPodLog(namespace: string, pod: string, line: string, container?: string): void;
  /** Ends a pod's log: `logs -f` returns. */
  endPodLog(namespace: string, pod: string, container?: string): void;
  /** Forwards `podPort` of a pod to a local TCP endpoint. */
  setPortForward(namespace: string, pod: string, podPort: number, target: PortForwardTarget): void;
  issueClientCertificate(identity: ClientIdentity): Promise<CertificateAndKey>;
  addToken(token: string, identity: TokenIdentity): void;
  /** A kubeconfig (YAML) for this server. */
  kubeconfig(options?: KubeconfigOptions): string;
  clearRequests(): void;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function statusBody(status: StatusObject): string {
  return JSON.stringify(status);
}

function writeRawStatus(socket: Duplex, status: StatusObject): void {
  const body = statusBody(status);
  socket.end(
    `HTTP/1.1 ${status.code} ${STATUS_CODES[status.code] ?? ''}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function versionParts(gitVersion: string): { major: string; minor: string } {
  const match = /^v(\d+)\.(\d+)/.exec(gitVersion);
  return { major: match?.[1] ?? '1', minor: match?.[2] ?? '0' };
}

/** Content types of request bodies the simulation can read; kubectl 1.32+ typed clients send protobuf. */
const READABLE_BODY_TYPES =
  /^(application\/(json|yaml|json-patch\+json|merge-patch\+json|strategic-merge-patch\+json|apply-patch\+yaml)|text\/plain)?\s*(;|$)/;

async function readBody(req: IncomingMessage): Promise<string> {
  const contentType = req.headers['content-type'] ?? '';
  if (!READABLE_BODY_TYPES.test(contentType)) throw unsupportedBodyEncoding(contentType);
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of req) {
    length += (chunk as Buffer).length;
    if (length > MAX_REQUEST_BODY_BYTES) {
      throw new ApiError({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'the request body is too large',
        reason: 'RequestEntityTooLarge',
        code: 413,
      });
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest(`the request body is not valid JSON: ${(error as Error).message}`);
  }
}

function isTruthyParam(value: string | null): boolean {
  return value === 'true' || value === '1';
}

function includeObjectParam(url: URL): IncludeObject {
  const value = url.searchParams.get('includeObject');
  return value === 'None' || value === 'Object' ? value : 'Metadata';
}

class SimApiServerImpl implements SimApiServer {
  readonly host: string;
  port: number;
  readonly caPem: string;
  readonly adminToken: string;
  readonly store: SimStore;
  readonly requests: RecordedRequest[] = [];
  readonly counters: SimCounters = {
    requests: 0,
    byVerb: {},
    unauthorized: 0,
    forbidden: 0,
    watchesStarted: 0,
    watchesActive: 0,
    logStreams: 0,
    execSessions: 0,
    portForwardSessions: 0,
    portForwardConnections: 0,
    restarts: 0,
  };

  readonly #options: SimApiServerOptions;
  readonly #ca: SimCertificateAuthority;
  readonly #serving: CertificateAndKey;
  readonly #registry: ResourceRegistry;
  readonly #objects: ObjectService;
  readonly #discovery: Discovery;
  readonly #openApi: OpenApiV3;
  readonly #authenticator: Authenticator;
  readonly #authorizer: RbacAuthorizer;
  readonly #tokens: Map<string, TokenIdentity>;
  readonly #logs = new PodLogs();
  readonly #portForwards = new Map<string, PortForwardTarget>();
  readonly #sockets = new Set<Socket>();
  readonly #resumeCallbacks = new Set<() => void>();
  readonly #gitVersion: string;
  #server: Server | undefined;
  #stopControllers: () => void = () => {};
  #isPaused = false;
  /** The bytes served at /cacerts, read on first use. */
  #caCerts: Buffer | undefined;

  constructor(options: SimApiServerOptions, ca: SimCertificateAuthority, serving: CertificateAndKey) {
    this.#options = options;
    this.host = options.host ?? '127.0.0.1';
    this.port = options.port ?? 0;
    this.#ca = ca;
    this.caPem = ca.certPem;
    this.#serving = serving;
    this.#gitVersion = options.gitVersion ?? DEFAULT_SIM_GIT_VERSION;
    this.adminToken = options.adminToken ?? randomBytes(24).toString('hex');
    this.#registry = new ResourceRegistry([
      ...BUILTIN_RESOURCES,
      ...(options.csrControllers ? [CERTIFICATE_SIGNING_REQUESTS] : []),
      ...(options.resources ?? []),
    ]);
    this.store = new SimStore(
      options.eventHistoryLimit !== undefined ? { eventHistoryLimit: options.eventHistoryLimit } : {},
    );
    this.#objects = new ObjectService({
      store: this.store,
      registry: this.#registry,
      isPodStartingRunning: options.podsStartRunning ?? true,
      isDefaultTolerationSecondsOn: options.nodeLifecycle !== undefined && options.nodeLifecycle !== false,
      onPodDeleted: (namespace, name) => this.#logs.forgetPod(namespace, name),
    });
    this.#discovery = new Discovery(this.#registry);
    this.#openApi = new OpenApiV3(this.#registry, this.#gitVersion);
    this.#tokens = new Map(Object.entries(options.tokens ?? {}));
    this.#tokens.set(this.adminToken, { user: ADMIN_USER, groups: ['system:masters'] });
    this.#authenticator = new Authenticator({
      store: this.store,
      secrets: this.#definition('', 'v1', 'secrets'),
      tokens: this.#tokens,
      acceptClientCertificates: options.acceptClientCertificates ?? true,
      acceptBootstrapTokens: options.acceptBootstrapTokens ?? true,
      isAnonymousAllowed: options.anonymousAuth ?? true,
      serviceAccounts: this.#definition('', 'v1', 'serviceaccounts'),
    });
    this.#authorizer = new RbacAuthorizer(this.store, {
      roles: this.#definition('rbac.authorization.k8s.io', 'v1', 'roles'),
      roleBindings: this.#definition('rbac.authorization.k8s.io', 'v1', 'rolebindings'),
      clusterRoles: this.#definition('rbac.authorization.k8s.io', 'v1', 'clusterroles'),
      clusterRoleBindings: this.#definition('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings'),
    });
    if (options.snapshot) {
      this.store.restore(options.snapshot, (o) => this.#registry.byKind(o.apiVersion, o.kind));
    } else {
      const bootstrap = [
        ...defaultNamespaces(),
        ...(options.defaultRbac === false ? [] : defaultRbacObjects()),
        ...(options.defaultRbac !== false && options.csrControllers ? csrRbacObjects() : []),
      ];
      for (const object of [...bootstrap, ...(options.objects ?? [])])
        this.#objects.upsert(object, HANDLE_FIELD_MANAGER);
    }
    startTokenController(
      this.store,
      {
        secrets: this.#definition('', 'v1', 'secrets'),
        serviceAccounts: this.#definition('', 'v1', 'serviceaccounts'),
      },
      this.caPem,
    );
    if (options.workloadControllers !== false) {
      this.#stopControllers = startWorkloadControllers(
        { store: this.store, objects: this.#objects, registry: this.#registry },
        options.workloadControllers ?? {},
      );
    }
    if (options.nodeLifecycle !== undefined && options.nodeLifecycle !== false) {
      const stopWorkloads = this.#stopControllers;
      const stopLifecycle = startNodeLifecycle(
        { store: this.store, objects: this.#objects, registry: this.#registry },
        options.nodeLifecycle,
      );
      this.#stopControllers = () => {
        stopWorkloads();
        stopLifecycle();
      };
    }
    if (options.onChange) {
      const onChange = options.onChange;
      this.store.subscribe(() => onChange());
    }
  }

  get url(): string {
    return `https://${hostForUrl(this.host)}:${this.port}`;
  }

  get isRunning(): boolean {
    return this.#server?.listening ?? false;
  }

  #definition(group: string, version: string, resource: string): ResourceDefinition {
    const found = this.#registry.byResource(group, version, resource);
    if (!found) throw new Error(`the simulation lacks its built-in ${resource} type`);
    return found;
  }

  async listen(): Promise<void> {
    const tls = {
      cert: this.#serving.certPem,
      key: this.#serving.keyPem,
      ca: this.caPem,
      requestCert: this.#options.acceptClientCertificates ?? true,
      rejectUnauthorized: false,
    };
    // With HTTP/2 the compatibility API hands the same handlers a request and response of that
    // protocol; HTTP/1.1 connections (and their upgrades) go to the same handlers as before.
    const server = (
      this.#options.http2 === true ? createSecureServer({ ...tls, allowHTTP1: true }) : createServer(tls)
    ) as Server;
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      // An HTTP/2 request (compatibility API) has no headersDistinct: made from its raw headers, as HTTP/1.1's.
      if (req.headersDistinct === undefined) {
        const distinct: Record<string, string[]> = {};
        for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
          const name = (req.rawHeaders[i] as string).toLowerCase();
          if (!name.startsWith(':')) (distinct[name] ??= []).push(req.rawHeaders[i + 1] as string);
        }
        Object.defineProperty(req, 'headersDistinct', { value: distinct });
      }
      void this.#handle(req, res);
    });
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      void this.#handleUpgrade(req, socket, head);
    });
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, this.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  async kill(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    await closed;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.listen();
    this.counters.restarts++;
  }

  async stop(): Promise<void> {
    this.#stopControllers();
    this.resume();
    await this.kill();
  }

  pause(): void {
    this.#isPaused = true;
  }

  resume(): void {
    if (!this.#isPaused) return;
    this.#isPaused = false;
    for (const callback of [...this.#resumeCallbacks]) callback();
  }

  #untilResumed(): Promise<void> {
    if (!this.#isPaused) return Promise.resolve();
    return new Promise((resolve) => {
      const callback = (): void => {
        this.#resumeCallbacks.delete(callback);
        resolve();
      };
      this.#resumeCallbacks.add(callback);
    });
  }

  setObject(object: KubeObject): KubeObject {
    return this.#objects.upsert(structuredClone(object), HANDLE_FIELD_MANAGER);
  }

  #refDefinition(ref: ObjectRef): ResourceDefinition {
    const definition = this.#registry.byKind(ref.apiVersion, ref.kind);
    if (!definition) throw new Error(`the simulation serves no ${ref.apiVersion} ${ref.kind}`);
    return definition;
  }

  getObject(ref: ObjectRef): KubeObject | undefined {
    return this.store.get(this.#refDefinition(ref), ref.namespace ?? '', ref.name);
  }

  deleteObject(ref: ObjectRef): boolean {
    const definition = this.#refDefinition(ref);
    if (!this.store.get(definition, ref.namespace ?? '', ref.name)) return false;
    this.#objects.remove(definition, ref.namespace ?? '', ref.name);
    return true;
  }

  appendPodLog(namespace: string, pod: string, line: string, container?: string): void {
    this.#logs.append(namespace, pod, container ?? this.#defaultContainer(namespace, pod), line);
  }

  endPodLog(namespace: string, pod: string, container?: string): void {
    this.#logs.end(namespace, pod, container ?? this.#defaultContainer(namespace, pod));
  }

  setPortForward(namespace: string, pod: string, podPort: number, target: PortForwardTarget): void {
    this.#portForwards.set(`${namespace}/${pod}/${podPort}`, target);
  }

  issueClientCertificate(identity: ClientIdentity): Promise<CertificateAndKey> {
    return this.#ca.issueClient(identity);
  }

  addToken(token: string, identity: TokenIdentity): void {
    this.#tokens.set(token, identity);
  }

  clearRequests(): void {
    this.requests.length = 0;
  }

  kubeconfig(options: KubeconfigOptions = {}): string {
    const user: Record<string, string> = {};
    if (options.clientCertificate) {
      user['client-certificate-data'] = Buffer.from(options.clientCertificate.certPem).toString('base64');
      user['client-key-data'] = Buffer.from(options.clientCertificate.keyPem).toString('base64');
    } else if (options.isAnonymous) {
      // kubectl prompts for credentials when a user has none; a username makes it send Basic
      // auth instead, which the server (like kube-apiserver) treats as anonymous.
      user['username'] = 'system:anonymous';
      user['password'] = '';
    } else {
      user['token'] = options.token ?? this.adminToken;
    }
    return dumpYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'sim',
          cluster: {
            server: options.server ?? this.url,
            'certificate-authority-data': Buffer.from(this.caPem).toString('base64'),
          },
        },
      ],
      users: [{ name: 'sim-user', user }],
      contexts: [
        {
          name: 'sim',
          context: { cluster: 'sim', user: 'sim-user', ...(options.namespace ? { namespace: options.namespace } : {}) },
        },
      ],
      'current-context': 'sim',
    });
  }

  #defaultContainer(namespace: string, pod: string): string {
    const object = this.store.get(this.#definition('', 'v1', 'pods'), namespace, pod);
    const annotated = object?.metadata.annotations?.['kubectl.kubernetes.io/default-container'];
    if (annotated) return annotated;
    const containers = (object?.['spec'] as Record<string, unknown> | undefined)?.['containers'];
    const first = Array.isArray(containers) ? (containers[0] as Record<string, unknown> | undefined) : undefined;
    return typeof first?.['name'] === 'string' ? first['name'] : '';
  }

  #resolvePortForward(namespace: string, pod: KubeObject): (port: number) => PortForwardTarget | undefined {
    return (port) => {
      const configured = this.#portForwards.get(`${namespace}/${pod.metadata.name}/${port}`);
      if (configured) return configured;
      const annotated = pod.metadata.annotations?.[`${PORT_FORWARD_ANNOTATION_PREFIX}${port}`];
      const match = annotated ? /^(.*):(\d+)$/.exec(annotated) : null;
      return match ? { host: (match[1] ?? '').replace(/^\[|\]$/g, ''), port: Number(match[2]) } : undefined;
    };
  }

  // -------------------------------------------------------------------------
  // Request pipeline

  /** Authenticates, impersonates, records and authorizes; returns who acts and what they ask. */
  #admit(
    req: IncomingMessage,
    url: URL,
    isUpgrade: boolean,
  ): { user: UserInfo; info: RequestInfo; record: RecordedRequest } {
    const info = parseRequestInfo(req.method ?? 'GET', url);
    if (info.isResourceRequest && (info.verb === 'list' || info.verb === 'watch') && !info.name) {
      // A list or watch pinned to one name by fieldSelector is authorized against that name, as the real server does.
      const pinned = parseFieldSelector(url.searchParams.get('fieldSelector')).pinnedName;
      if (pinned) info.name = pinned;
    }
    if (isUpgrade && info.isResourceRequest) info.verb = 'create';
    const headers: RecordedRequest['headers'] = { ...req.headers };
    delete headers['authorization'];
    delete headers['proxy-authorization'];
    const record: RecordedRequest = {
      time: new Date().toISOString(),
      method: req.method ?? 'GET',
      url: `${url.pathname}${url.search}`,
      target: req.url ?? '',
      path: url.pathname,
      verb: info.verb,
      apiGroup: info.apiGroup,
      resource: info.resource,
      subresource: info.subresource,
      namespace: info.namespace,
      name: info.name,
      user: ANONYMOUS.name,
      groups: [],
      headers,
    };
    this.counters.requests++;
    this.counters.byVerb[info.verb] = (this.counters.byVerb[info.verb] ?? 0) + 1;
    if (this.#options.recordRequests) {
      this.requests.push(record);
      if (this.requests.length > MAX_RECORDED_REQUESTS)
        this.requests.splice(0, this.requests.length - MAX_RECORDED_REQUESTS);
    }
    let authenticated: UserInfo;
    try {
      authenticated = this.#authenticator.authenticate(req);
    } catch (error) {
      this.counters.unauthorized++;
      throw error;
    }
    record.user = authenticated.name;
    record.groups = authenticated.groups;
    const impersonation = impersonate(req, authenticated, this.#authorizer);
    if (impersonation.impersonatedUser !== undefined) {
      record.impersonatedUser = impersonation.impersonatedUser;
      record.impersonatedGroups = impersonation.impersonatedGroups ?? [];
    }
    const user = impersonation.effective;
    const decision = this.#authorizer.authorize(user, info);
    if (!decision.allowed) {
      this.counters.forbidden++;
      throw forbidden(
        info.isResourceRequest
          ? { resource: info.resource, group: info.apiGroup, ...(info.name ? { name: info.name } : {}) }
          : undefined,
        decision.message,
      );
    }
    return { user, info, record };
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://sim-apiserver.invalid');
    let record: RecordedRequest | undefined;
    res.setHeader('Audit-Id', randomUUID());
    res.setHeader('Cache-Control', 'no-cache, private');
    res.on('finish', () => {
      if (record) record.status = res.statusCode;
    });
    try {
      await this.#untilResumed();
      if (await this.#serveK3sSupervisor(req, res, url)) return;
      const admitted = this.#admit(req, url, false);
      record = admitted.record;
      if (admitted.info.isResourceRequest) await this.#serveResource(req, res, url, admitted.user, admitted.info);
      else await this.#serveNonResource(req, res, url);
    } catch (error) {
      const status = error instanceof ApiError ? error.status : internalError((error as Error).message).status;
      if (record) record.status = status.code;
      if (res.headersSent) {
        res.end();
        return;
      }
      this.#sendJson(res, status.code, status);
    }
  }

  /** The CSR type when the simulated CSR controllers run. */
  #csrDefinition(): ResourceDefinition | undefined {
    return this.#options.csrControllers ? CERTIFICATE_SIGNING_REQUESTS : undefined;
  }

  /** k3s's supervisor endpoints, when asked for (see `caCertsFile`, `k3sAgentCertificates`); true when it answered. */
  async #serveK3sSupervisor(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const file = this.#options.caCertsFile;
    if (file !== undefined && url.pathname === '/cacerts') {
      // k3s reads the file on the first request and serves those bytes from then on, to anyone.
      this.#caCerts ??= await readFile(file);
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': this.#caCerts.length });
      res.end(req.method === 'HEAD' ? undefined : this.#caCerts);
      return true;
    }
    if (this.#options.k3sAgentCertificates !== true) return false;
    if (!K3S_AGENT_START_PATHS.has(url.pathname) && url.pathname !== '/v1-k3s/apiservers') return false;
    // k3s's auth.HasRole: the cluster's authenticator (a client certificate first, then the
    // bearer token), then one of the agent roles.
    const user = this.#authenticator.authenticate(req);
    if (!user.groups.some((group) => K3S_AGENT_ROLES.includes(group))) throw forbidden(undefined, 'forbidden');
    const body = await this.#k3sAgentStartAnswer(req, url.pathname);
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
    return true;
  }

  /**
   * The answer of one of the supervisor paths a k3s agent asks at every
   * start (k3s pkg/server/handlers/router.go, NewHandler): the CAs as files,
   * the node's serving and client certificates (node-named: they need the
   * `k3s-Node-Name` header; k3s checks `k3s-Node-Password` too, which the
   * simulation only requires to be sent), the shared kube-proxy and
   * controller client certificates, and a small part of the server's
   * configuration. Certificates are sent as k3s's legacy GET form sends them:
   * certificate, CA, then the key.
   */
  async #k3sAgentStartAnswer(req: IncomingMessage, path: string): Promise<string> {
    const issuedPem = (issued: CertificateAndKey): string =>
      `${issued.certPem.trimEnd()}\n${this.caPem.trimEnd()}\n${issued.keyPem.trimEnd()}\n`;
    const nodeNamed = (): { nodeName: string; nodeIps: string[] } => {
      const nodeName = req.headers['k3s-node-name'];
      if (typeof nodeName !== 'string' || nodeName === '') throw badRequest('node name not set');
      const password = req.headers['k3s-node-password'];
      if (typeof password !== 'string' || password === '') throw forbidden(undefined, 'node password not set');
      const ips = req.headers['k3s-node-ip'];
      return { nodeName, nodeIps: typeof ips === 'string' && ips !== '' ? ips.split(',') : [] };
    };
    switch (path) {
      case '/v1-k3s/apiservers':
        // k3s's APIServers: the `host:port` of every kube-apiserver (the `kubernetes` Endpoints); here, this one.
        return JSON.stringify([`${hostForUrl(this.host)}:${this.port}`]);
      case '/v1-k3s/client-ca.crt':
      case '/v1-k3s/server-ca.crt':
        // One CA in the simulation (README: "One CA").
        return this.caPem;
      case '/v1-k3s/config':
        // The fields of k3s's config.Control an agent reads before it starts its kubelet.
        return JSON.stringify({
          HTTPSPort: this.port,
          SupervisorPort: this.port,
          ClusterDomain: 'cluster.local',
          ClusterDNS: '10.43.0.10',
          ClusterIPRange: '10.42.0.0/16',
          ServiceIPRange: '10.43.0.0/16',
          FlannelBackend: 'none',
        });
      case '/v1-k3s/serving-kubelet.crt': {
        const { nodeName, nodeIps } = nodeNamed();
        // As k3s's ServingKubeletCert: signed by the server CA, for the node name, localhost, 127.0.0.1 and the node IPs.
        return issuedPem(await this.#ca.issueServing([nodeName, 'localhost', '127.0.0.1', ...nodeIps]));
      }
      case '/v1-k3s/client-kubelet.crt': {
        const { nodeName } = nodeNamed();
        return issuedPem(await this.#ca.issueClient({ user: `system:node:${nodeName}`, groups: ['system:nodes'] }));
      }
      case '/v1-k3s/client-kube-proxy.crt':
        return issuedPem(await this.#ca.issueClient({ user: 'system:kube-proxy' }));
      default:
        return issuedPem(await this.#ca.issueClient({ user: 'system:k3s-controller' }));
    }
  }

  #sendJson(res: ServerResponse, code: number, body: unknown, contentType = 'application/json'): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  async #serveNonResource(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = url.pathname.replace(/\/+$/, '') || '/';
    if (req.method !== 'GET' && req.method !== 'HEAD') throw pathNotFound();
    if (path === '/version') {
      this.#sendJson(res, 200, {
        ...versionParts(this.#gitVersion),
        gitVersion: this.#gitVersion,
        gitCommit: 'simulation',
        gitTreeState: 'clean',
        buildDate: '1970-01-01T00:00:00Z',
        goVersion: 'n/a (edgeadm sim-apiserver)',
        compiler: 'n/a',
        platform: 'linux/amd64',
      });
      return;
    }
    if (/^\/(healthz|livez|readyz)(\/.*)?$/.test(path)) {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
      res.end(
        url.searchParams.has('verbose') ? `[+]ping ok\n[+]sim-apiserver ok\n${path.slice(1)} check passed\n` : 'ok',
      );
      return;
    }
    const aggregated = wantsAggregatedDiscovery(req.headers.accept);
    if (path === '/api') {
      if (aggregated) {
        res.setHeader('Vary', 'Accept');
        this.#sendJson(
          res,
          200,
          this.#discovery.aggregated('core', aggregated),
          AGGREGATED_DISCOVERY_CONTENT_TYPE.replace('v=v2', `v=${aggregated}`),
        );
      } else {
        this.#sendJson(res, 200, this.#discovery.coreVersions(`${hostForUrl(this.host)}:${this.port}`));
      }
      return;
    }
    if (path === '/apis') {
      if (aggregated) {
        res.setHeader('Vary', 'Accept');
        this.#sendJson(
          res,
          200,
          this.#discovery.aggregated('groups', aggregated),
          AGGREGATED_DISCOVERY_CONTENT_TYPE.replace('v=v2', `v=${aggregated}`),
        );
      } else {
        this.#sendJson(res, 200, this.#discovery.groupList());
      }
      return;
    }
    if (path === '/openapi/v3') return this.#sendJson(res, 200, this.#openApi.root());
    if (path.startsWith('/openapi/v3/')) {
      const document = this.#openApi.document(path.slice('/openapi/v3/'.length));
      if (document) {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(document) });
        res.end(document);
        return;
      }
    }
    const parts = path.split('/').filter((p) => p.length > 0);
    if (parts[0] === 'api' && parts.length === 2) {
      const list = this.#discovery.resourceList('', parts[1] ?? '');
      if (list) return this.#sendJson(res, 200, list);
    }
    if (parts[0] === 'apis' && parts.length === 2) {
      const group = this.#discovery.group(parts[1] ?? '');
      if (group) return this.#sendJson(res, 200, group);
    }
    if (parts[0] === 'apis' && parts.length === 3) {
      const list = this.#discovery.resourceList(parts[1] ?? '', parts[2] ?? '');
      if (list) return this.#sendJson(res, 200, list);
    }
    throw pathNotFound();
  }

  async #serveResource(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    user: UserInfo,
    info: RequestInfo,
  ): Promise<void> {
    const definition = this.#registry.byResource(info.apiGroup, info.apiVersion, info.resource);
    if (!definition) throw pathNotFound();
    if (definition.namespaced === false && info.namespace && info.resource !== 'namespaces') throw pathNotFound();
    const namespace = definition.namespaced ? info.namespace : '';
    if (definition.namespaced && !namespace && info.name) throw pathNotFound();
    if (info.subresource && !definition.subresources.includes(info.subresource)) throw pathNotFound();
    const target = {
      resource: definition.resource,
      group: definition.group,
      ...(info.name ? { name: info.name } : {}),
    };
    const isDryRun = url.searchParams.getAll('dryRun').includes('All');
    const manager = url.searchParams.get('fieldManager') ?? defaultFieldManager(req.headers['user-agent']);

    if (definition.isVirtual) {
      if (info.verb !== 'create') throw methodNotSupported(target, info.verb);
      return this.#serveReview(req, res, definition, user);
    }
    if (info.subresource === 'log') return this.#serveLog(res, url, definition, namespace, info.name);
    if (info.subresource === 'exec' || info.subresource === 'portforward') {
      throw badRequest('Upgrade request required');
    }
    if (info.subresource === 'eviction') {
      if (info.verb !== 'create') throw methodNotSupported(target, info.verb);
      const status = evictPod(
        { objects: this.#objects, registry: this.#registry },
        { namespace, name: info.name, body: parseJson(await readBody(req)), isDryRun },
      );
      return this.#sendJson(res, 201, status);
    }
    if (info.subresource && !['status', 'finalize'].includes(info.subresource)) throw pathNotFound();
    if (!info.subresource && !definition.verbs.includes(info.verb as never))
      throw methodNotSupported(target, info.verb);

    const selectors = {
      labels: parseLabelSelector(url.searchParams.get('labelSelector')),
      fields: parseFieldSelector(url.searchParams.get('fieldSelector')),
    };
    const table = wantsTable(req.headers.accept) ? { includeObject: includeObjectParam(url) } : undefined;
    const respond = (code: number, object: KubeObject): void => {
      if (table) {
        this.#sendJson(
          res,
          code,
          toTable(definition, [object], {
            resourceVersion: object.metadata.resourceVersion ?? '',
            includeObject: table.includeObject,
          }),
          TABLE_CONTENT_TYPE,
        );
      } else {
        this.#sendJson(res, code, object);
      }
    };
    const subresource = info.subresource === 'status' ? 'status' : '';

    switch (info.verb) {
      case 'get':
        return respond(200, this.#objects.get(definition, namespace, info.name));
      case 'list': {
        const { items, resourceVersion } = this.#objects.list(definition, namespace, selectors);
        if (table) {
          this.#sendJson(
            res,
            200,
            toTable(definition, items, { resourceVersion, includeObject: table.includeObject }),
            TABLE_CONTENT_TYPE,
          );
          return;
        }
        for (const item of items) {
          // Items of a typed list carry no kind/apiVersion on the wire.
          delete (item as Partial<KubeObject>).apiVersion;
          delete (item as Partial<KubeObject>).kind;
        }
        this.#sendJson(res, 200, {
          kind: listKindOf(definition),
          apiVersion: groupVersionOf(definition),
          metadata: { resourceVersion },
          items,
        });
        return;
      }
      case 'watch':
        return this.#serveWatch(res, url, definition, namespace, selectors, table);
      case 'create': {
        if (info.name) throw methodNotSupported(target, 'create');
        let body = parseJson(await readBody(req));
        const isCsr = definition === this.#csrDefinition();
        if (isCsr) body = recordRequestor(body, user);
        const created = this.#objects.create(definition, namespace, body, { manager, isDryRun });
        const signed =
          isCsr && !isDryRun
            ? await approveAndSign(created, { authorizer: this.#authorizer, ca: this.#ca })
            : undefined;
        return respond(201, signed ? this.setObject(signed) : created);
      }
      case 'update': {
        const body = parseJson(await readBody(req));
        return respond(
          200,
          this.#objects.update(definition, namespace, info.name, body, { manager, isDryRun, subresource }),
        );
      }
      case 'patch': {
        const body = await readBody(req);
        const contentType = req.headers['content-type'] ?? '';
        const isApply = contentType.startsWith('application/apply-patch');
        if (isApply && !url.searchParams.get('fieldManager')) {
          throw badRequest('PATCH requests with application/apply-patch+yaml must set the fieldManager parameter');
        }
        const { object, isCreated } = this.#objects.patch(
          definition,
          namespace,
          info.name,
          { contentType, body, isForced: isTruthyParam(url.searchParams.get('force')) },
          { manager, isDryRun, subresource },
        );
        return respond(isCreated ? 201 : 200, object);
      }
      case 'delete': {
        const text = await readBody(req);
        const options = text.trim() ? parseJson(text) : {};
        const preconditions =
          isMap(options) && isMap(options['preconditions'])
            ? (options['preconditions'] as { uid?: string; resourceVersion?: string })
            : undefined;
        const removed = this.#objects.remove(definition, namespace, info.name, {
          ...(preconditions ? { preconditions } : {}),
          isDryRun,
        });
        return respond(200, removed);
      }
      case 'deletecollection': {
        const removed = this.#objects.removeCollection(definition, namespace, selectors, { isDryRun });
        this.#sendJson(res, 200, {
          kind: listKindOf(definition),
          apiVersion: groupVersionOf(definition),
          metadata: { resourceVersion: this.store.resourceVersion },
          items: removed,
        });
        return;
      }
      default:
        throw methodNotSupported(target, info.verb);
    }
  }

  #serveWatch(
    res: ServerResponse,
    url: URL,
    definition: ResourceDefinition,
    namespace: string,
    selectors: { labels: ReturnType<typeof parseLabelSelector>; fields: ReturnType<typeof parseFieldSelector> },
    table: { includeObject: IncludeObject } | undefined,
  ): void {
    const timeout = url.searchParams.get('timeoutSeconds');
    this.counters.watchesStarted++;
    this.counters.watchesActive++;
    serveWatch(
      this.store,
      {
        definition,
        namespace,
        // A name in the path (legacy /watch/ form) pins the watch to one object; a fieldSelector name is in the selector.
        name: parseRequestInfo('GET', url).name,
        labels: selectors.labels,
        fields: selectors.fields,
        resourceVersion: url.searchParams.get('resourceVersion'),
        allowBookmarks: isTruthyParam(url.searchParams.get('allowWatchBookmarks')),
        sendInitialEvents: isTruthyParam(url.searchParams.get('sendInitialEvents')),
        timeoutSeconds: timeout !== null ? Number(timeout) : undefined,
        table,
        bookmarkIntervalMs: this.#options.bookmarkIntervalMs ?? DEFAULT_BOOKMARK_INTERVAL_MS,
      },
      res,
      {
        isHeld: () => this.#isPaused,
        onResume: (callback) => {
          this.#resumeCallbacks.add(callback);
          // Resume callbacks stay registered for the watch's lifetime, unlike one-shot request holds.
          return () => this.#resumeCallbacks.delete(callback);
        },
        onClose: () => {
          this.counters.watchesActive--;
        },
      },
    );
  }

  #serveLog(res: ServerResponse, url: URL, definition: ResourceDefinition, namespace: string, name: string): void {
    const pod = this.#objects.get(definition, namespace, name);
    const containers = ((pod['spec'] as Record<string, unknown> | undefined)?.['containers'] ?? []) as {
      name?: string;
    }[];
    let container = url.searchParams.get('container') ?? '';
    if (!container) {
      const annotated = pod.metadata.annotations?.['kubectl.kubernetes.io/default-container'];
      if (annotated) container = annotated;
      else if (containers.length > 1) {
        throw badRequest(
          `a container name must be specified for pod ${name}, choose one of: [${containers.map((c) => c.name ?? '').join(' ')}]`,
        );
      } else container = containers[0]?.name ?? '';
    } else if (containers.length > 0 && !containers.some((c) => c.name === container)) {
      throw badRequest(`container ${container} is not valid for pod ${name}`);
    }
    const tail = url.searchParams.get('tailLines');
    const options = {
      ...(tail !== null ? { tailLines: Number(tail) } : {}),
      timestamps: isTruthyParam(url.searchParams.get('timestamps')),
    };
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.write(this.#logs.read(namespace, name, container, options));
    if (!isTruthyParam(url.searchParams.get('follow')) || this.#logs.isEnded(namespace, name, container)) {
      res.end();
      return;
    }
    res.flushHeaders();
    this.counters.logStreams++;
    const unsubscribe = this.#logs.follow(
      namespace,
      name,
      container,
      (chunk) => {
        if (chunk === undefined) res.end();
        else res.write(chunk);
      },
      options,
    );
    res.on('close', unsubscribe);
  }

  async #serveReview(
    req: IncomingMessage,
    res: ServerResponse,
    definition: ResourceDefinition,
    user: UserInfo,
  ): Promise<void> {
    const body = parseJson(await readBody(req));
    const review = isMap(body) ? body : {};
    const base = {
      apiVersion: groupVersionOf(definition),
      kind: definition.kind,
      metadata: { creationTimestamp: null },
    };
    if (definition.resource === 'selfsubjectreviews') {
      const userInfo: Record<string, unknown> = { username: user.name, groups: user.groups };
      if (user.uid) userInfo['uid'] = user.uid;
      if (user.extra) userInfo['extra'] = user.extra;
      this.#sendJson(res, 201, { ...base, status: { userInfo } });
      return;
    }
    const spec = isMap(review['spec']) ? review['spec'] : {};
    const resource = isMap(spec['resourceAttributes']) ? spec['resourceAttributes'] : undefined;
    const nonResource = isMap(spec['nonResourceAttributes']) ? spec['nonResourceAttributes'] : undefined;
    const str = (value: unknown): string => (typeof value === 'string' ? value : '');
    const asked: RequestInfo = resource
      ? {
          isResourceRequest: true,
          path: '',
          verb: str(resource['verb']),
          apiGroup: str(resource['group']),
          apiVersion: str(resource['version']),
          namespace: str(resource['namespace']),
          resource: str(resource['resource']),
          subresource: str(resource['subresource']),
          name: str(resource['name']),
        }
      : {
          isResourceRequest: false,
          path: str(nonResource?.['path']),
          verb: str(nonResource?.['verb']),
          apiGroup: '',
          apiVersion: '',
          namespace: '',
          resource: '',
          subresource: '',
          name: '',
        };
    const decision = this.#authorizer.authorize(user, asked);
    this.#sendJson(res, 201, {
      ...base,
      spec,
      status: { allowed: decision.allowed, ...(decision.allowed ? {} : { reason: '' }) },
    });
  }

  // -------------------------------------------------------------------------
  // Upgraded connections: exec and port-forward

  async #handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://sim-apiserver.invalid');
    socket.on('error', () => socket.destroy());
    let record: RecordedRequest | undefined;
    try {
      await this.#untilResumed();
      if (this.#options.k3sAgentCertificates === true && url.pathname === '/v1-k3s/connect') {
        this.#acceptK3sTunnel(req, socket);
        return;
      }
      const admitted = this.#admit(req, url, true);
      record = admitted.record;
      const { info } = admitted;
      if (
        !info.isResourceRequest ||
        info.apiGroup !== '' ||
        info.resource !== 'pods' ||
        !['exec', 'portforward'].includes(info.subresource)
      ) {
        throw badRequest(`the simulation upgrades only pods/exec and pods/portforward, not ${url.pathname}`);
      }
      const definition = this.#definition('', 'v1', 'pods');
      const pod = this.store.get(definition, info.namespace, info.name);
      if (!pod) throw notFound({ resource: 'pods', group: '', name: info.name });
      const phase = (pod['status'] as Record<string, unknown> | undefined)?.['phase'];
      if (phase === 'Succeeded' || phase === 'Failed') {
        throw badRequest(
          `cannot ${info.subresource === 'exec' ? 'exec into' : 'forward ports to'} a container in a completed pod; current phase is ${String(phase)}`,
        );
      }
      if (info.subresource === 'exec') this.#upgradeExec(req, socket, head, url, info, pod, record);
      else this.#upgradePortForward(req, socket, head, url, info, pod, record);
    } catch (error) {
      const status = error instanceof ApiError ? error.status : internalError((error as Error).message).status;
      if (record) record.status = status.code;
      writeRawStatus(socket, status);
    }
  }

  /**
   * k3s's agent tunnel (`/v1-k3s/connect`, behind `system:nodes` only: k3s
   * router.go, `nodeAuthed`): a websocket the agent opens to its supervisor
   * and waits for before it starts its kubelet. The simulation accepts the
   * upgrade from a node and holds the connection open; it sends no
   * remotedialer frames (nothing in the simulation dials through a node).
   */
  #acceptK3sTunnel(req: IncomingMessage, socket: Duplex): void {
    // As impersonated: a node's tunnel reaching this server through another (etcd-datastore.ts) is that node's.
    const user = impersonate(req, this.#authenticator.authenticate(req), this.#authorizer).effective;
    if (!user.groups.includes('system:nodes')) throw forbidden(undefined, 'forbidden');
    const key = req.headers['sec-websocket-key'];
    if (req.headers.upgrade?.toLowerCase() !== 'websocket' || typeof key !== 'string' || key === '') {
      throw badRequest('the tunnel is a websocket');
    }
    const accept = createHash('sha1').update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`,
    );
    socket.on('data', () => {});
  }

  #upgradeExec(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    url: URL,
    info: RequestInfo,
    pod: KubeObject,
    record: RecordedRequest,
  ): void {
    const argv = url.searchParams.getAll('command');
    if (argv.length === 0) throw badRequest('you must specify at least 1 command');
    const containers = ((pod['spec'] as Record<string, unknown> | undefined)?.['containers'] ?? []) as {
      name?: string;
    }[];
    const container = url.searchParams.get('container') ?? containers[0]?.name ?? '';
    if (containers.length > 0 && !containers.some((c) => c.name === container)) {
      throw badRequest(`container ${container} is not valid for pod ${info.name}`);
    }
    const request: ExecRequest = {
      namespace: info.namespace,
      pod: info.name,
      container,
      argv,
      hasStdin: isTruthyParam(url.searchParams.get('stdin')),
      hasStdout: isTruthyParam(url.searchParams.get('stdout')),
      hasStderr: isTruthyParam(url.searchParams.get('stderr')),
      isTty: isTruthyParam(url.searchParams.get('tty')),
    };
    const commands = this.#options.execCommands ?? {};
    if (isWebSocketUpgrade(req)) {
      const protocol = negotiateProtocol(req.headers['sec-websocket-protocol'], EXEC_PROTOCOLS);
      if (!protocol)
        throw badRequest(
          `unable to upgrade: none of the offered subprotocols is supported (supported: ${EXEC_PROTOCOLS.join(', ')})`,
        );
      const connection = acceptWebSocket(req, socket, head, protocol);
      record.status = 101;
      this.counters.execSessions++;
      void runExecSession(connection, request, commands);
      return;
    }
    if ((req.headers.upgrade ?? '').toLowerCase() !== 'spdy/3.1') throw badRequest('unsupported upgrade protocol');
    const offered = (req.headersDistinct['x-stream-protocol-version'] ?? []).flatMap((v) =>
      v.split(',').map((p) => p.trim()),
    );
    const version = offered.find((p) => (EXEC_PROTOCOLS as readonly string[]).includes(p));
    if (!version) {
      throw badRequest(
        `unable to upgrade: unable to negotiate protocol: client supports ${JSON.stringify(offered)}, server accepts ${JSON.stringify(EXEC_PROTOCOLS)}`,
      );
    }
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${version}\r\n\r\n`,
    );
    record.status = 101;
    this.counters.execSessions++;
    serveSpdyExec(socketTransport(socket, head), request, commands);
  }

  #upgradePortForward(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    url: URL,
    info: RequestInfo,
    pod: KubeObject,
    record: RecordedRequest,
  ): void {
    const resolve = this.#resolvePortForward(info.namespace, pod);
    const target = { namespace: info.namespace, name: info.name, uid: pod.metadata.uid ?? '' };
    const hooks = { onConnection: () => this.counters.portForwardConnections++ };
    if (isWebSocketUpgrade(req)) {
      const protocol = negotiateProtocol(req.headers['sec-websocket-protocol'], [
        SPDY_TUNNEL_PROTOCOL,
        ...WEBSOCKET_PORT_FORWARD_PROTOCOLS,
      ]);
      if (protocol === SPDY_TUNNEL_PROTOCOL) {
        const connection = acceptWebSocket(req, socket, head, protocol);
        record.status = 101;
        this.counters.portForwardSessions++;
        serveSpdyPortForward(tunnelTransport(connection), target, resolve, hooks);
        return;
      }
      const ports = url.searchParams
        .getAll('ports')
        .flatMap((p) => p.split(','))
        .map((p) => Number(p.trim()));
      if (ports.length === 0 || ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) {
        throw badRequest('query parameter "ports" must list the ports to forward');
      }
      const connection = acceptWebSocket(req, socket, head, protocol);
      record.status = 101;
      this.counters.portForwardSessions++;
      serveWebSocketPortForward(connection, ports, target, resolve, hooks);
      return;
    }
    if ((req.headers.upgrade ?? '').toLowerCase() !== 'spdy/3.1') throw badRequest('unsupported upgrade protocol');
    const offered = (req.headersDistinct['x-stream-protocol-version'] ?? []).flatMap((v) =>
      v.split(',').map((p) => p.trim()),
    );
    if (!offered.includes('portforward.k8s.io')) {
      throw badRequest(
        `unable to upgrade: unable to negotiate protocol: client supports ${JSON.stringify(offered)}, server accepts ["portforward.k8s.io"]`,
      );
    }
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n',
    );
    record.status = 101;
    this.counters.portForwardSessions++;
    serveSpdyPortForward(socketTransport(socket, head), target, resolve, hooks);
  }
}

/**
 * Starts a simulated API server (an HTTPS server with its own CA) and
 * returns its handle. The simulation is for tests only; see the README next
 * to this file for what it does and does not do.
 */
export async function startSimApiServer(options: SimApiServerOptions = {}): Promise<SimApiServer> {
  const ca = options.ca
    ? await SimCertificateAuthority.load(options.ca.certPem, options.ca.keyPem)
    : await SimCertificateAuthority.generate();
  const host = options.host ?? '127.0.0.1';
  const serving = await ca.issueServing(
    [host, 'localhost', '127.0.0.1', '::1', ...(options.sans ?? [])],
    options.servingValidityDays,
  );
  const server = new SimApiServerImpl(options, ca, serving);
  await server.listen();
  return server;
}
