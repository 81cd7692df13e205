/**
 * edgeadm's kubeconfig reading against kubectl's: each generated set of
 * kubeconfig files is read by `KUBECONFIG=… kubectl config view --minify
 * --raw --flatten [--context NAME] -o json` (the pinned kubectl) and by
 * edgeadm's resolveKubeconfigView, and the selected context, cluster and
 * user compared field by field. A case that differs is shrunk and printed.
 */
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { resolveKubeconfigView, type KubeconfigView } from '../../../src/kube/kubeconfig-view.js';
import {
  generateKubeconfigCase,
  renderKubeconfigCase,
  shrinkKubeconfigCase,
  type KubeconfigCase,
} from './kubeconfig-cases.js';

export type KubeOutcome = { kind: 'view'; view: unknown } | { kind: 'error'; message: string };

function kubectlView(kubectl: string, paths: string[], context: string | undefined, cwd: string): Promise<KubeOutcome> {
  const args = [
    'config',
    'view',
    '--minify',
    '--raw',
    '--flatten',
    '-o',
    'json',
    ...(context === undefined ? [] : ['--context', context]),
  ];
  return new Promise((resolve) => {
    execFile(
      kubectl,
      args,
      { cwd, env: { KUBECONFIG: paths.join(':'), HOME: cwd, PATH: process.env['PATH'] ?? '' }, timeout: 20_000 },
      (error, stdout, stderr) => {
        if (error !== null) resolve({ kind: 'error', message: stderr.trim() || error.message });
        else resolve({ kind: 'view', view: normalizeKubectl(JSON.parse(stdout) as KubectlConfig) });
      },
    );
  });
}

interface KubectlConfig {
  'current-context'?: string;
  clusters?: { name: string; cluster: Record<string, unknown> }[];
  users?: { name: string; user: Record<string, unknown> }[];
  contexts?: { name: string; context: Record<string, unknown> }[];
}

const decode = (value: unknown): string | undefined =>
  typeof value === 'string' ? Buffer.from(value, 'base64').toString('utf8') : undefined;

/** kubectl's minified view in the shape of {@link KubeconfigView}. */
function normalizeKubectl(config: KubectlConfig): unknown {
  const context = config.contexts?.[0];
  const cluster = config.clusters?.[0];
  const user = config.users?.[0];
  return clean({
    contextName: config['current-context'],
    namespace: context?.context['namespace'],
    cluster:
      cluster === undefined
        ? undefined
        : {
            name: cluster.name,
            server: cluster.cluster['server'],
            certificateAuthority: decode(cluster.cluster['certificate-authority-data']),
            isInsecureSkipTlsVerify: cluster.cluster['insecure-skip-tls-verify'] === true,
            tlsServerName: cluster.cluster['tls-server-name'],
            proxyUrl: cluster.cluster['proxy-url'],
          },
    user:
      user === undefined
        ? undefined
        : {
            name: user.name,
            token: user.user['token'],
            tokenFile: user.user['tokenFile'],
            clientCertificate: decode(user.user['client-certificate-data']),
            clientKey: decode(user.user['client-key-data']),
            hasExec: user.user['exec'] !== undefined,
            hasAuthProvider: user.user['auth-provider'] !== undefined,
          },
  });
}

function normalizeEdgeadm(view: KubeconfigView): unknown {
  const { user, ...rest } = view;
  if (user === undefined) return clean(rest);
  const { tokenFilePath: _path, ...shown } = user;
  return clean({ ...rest, user: shown });
}

/** Drops undefined and empty-string fields, so absent and empty compare alike. */
function clean(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, field]) => field !== undefined && field !== '')
      .map(([key, field]) => [key, clean(field)]),
  );
}

function edgeadmView(paths: string[], context: string | undefined): KubeOutcome {
  try {
    const files = paths.map((path) => {
      let text: string | undefined;
      try {
        text = readFileSync(path, 'utf8');
      } catch {
        text = undefined;
      }
      return { path, text };
    });
    const view = resolveKubeconfigView(files, { context, readFile: (path) => readFileSync(path, 'utf8') });
    return { kind: 'view', view: normalizeEdgeadm(view) };
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
}

export interface KubeFailure {
  seed: number;
  problem: string;
  files: Record<string, string>;
  order: string[];
  context: string | undefined;
}

export interface KubeDifferentialReport {
  cases: number;
  errors: number;
  failures: KubeFailure[];
}

/** Compares the cases of seeds first … first+cases-1 with `kubectl`. */
export async function runKubeconfigDifferential(options: {
  kubectl: string;
  first: number;
  cases: number;
  workDir: string;
  parallel?: number;
  maxShrunk?: number;
}): Promise<KubeDifferentialReport> {
  const report: KubeDifferentialReport = { cases: 0, errors: 0, failures: [] };
  let directory = 0;
  const evaluate = async (spec: KubeconfigCase, isCounted: boolean): Promise<string | undefined> => {
    const dir = join(options.workDir, `k${++directory}`);
    for (const [name, text] of renderKubeconfigCase(spec, dir)) {
      await mkdir(dirname(join(dir, name)), { recursive: true });
      await writeFile(join(dir, name), text);
    }
    const paths = spec.order.map((name) => join(dir, 'kube', name));
    const kubectl = await kubectlView(options.kubectl, paths, spec.context, options.workDir);
    const edgeadm = edgeadmView(paths, spec.context);
    if (isCounted && kubectl.kind === 'error') report.errors++;
    if (kubectl.kind === 'error') {
      return edgeadm.kind === 'error' ? undefined : `kubectl refused it (${kubectl.message}), edgeadm read it`;
    }
    if (edgeadm.kind === 'error') return `edgeadm refused it (${edgeadm.message}), kubectl read it`;
    const expected = JSON.stringify(kubectl.view);
    const actual = JSON.stringify(edgeadm.view);
    return expected === actual ? undefined : `kubectl ${expected}\n  edgeadm ${actual}`;
  };
  const seeds = Array.from({ length: options.cases }, (_, index) => options.first + index);
  const failing: { spec: KubeconfigCase; problem: string }[] = [];
  const worker = async (): Promise<void> => {
    for (let seed = seeds.shift(); seed !== undefined; seed = seeds.shift()) {
      const spec = generateKubeconfigCase(seed);
      const problem = await evaluate(spec, true);
      report.cases++;
      if (problem !== undefined) failing.push({ spec, problem });
    }
  };
  await Promise.all(Array.from({ length: options.parallel ?? 3 }, worker));
  failing.sort((a, b) => a.spec.seed - b.spec.seed);
  for (const [index, { spec, problem }] of failing.entries()) {
    let current = spec;
    let currentProblem = problem;
    if (index < (options.maxShrunk ?? 2)) {
      for (let round = 0; round < 60; round++) {
        let isSmaller = false;
        for (const candidate of shrinkKubeconfigCase(current)) {
          const found = await evaluate(candidate, false);
          if (found !== undefined) {
            current = candidate;
            currentProblem = found;
            isSmaller = true;
            break;
          }
        }
        if (!isSmaller) break;
      }
    }
    report.failures.push({
      seed: spec.seed,
      problem: currentProblem,
      files: Object.fromEntries([...renderKubeconfigCase(current, '$DIR')].filter(([name]) => name.endsWith('.yaml'))),
      order: current.order,
      context: current.context,
    });
  }
  return report;
}

/** A failure as printed. */
export function formatKubeFailure(failure: KubeFailure): string {
  const files = Object.entries(failure.files)
    .map(([name, text]) => `--- ${name}\n${text}`)
    .join('');
  const context = failure.context === undefined ? '' : ` --context ${failure.context}`;
  return `seed ${failure.seed} (KUBECONFIG=${failure.order.join(':')}${context}): ${failure.problem}\n${files}`;
}
