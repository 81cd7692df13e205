/**
 * Seeded generator of kubeconfig sets for the differential suite: one to
 * three files in KUBECONFIG (a missing one and a repeated one among them),
 * clusters, users and contexts whose names repeat across files,
 * current-context in some, relative and absolute certificate paths beside
 * `-data`, tokens and token files, insecure-skip-tls-verify, tls-server-name,
 * proxy-url, exec and auth-provider users, and `--context`. Cases are data,
 * rendered by {@link renderKubeconfigCase} and made smaller by
 * {@link shrinkKubeconfigCase}.
 */
import { seededRandom, type SeededRandom } from './seeded-random.js';

/** One named entry: its name as written (YAML text) and its fields as `key: value` YAML lines. */
export interface KubeEntry {
  name: string;
  fields: string[];
}

export interface KubeFileSpec {
  name: string;
  currentContext?: string;
  clusters: KubeEntry[];
  users: KubeEntry[];
  contexts: KubeEntry[];
}

export interface KubeconfigCase {
  seed: number;
  files: KubeFileSpec[];
  /** File names in KUBECONFIG order (one may be missing, one repeated). */
  order: string[];
  context?: string;
}

const CLUSTERS = ['c1', 'c2', 'prod'];
const USERS = ['u1', 'u2', 'admin'];
const CONTEXTS = ['ctx1', 'ctx2', 'dev'];
const b64 = (text: string): string => Buffer.from(text).toString('base64');

function clusterFields(random: SeededRandom): string[] {
  const fields = [`server: https://${random.pick(['h1', 'h2', '10.0.0.1'])}:6443`];
  const ca = random.int(0, 9);
  if (ca === 1) fields.push('certificate-authority: certs/ca1.pem');
  if (ca === 2) fields.push('certificate-authority: $DIR/kube/certs/ca2.pem');
  if (ca === 3) fields.push(`certificate-authority-data: ${b64('ca-inline\n')}`);
  if (ca === 4 && random.chance(0.3))
    fields.push('certificate-authority: certs/ca1.pem', `certificate-authority-data: ${b64('x')}`);
  if (ca === 5 && random.chance(0.3)) fields.push('certificate-authority: certs/missing.pem');
  if (ca === 6) fields.push('certificate-authority: ../kube/certs/ca2.pem');
  if (random.chance(0.2)) fields.push('insecure-skip-tls-verify: true');
  if (random.chance(0.15)) fields.push('tls-server-name: api.internal');
  if (random.chance(0.15)) fields.push('proxy-url: http://proxy:3128');
  if (random.chance(0.05)) fields.splice(0, 1);
  return fields;
}

function userFields(random: SeededRandom): string[] {
  const fields: string[] = [];
  if (random.chance(0.4)) fields.push(`token: ${random.pick(['abc', 'def.ghi'])}`);
  if (random.chance(0.2)) fields.push('tokenFile: tok');
  const client = random.int(0, 5);
  if (client === 1) fields.push('client-certificate: certs/client.crt', 'client-key: certs/client.key');
  if (client === 2)
    fields.push(`client-certificate-data: ${b64('cert-inline\n')}`, `client-key-data: ${b64('key-inline\n')}`);
  if (client === 3) fields.push('client-certificate: certs/client.crt', `client-key-data: ${b64('key-inline\n')}`);
  if (random.chance(0.1)) fields.push('exec: {command: get-token, apiVersion: client.authentication.k8s.io/v1beta1}');
  if (random.chance(0.05)) fields.push('auth-provider: {name: oidc}');
  return fields;
}

function contextFields(random: SeededRandom): string[] {
  const fields = [`cluster: ${random.pick(CLUSTERS)}`, `user: ${random.pick(USERS)}`];
  if (random.chance(0.4)) fields.push(`namespace: ${random.pick(['ns1', 'kube-system'])}`);
  if (random.chance(0.05)) fields.splice(random.int(0, 1), 1);
  return fields;
}

function entries(random: SeededRandom, names: string[], make: (random: SeededRandom) => string[]): KubeEntry[] {
  const chosen = names.filter(() => random.chance(0.75));
  // Rarely, what kubectl refuses: a name twice in one file, or a name that YAML 1.1 makes a boolean.
  if (chosen.length > 0 && random.chance(0.01)) chosen.push(chosen[0]!);
  if (random.chance(0.004)) chosen.push('y');
  return chosen.map((name) => ({ name, fields: make(random) }));
}

/** The case for `seed`. */
export function generateKubeconfigCase(seed: number): KubeconfigCase {
  const random = seededRandom(seed);
  const files = Array.from({ length: random.int(1, 3) }, (_, index): KubeFileSpec => {
    const file: KubeFileSpec = {
      name: ['a.yaml', 'b.yaml', 'c.yaml'][index]!,
      clusters: entries(random, CLUSTERS, clusterFields),
      users: entries(random, USERS, userFields),
      contexts: entries(random, CONTEXTS, contextFields),
    };
    if (random.chance(0.8)) file.currentContext = random.chance(0.05) ? 'missing' : random.pick(CONTEXTS);
    return file;
  });
  const order = files.map((file) => file.name);
  if (random.chance(0.1)) order.splice(random.int(0, order.length), 0, 'missing.yaml');
  if (random.chance(0.1)) order.push(order[0]!);
  const spec: KubeconfigCase = { seed, files, order };
  if (random.chance(0.3)) spec.context = random.chance(0.05) ? 'nope' : random.pick(CONTEXTS);
  return spec;
}

/** The files of a case under `dir` (kube/*.yaml and their certificates), by path relative to `dir`. */
export function renderKubeconfigCase(spec: KubeconfigCase, dir: string): Map<string, string> {
  const files = new Map<string, string>([
    ['kube/certs/ca1.pem', 'ca-one\n'],
    ['kube/certs/ca2.pem', 'ca-two\n'],
    ['kube/certs/client.crt', 'cert-file\n'],
    ['kube/certs/client.key', 'key-file\n'],
    ['kube/tok', 'token-from-file\n'],
  ]);
  const list = (key: string, field: string, items: KubeEntry[]): string[] =>
    items.length === 0
      ? []
      : [
          `${key}:`,
          ...items.flatMap((item) => [
            `- name: ${item.name}`,
            `  ${field}:${item.fields.length === 0 ? ' {}' : ''}`,
            ...item.fields.map((line) => `    ${line.replace('$DIR', dir)}`),
          ]),
        ];
  for (const file of spec.files) {
    const lines = [
      'apiVersion: v1',
      'kind: Config',
      ...(file.currentContext === undefined ? [] : [`current-context: ${file.currentContext}`]),
      ...list('clusters', 'cluster', file.clusters),
      ...list('users', 'user', file.users),
      ...list('contexts', 'context', file.contexts),
    ];
    files.set(`kube/${file.name}`, `${lines.join('\n')}\n`);
  }
  return files;
}

/** Cases one step smaller: a file, an entry, a field or the --context left out. */
export function shrinkKubeconfigCase(spec: KubeconfigCase): KubeconfigCase[] {
  const smaller: KubeconfigCase[] = [];
  const edit = (change: (next: KubeconfigCase) => void): void => {
    const next = structuredClone(spec);
    change(next);
    smaller.push(next);
  };
  if (spec.context !== undefined) edit((next) => delete next.context);
  spec.order.forEach((_, index) => spec.order.length > 1 && edit((next) => next.order.splice(index, 1)));
  spec.files.forEach((file, fileIndex) => {
    if (file.currentContext !== undefined) edit((next) => delete next.files[fileIndex]!.currentContext);
    for (const list of ['clusters', 'users', 'contexts'] as const) {
      file[list].forEach((entry, entryIndex) => {
        edit((next) => next.files[fileIndex]![list].splice(entryIndex, 1));
        entry.fields.forEach((_, fieldIndex) =>
          edit((next) => next.files[fileIndex]![list][entryIndex]!.fields.splice(fieldIndex, 1)),
        );
      });
    }
  });
  return smaller;
}
