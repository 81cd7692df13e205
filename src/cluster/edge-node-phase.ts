/**
 * join's edge phase (with --enable-edge), after node-join and before
 * wait-ready: installs the edge-proxy on the node and points the node's
 * kubelet at it, so the node keeps working while its site is offline.
 *
 * 1. The edge settings come from the cluster (`kube-system/edgeadm-edge`,
 *    written by `init --enable-edge`), read with the bootstrap token.
 * 2. The edgeadm binary reaches the node: from the install package
 *    (`bin/edgeadm`, installed with the package's other binaries), or, when
 *    the package has none, edgeadm uploads itself if it runs as the single
 *    binary. Neither: the join stops before anything reaches the host.
 * 3. The proxy's upstream is the node's own kubeconfig (the agent writes it
 *    when it starts): the node's path to the API server, its CA and its
 *    credentials. A node with a client certificate has it mapped
 *    (`--client-cert-map system:node:<name>=cert,key`).
 * 4. The unit is written and started through the service manager, and the
 *    phase waits for the proxy's /healthz.
 * 5. A kubelet kubeconfig pointing at https://127.0.0.1:10261 (trusting the
 *    proxy's own CA, with the node's credentials) is written, and the agent
 *    is reconfigured to use it (k3s: `kubelet-arg: kubeconfig=…` in its
 *    configuration; kubeadm: a kubelet drop-in of edgeadm's own, see
 *    renderKubeletEdgeDropIn) and restarted. node-join renders the same
 *    configuration and unit once that file exists, so a re-run changes
 *    nothing.
 * 6. k3s (a distribution with an `edgeSupervisor`): the agent's `server:`
 *    becomes the proxy too, which stands in for the supervisor while the
 *    server is unreachable (src/edge/k3s-supervisor.ts). The proxy then
 *    gets an upstream kubeconfig of its own naming the real server, serves
 *    with the node's kubelet serving certificate (signed by k3s's server CA
 *    for 127.0.0.1), and the kubelet trusts the server CA. Why that grants
 *    nothing new: src/edge/README.md, "The k3s supervisor".
 *
 * Everything is recorded in the install state first, so reset removes it.
 */
import { statSync } from 'node:fs';
import { isSea } from 'node:sea';
import { dirname, isAbsolute, join } from 'node:path/posix';
import { dump } from 'js-yaml';
import { uploadProgress } from './upload-progress.js';
import { DEFAULT_CACHE_DIR, DEFAULT_LISTEN, DEFAULT_METRICS_LISTEN } from '../edge/limits.js';
import { EdgeadmError, ValidationError } from '../errors.js';
import { KubeClient } from '../kube/client.js';
import { parseKubeconfig } from '../kube/kubeconfig.js';
import { formatBootstrapToken, type BootstrapToken } from '../trust/bootstrap-token.js';
import type { DiscoveryResult } from '../trust/discovery.js';
import type { Phase, PhaseOutcome } from '../workflow/phase.js';
import { readEdgeSettings, type EdgeSettings } from './edge-settings.js';
import { EDGE_PROXY_UNIT_NAME, renderEdgeProxyUnit, type EdgeProxyUnitInput } from './edge-proxy-unit.js';
import { SITE_LABEL } from '../sites/site-label.js';
import { readHostFile, waitForHostFiles } from './host-files.js';
import type { NodeData } from './node-context.js';
import type { EdgeSupervisor } from './distributions/distribution.js';
import { serviceFilesOf } from '../hosts/service-manager.js';

/** Where join writes the edge-proxy's files for the node. */
export const EDGE_PROXY_CONFIG_DIR = '/etc/edgeadm/edge-proxy';
/** The kubeconfig the node's kubelet uses: the edge-proxy, with the node's credentials. */
export const EDGE_KUBELET_KUBECONFIG = `${EDGE_PROXY_CONFIG_DIR}/kubelet.kubeconfig`;
/**
 * The edge-proxy's own upstream kubeconfig, for a node whose agent is pointed
 * at the proxy (k3s): the real server, the server CA and the node's
 * credentials. The agent's kubeconfig then names the proxy, so the proxy
 * cannot take its upstream from there (it would be its own).
 */
export const EDGE_PROXY_UPSTREAM_KUBECONFIG = `${EDGE_PROXY_CONFIG_DIR}/upstream.kubeconfig`;
/** The CA the edge-proxy makes for its serving certificate (in its cache directory). */
export const EDGE_PROXY_SERVING_CA = `${DEFAULT_CACHE_DIR}/pki/ca.crt`;
/** The edge-proxy's log (the unit passes --log-file). */
export const EDGE_PROXY_LOG_DIR = '/var/log/edgeadm';
export const EDGE_PROXY_LOG_FILE = `${EDGE_PROXY_LOG_DIR}/edge-proxy.log`;
/** What the kubelet talks to. */
export const EDGE_PROXY_URL = `https://${DEFAULT_LISTEN}`;
/** The edge-proxy's own health. */
export const EDGE_PROXY_HEALTHZ_URL = `http://${DEFAULT_METRICS_LISTEN}/healthz`;
/** How long join waits for the edge-proxy's /healthz. */
export const EDGE_PROXY_READY_TIMEOUT_MS = 60_000;
/** How often /healthz is asked. */
export const EDGE_PROXY_POLL_MS = 500;
/** One /healthz request's bound, in seconds (curl/wget on the node). */
export const EDGE_PROXY_PROBE_TIMEOUT_SECONDS = 2;

/** How the edgeadm binary reaches the node. */
export type EdgeadmBinary =
  /** The install package carries bin/edgeadm; the package phase installs it at `path`. */
  | { kind: 'package'; path: string }
  /** This process is the single binary: it is uploaded from `from` to `path`. */
  | { kind: 'upload'; from: string; path: string };

/**
 * Decides how the edgeadm binary reaches the node. Pure.
 *
 * @throws {ValidationError} `E_EDGE_NO_BINARY` when the package has no
 * bin/edgeadm and this edgeadm is not the single binary.
 */
export function resolveEdgeadmBinary(options: {
  packageName: string;
  packageFiles: readonly string[];
  binDir: string;
  isSingleBinary: boolean;
  execPath: string;
}): EdgeadmBinary {
  const path = `${options.binDir}/edgeadm`;
  if (options.packageFiles.includes('bin/edgeadm')) return { kind: 'package', path };
  if (options.isSingleBinary) return { kind: 'upload', from: options.execPath, path };
  throw new ValidationError(
    `--enable-edge needs the edgeadm binary on the node: the install package ${options.packageName} has no bin/edgeadm, and this edgeadm is not the single binary that could upload itself`,
    {
      code: 'E_EDGE_NO_BINARY',
      hints: [
        'Put the single binary (dist/edgeadm-linux-<arch>, "npm run build:binary") into the package as bin/edgeadm: edgeadm package build --from DIR.',
        'Or run join from the single binary: it uploads itself to the node.',
      ],
    },
  );
}

/** The binary this process would hand to resolveEdgeadmBinary. */
export function runningEdgeadm(): { isSingleBinary: boolean; execPath: string } {
  return { isSingleBinary: isSea(), execPath: process.execPath };
}

/** The edgeadm binary of a phase on this host: the package's bin/edgeadm, or this single binary (resolveEdgeadmBinary). */
export function packagedEdgeadm(ctx: {
  package: { manifest: { name: string; files: readonly { path: string }[] } };
  distribution: { binDir: string };
}): EdgeadmBinary {
  return resolveEdgeadmBinary({
    packageName: ctx.package.manifest.name,
    packageFiles: ctx.package.manifest.files.map((file) => file.path),
    binDir: ctx.distribution.binDir,
    ...runningEdgeadm(),
  });
}

/** Node's `process.arch` in Go's names, as host facts report the node's. */
function goArch(arch: string): string {
  return arch === 'x64' ? 'amd64' : arch;
}

/** What the edge phase needs of the join workflow. */
export interface EdgeNodeData extends NodeData {
  enableEdge: boolean;
  token: BootstrapToken;
  /** Decided before any phase runs (see resolveEdgeadmBinary). */
  edgeadmBinary?: EdgeadmBinary;
  /** Read from the cluster by the first phase that needs them. */
  edgeSettings?: EdgeSettings;
  /** The Node's labels: its `edgeadm.io/site` (join --site) is the site the edge-proxy keeps grid traffic in. */
  nodeLabels: Record<string, string>;
}

/** The cluster's edge settings, read once with the bootstrap token from the server discovery verified. */
export async function ensureEdgeSettings(ctx: EdgeNodeData, discovery: DiscoveryResult): Promise<EdgeSettings> {
  if (!ctx.edgeSettings) {
    const client = new KubeClient({
      server: discovery.server,
      caPem: discovery.caPem,
      token: formatBootstrapToken(ctx.token),
      contextName: 'bootstrap',
    });
    ctx.edgeSettings = await readEdgeSettings(client);
  }
  return ctx.edgeSettings;
}

/**
 * What an edge node's agent configuration adds: the edge label and taint,
 * and once the proxy runs, the kubelet through it and (k3s) the agent's
 * server: the proxy, which stands in for the supervisor offline.
 */
export async function edgeAgentConfig(
  ctx: EdgeNodeData,
  discovery: DiscoveryResult,
): Promise<{ nodeLabels: Record<string, string>; nodeTaints: string[]; kubeletKubeconfig?: string; server?: string }> {
  if (!ctx.enableEdge) return { nodeLabels: {}, nodeTaints: [] };
  const settings = await ensureEdgeSettings(ctx, discovery);
  const isProxyReady = await ctx.host.exists(EDGE_KUBELET_KUBECONFIG, { sudo: true });
  return {
    nodeLabels: settings.nodeLabels,
    nodeTaints: settings.nodeTaints,
    ...(isProxyReady ? { kubeletKubeconfig: EDGE_KUBELET_KUBECONFIG } : {}),
    ...(isProxyReady && ctx.distribution.edgeSupervisor ? { server: EDGE_PROXY_URL } : {}),
  };
}

/** The node's identity, from the kubeconfig its agent wrote. */
export interface NodeIdentity {
  /** The kubeconfig `user` entry, as written (file references kept: the agent rotates those files). */
  user: Record<string, unknown>;
  clientCertificate?: { certFile: string; keyFile: string };
}

/**
 * The user of the node kubeconfig's current context. Pure.
 *
 * @throws {EdgeadmError} `E_EDGE_NODE_CREDENTIALS` for an exec plugin or an
 * inline client certificate (the proxy maps certificates by file).
 */
export function nodeIdentityOf(kubeconfigText: string, kubeconfigPath: string): NodeIdentity {
  const document = parseKubeconfig(kubeconfigText, kubeconfigPath);
  const contextName =
    document['current-context'] ?? (document.contexts?.length === 1 ? document.contexts[0]!.name : '');
  const userName = document.contexts?.find((entry) => entry.name === contextName)?.context?.user;
  const user = { ...(document.users?.find((entry) => entry.name === userName)?.user ?? {}) };
  const fail = (why: string): EdgeadmError =>
    new EdgeadmError(`the node's kubeconfig ${kubeconfigPath} ${why}; the edge-proxy cannot act for it`, {
      code: 'E_EDGE_NODE_CREDENTIALS',
    });
  if (user.exec !== undefined || user['auth-provider'] !== undefined) throw fail('uses an authentication plugin');
  if (user['client-certificate-data'] !== undefined) throw fail('holds its client certificate inline, not in a file');
  const absolute = (file: string): string => (isAbsolute(file) ? file : join(dirname(kubeconfigPath), file));
  for (const key of ['client-certificate', 'client-key', 'tokenFile']) {
    if (typeof user[key] === 'string') user[key] = absolute(user[key]);
  }
  const certFile = user['client-certificate'];
  const keyFile = user['client-key'];
  if (typeof certFile === 'string' && typeof keyFile === 'string') {
    return { user, clientCertificate: { certFile, keyFile } };
  }
  if (user.token === undefined && user.tokenFile === undefined) throw fail('has no token and no client certificate');
  return { user };
}

/**
 * The kubelet's kubeconfig through the edge-proxy: its URL and the CA its
 * serving certificate chains to (the proxy's own, or for k3s the server
 * CA), the node's own user entry. Pure.
 */
export function renderEdgeKubeletKubeconfig(identity: NodeIdentity, caFile: string = EDGE_PROXY_SERVING_CA): string {
  const document = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'edge-proxy', cluster: { server: EDGE_PROXY_URL, 'certificate-authority': caFile } }],
    users: [{ name: 'node', user: identity.user }],
    contexts: [{ name: 'edge-proxy', context: { cluster: 'edge-proxy', user: 'node' } }],
    'current-context': 'edge-proxy',
  };
  return `# Written by edgeadm join --enable-edge: the kubelet reaches the API server through the edge-proxy.\n${dump(document, { lineWidth: -1 })}`;
}

/** The edge-proxy's upstream kubeconfig for a node whose agent points at the proxy: the real server. Pure. */
export function renderEdgeUpstreamKubeconfig(server: string, caFile: string, identity: NodeIdentity): string {
  const document = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'upstream', cluster: { server, 'certificate-authority': caFile } }],
    users: [{ name: 'node', user: identity.user }],
    contexts: [{ name: 'upstream', context: { cluster: 'upstream', user: 'node' } }],
    'current-context': 'upstream',
  };
  return `# Written by edgeadm join --enable-edge: the API server the edge-proxy forwards to.\n${dump(document, { lineWidth: -1 })}`;
}

/** Writes the edge-proxy's own upstream kubeconfig (k3s); true when it changed. */
async function writeSupervisorUpstream(
  ctx: NodeData,
  supervisor: EdgeSupervisor,
  server: string,
  identity: NodeIdentity,
): Promise<boolean> {
  const upstream = await ctx.host.put(
    Buffer.from(renderEdgeUpstreamKubeconfig(server, supervisor.serverCaPath, identity)),
    EDGE_PROXY_UPSTREAM_KUBECONFIG,
    { mode: 0o600, sudo: true, description: `write ${EDGE_PROXY_UPSTREAM_KUBECONFIG} (the edge-proxy's upstream)` },
  );
  return !upstream.skipped;
}

/** The unit's k3s supervisor part (k3s only) and the node's site (join --site), when there are. */
function supervisorUnitInput(
  supervisor: EdgeSupervisor | undefined,
  site: string | undefined,
): Pick<EdgeProxyUnitInput, 'k3sSupervisor' | 'site'> {
  const siteInput = site === undefined ? {} : { site };
  if (!supervisor) return siteInput;
  return {
    ...siteInput,
    k3sSupervisor: {
      servingCertFile: supervisor.servingCertPath,
      servingKeyFile: supervisor.servingKeyPath,
      agentClientCertificates: supervisor.agentClientCertificates,
    },
  };
}

async function waitForEdgeProxyHealthy(ctx: NodeData): Promise<void> {
  const url = EDGE_PROXY_HEALTHZ_URL;
  const seconds = EDGE_PROXY_PROBE_TIMEOUT_SECONDS;
  const probe = [
    `if command -v curl >/dev/null 2>&1; then curl -fsS --max-time ${seconds} ${url} >/dev/null`,
    `elif command -v wget >/dev/null 2>&1; then wget -q -T ${seconds} -O /dev/null ${url}`,
    'else exit 127; fi',
  ].join('\n');
  const deadline = Date.now() + EDGE_PROXY_READY_TIMEOUT_MS;
  const logHint = `Look at its log: ${EDGE_PROXY_LOG_FILE} (and journalctl -u ${EDGE_PROXY_UNIT_NAME}, or /var/lib/edgeadm/services without systemd).`;
  for (;;) {
    const result = await ctx.host.exec(probe, { readOnly: true, description: `ask ${url}` });
    if (result.exitCode === 0) return;
    if (result.exitCode === 127) {
      throw new EdgeadmError(`${ctx.host.name} has neither curl nor wget to ask the edge-proxy's ${url}`, {
        code: 'E_EDGE_PROXY_PROBE',
        hints: ['Install curl or wget (busybox wget will do) on the node and re-run join.'],
      });
    }
    if (Date.now() > deadline) {
      throw new EdgeadmError(
        `the edge-proxy on ${ctx.host.name} did not answer ${url} within ${EDGE_PROXY_READY_TIMEOUT_MS / 1000} s`,
        { code: 'E_EDGE_PROXY_NOT_HEALTHY', hints: [logHint] },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, EDGE_PROXY_POLL_MS));
  }
}

/** What the phase needs from the join workflow. */
export interface EdgeNodePhaseDeps<C> {
  nodeName(ctx: C): string;
  discovery(ctx: C): Promise<DiscoveryResult>;
  /** Renders the agent's configuration again (now with the kubelet through the proxy) and restarts it if it changed. */
  configureAgent(ctx: C): Promise<PhaseOutcome>;
}

/**
 * Uploads this edgeadm (the single binary) to the node, saying how far a
 * large upload is; true when it was not there already.
 *
 * @throws {ValidationError} `E_EDGE_BINARY_ARCH` when the node cannot run it.
 */
async function uploadThisEdgeadm(
  ctx: Pick<EdgeNodeData, 'host' | 'state' | 'say'> & { facts: { arch: string } },
  binary: { from: string; path: string },
): Promise<boolean> {
  const { host, state } = ctx;
  if (goArch(process.arch) !== ctx.facts.arch) {
    throw new ValidationError(
      `this edgeadm is built for ${goArch(process.arch)}, and ${host.name} is ${ctx.facts.arch}: it cannot run there`,
      {
        code: 'E_EDGE_BINARY_ARCH',
        hints: ["Put the edgeadm binary for the node's architecture into the install package as bin/edgeadm."],
      },
    );
  }
  state.file(binary.path);
  await state.save();
  const upload = await host.put(binary.from, binary.path, {
    mode: 0o755,
    sudo: true,
    description: `upload this edgeadm to ${binary.path}`,
    ...uploadProgress('edgeadm', statSync(binary.from).size, (line) => ctx.say(line)),
  });
  ctx.say(upload.skipped ? `${binary.path} already there` : `uploaded edgeadm to ${binary.path}`);
  return !upload.skipped;
}

/** Makes join's edge phase. */
export function edgeNodePhase<C extends EdgeNodeData>(deps: EdgeNodePhaseDeps<C>): Phase<C> {
  return {
    name: 'edge',
    summary: "With --enable-edge: install the edge-proxy on the node and point the node's kubelet at it",
    runIf: (ctx) => ctx.enableEdge,
    async run(ctx) {
      const { host, state, serviceManager, distribution } = ctx;
      const discovery = await deps.discovery(ctx);
      const settings = await ensureEdgeSettings(ctx, discovery);
      const binary = ctx.edgeadmBinary;
      if (!binary)
        throw new EdgeadmError('the edge phase ran without an edgeadm binary decided', { code: 'E_INTERNAL' });
      if (!ctx.facts) ctx.facts = await host.facts();
      const unitFiles = serviceManager.filesOf(EDGE_PROXY_UNIT_NAME);
      if (ctx.isDryRun) {
        ctx.say(
          binary.kind === 'package'
            ? `Would run the edge-proxy from ${binary.path} (bin/edgeadm of the install package)`
            : `Would upload this edgeadm (${binary.from}) to ${binary.path}`,
        );
        ctx.say(
          `Would write the unit ${unitFiles[0]} (upstream: ${distribution.nodeKubeconfigPath}, cache ${DEFAULT_CACHE_DIR})`,
        );
        ctx.say(`Would start ${EDGE_PROXY_UNIT_NAME} and wait for ${EDGE_PROXY_HEALTHZ_URL}`);
        ctx.say(`Would write ${EDGE_KUBELET_KUBECONFIG} (server ${EDGE_PROXY_URL}, the node's credentials)`);
        // Where the kubelet is sent: a file the edge unit adds (kubeadm's drop-in), else the agent's configuration (k3s).
        const plain = distribution.serviceUnit('worker');
        const edgeUnit = distribution.serviceUnit('worker', { kubeletKubeconfig: EDGE_KUBELET_KUBECONFIG });
        const known = new Set(serviceFilesOf(serviceManager, plain));
        const added = serviceFilesOf(serviceManager, edgeUnit).filter((file) => !known.has(file));
        const where = added.length > 0 ? added.join(', ') : distribution.configPath('worker');
        ctx.say(
          `Would point the ${distribution.name} node's kubelet at it (--kubeconfig ${EDGE_KUBELET_KUBECONFIG}, in ${where}) and restart ${edgeUnit.name}`,
        );
        return 'unchanged';
      }
      let isChanged = false;

      // The binary.
      if (binary.kind === 'upload' && (await uploadThisEdgeadm({ ...ctx, facts: ctx.facts }, binary))) isChanged = true;

      const supervisor = distribution.edgeSupervisor;
      // The node's credentials (and, k3s, its serving certificate), written by its agent.
      const agentFiles = supervisor
        ? [supervisor.servingCertPath, supervisor.servingKeyPath, supervisor.serverCaPath]
        : [];
      await waitForHostFiles(host, [distribution.nodeKubeconfigPath, ...agentFiles], {
        timeoutMs: EDGE_PROXY_READY_TIMEOUT_MS,
        what: `the ${distribution.name} agent`,
      });
      const identity = nodeIdentityOf(
        await readHostFile(host, distribution.nodeKubeconfigPath),
        distribution.nodeKubeconfigPath,
      );

      // Record everything before it is written.
      await state.claimDirectory(DEFAULT_CACHE_DIR);
      if (!(await host.exists(EDGE_PROXY_LOG_DIR, { sudo: true }))) await state.claimDirectory(EDGE_PROXY_LOG_DIR);
      state.file(EDGE_PROXY_LOG_FILE);
      await state.ensureDirectory(EDGE_PROXY_CONFIG_DIR);
      state.file(EDGE_KUBELET_KUBECONFIG);
      if (supervisor) state.file(EDGE_PROXY_UPSTREAM_KUBECONFIG);
      for (const file of unitFiles) {
        await state.ensureDirectory(dirname(file));
        state.file(file);
      }
      state.service(EDGE_PROXY_UNIT_NAME);
      await state.save();

      // k3s: the proxy's own upstream, since the agent's kubeconfig will name the proxy.
      if (supervisor && (await writeSupervisorUpstream(ctx, supervisor, discovery.server, identity))) isChanged = true;

      // The service.
      const unitInput: EdgeProxyUnitInput = {
        edgeadmBin: binary.path,
        upstreamKubeconfig: supervisor ? EDGE_PROXY_UPSTREAM_KUBECONFIG : distribution.nodeKubeconfigPath,
        cacheMaxBytes: settings.proxyCacheMaxBytes,
        cacheMaxEntries: settings.proxyCacheMaxEntries,
        ...(identity.clientCertificate
          ? {
              clientCertificate: {
                commonName: `system:node:${deps.nodeName(ctx)}`,
                ...identity.clientCertificate,
                caFile: distribution.nodeClientCaPath ?? distribution.caPath,
              },
            }
          : {}),
        ...supervisorUnitInput(supervisor, ctx.nodeLabels[SITE_LABEL]),
      };
      const unit = { name: EDGE_PROXY_UNIT_NAME, content: renderEdgeProxyUnit(unitInput) };
      const isUnitChanged = await serviceManager.install(host, unit);
      const outcome = await serviceManager.ensureRunning(host, unit, { isRestartNeeded: isUnitChanged });
      if (isUnitChanged || outcome !== 'already-running') isChanged = true;
      ctx.say(
        outcome === 'already-running'
          ? `${EDGE_PROXY_UNIT_NAME} already running`
          : `${EDGE_PROXY_UNIT_NAME} ${outcome}`,
      );
      await waitForEdgeProxyHealthy(ctx);
      ctx.say(`the edge-proxy answers ${EDGE_PROXY_HEALTHZ_URL}`);

      // The kubelet through the proxy.
      const kubeconfig = await host.put(
        Buffer.from(renderEdgeKubeletKubeconfig(identity, supervisor?.serverCaPath)),
        EDGE_KUBELET_KUBECONFIG,
        {
          mode: 0o600,
          sudo: true,
          description: `write ${EDGE_KUBELET_KUBECONFIG} (the kubelet through the edge-proxy)`,
        },
      );
      if (!kubeconfig.skipped) isChanged = true;
      if ((await deps.configureAgent(ctx)) === 'changed') isChanged = true;
      const through = supervisor
        ? 'agent reaches its server, and its kubelet the API server,'
        : "agent's kubelet reaches the API server";
      ctx.say(`the ${distribution.name} ${through} through ${EDGE_PROXY_URL}`);
      return isChanged ? 'changed' : 'unchanged';
    },
  };
}
