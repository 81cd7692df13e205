/**
 * Reading a Rollout file (`edgeadm hub rollout apply -f FILE`, and the
 * library's `rollouts.applyFile`): YAML or JSON, or `-` for stdin, with
 * manifests inline in `spec.resources` and/or referenced by
 * `spec.resourcesFrom`, which this module reads into `spec.resources`
 * before anything is sent. The hub only ever sees one self-contained
 * document; the result is checked with {@link parseRollout} here, so a bad
 * document fails before any network call, naming the field and, for a
 * resource read from a file, the file and document it came from.
 *
 * The syntax of a reference, relative to the Rollout file's directory
 * (the current directory for stdin):
 *
 * ```yaml
 * spec:
 *   resourcesFrom:
 *     - path: manifests/            # every *.yaml, *.yml and *.json in it, in name order
 *     - path: extra/crd.yaml        # one file; multi-document YAML and `kind: List` are expanded
 *     - path: addons/
 *       recursive: true             # subdirectories too (in name order, depth first)
 * ```
 *
 * Inline resources come first, then each reference in the order written.
 * A reference may not leave the Rollout file's directory, also not through
 * a symlink (what kustomize's default load restrictor refuses too): a Rollout
 * file from a shared repository cannot make `apply` read and ship, say, the
 * operator's hub config or an SSH key to every cluster.
 */
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { loadAll } from 'js-yaml';
import { ValidationError } from '../errors.js';
import { parseRollout, type RolloutSpec } from './spec.js';

/** Largest single file read (the Rollout file or one manifest file); 10 MiB Rollouts must fit with room. */
export const MAX_ROLLOUT_FILE_BYTES = 64 * 1024 * 1024;
/** Largest total of everything one Rollout reads. */
export const MAX_ROLLOUT_TOTAL_BYTES = 64 * 1024 * 1024;
/** Most manifest files one Rollout reads. */
export const MAX_ROLLOUT_MANIFEST_FILES = 10_000;
/** Deepest directory nesting a recursive reference walks. */
const MAX_DIRECTORY_DEPTH = 32;
/** File names a directory reference reads, as `kubectl apply -f DIR` does. */
const MANIFEST_EXTENSIONS = new Set(['.yaml', '.yml', '.json']);
/** What `-f` takes for stdin. */
export const STDIN_PATH = '-';

/** A Rollout document as sent to the hub: `metadata.name` names it, the hub checks the rest again. */
export interface RolloutDocument {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [key: string]: unknown };
  spec: Record<string, unknown>;
  [key: string]: unknown;
}

/** A Rollout read and checked, ready to send. */
export interface LoadedRollout {
  /** The document to send: `spec.resourcesFrom` read into `spec.resources`. */
  document: RolloutDocument;
  /** Its checked form. */
  spec: RolloutSpec;
  /** For each of `spec.resources`: `inline`, or the file (and document) it was read from. */
  origins: string[];
}

/** Where a Rollout comes from. */
export interface RolloutFileOptions {
  /** The file, or `-` for stdin. */
  path: string;
  /** Reads stdin (injected: the CLI passes process.stdin, tests a string). */
  readStdin?: () => Promise<string>;
  /** The directory relative paths start from; the process's by default. */
  cwd?: string;
}

function fileError(message: string, code = 'E_ROLLOUT_FILE', hints: string[] = []): ValidationError {
  return new ValidationError(message, {
    code,
    hints: [...hints, '"edgeadm hub rollout apply --help" shows a complete Rollout document.'],
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses YAML (or JSON) text into its documents, with the file and line in any error. */
function yamlDocuments(text: string, source: string): unknown[] {
  try {
    return loadAll(text);
  } catch (error) {
    const mark = (error as { mark?: { line: number; column: number } }).mark;
    const reason = (error as { reason?: string }).reason ?? (error as Error).message;
    const where = mark === undefined ? '' : ` at line ${mark.line + 1}, column ${mark.column + 1}`;
    throw fileError(`${source} is not valid YAML or JSON${where}: ${reason}`, 'E_ROLLOUT_YAML');
  }
}

/** Counts bytes across every file of one Rollout. */
class ReadBudget {
  #bytes = 0;
  #files = 0;

  take(size: number, source: string): void {
    this.#files += 1;
    this.#bytes += size;
    if (size > MAX_ROLLOUT_FILE_BYTES) {
      throw fileError(`${source} is larger than ${MAX_ROLLOUT_FILE_BYTES} bytes`, 'E_ROLLOUT_TOO_LARGE');
    }
    if (this.#bytes > MAX_ROLLOUT_TOTAL_BYTES) {
      throw fileError(`the Rollout's files hold more than ${MAX_ROLLOUT_TOTAL_BYTES} bytes`, 'E_ROLLOUT_TOO_LARGE');
    }
    if (this.#files > MAX_ROLLOUT_MANIFEST_FILES) {
      throw fileError(`the Rollout reads more than ${MAX_ROLLOUT_MANIFEST_FILES} files`, 'E_ROLLOUT_TOO_LARGE');
    }
  }
}

/** Reads stdin up to {@link MAX_ROLLOUT_FILE_BYTES}. */
export async function readBoundedStream(stream: AsyncIterable<Buffer | string>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buffer.length;
    if (size > MAX_ROLLOUT_FILE_BYTES) {
      throw fileError(`stdin holds more than ${MAX_ROLLOUT_FILE_BYTES} bytes`, 'E_ROLLOUT_TOO_LARGE');
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The manifests of one file: every non-empty document, `kind: List` expanded. */
function manifestsOf(text: string, source: string): Array<{ object: unknown; origin: string }> {
  const documents = yamlDocuments(text, source);
  const found: Array<{ object: unknown; origin: string }> = [];
  const isMulti = documents.length > 1;
  documents.forEach((document, index) => {
    if (document === null || document === undefined) return;
    const origin = isMulti ? `${source}, document ${index + 1}` : source;
    if (isRecord(document) && document['kind'] === 'List' && Array.isArray(document['items'])) {
      document['items'].forEach((item, itemIndex) =>
        found.push({ object: item, origin: `${origin}, item ${itemIndex}` }),
      );
    } else {
      found.push({ object: document, origin });
    }
  });
  return found;
}

/** Reads manifests referenced by `spec.resourcesFrom`, refusing anything outside `root`. */
class ManifestReader {
  readonly #visited = new Set<string>();

  constructor(
    private readonly root: string,
    private readonly budget: ReadBudget,
  ) {}

  /** The path as the operator reads it: relative to the root. */
  #display(path: string): string {
    return relative(this.root, path) || '.';
  }

  async #inside(path: string, field: string): Promise<string> {
    let real: string;
    try {
      real = await realpath(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      throw fileError(
        `${field}: ${this.#display(path)} cannot be read (${code === 'ENOENT' ? 'no such file or directory' : code})`,
      );
    }
    if (real !== this.root && !real.startsWith(this.root + sep)) {
      throw fileError(
        `${field}: ${this.#display(path)} leads outside the Rollout file's directory ${this.root}`,
        'E_ROLLOUT_FILE_OUTSIDE',
        ['Referenced manifests must lie under the directory of the Rollout file: copy them there.'],
      );
    }
    return real;
  }

  async #file(path: string): Promise<Array<{ object: unknown; origin: string }>> {
    const source = this.#display(path);
    const { size } = await stat(path);
    this.budget.take(size, source);
    return manifestsOf(await readFile(path, 'utf8'), source);
  }

  async #directory(
    path: string,
    field: string,
    isRecursive: boolean,
    depth: number,
  ): Promise<Array<{ object: unknown; origin: string }>> {
    const real = await this.#inside(path, field);
    // A symlink loop (a link to a parent) would walk forever; each real directory is read once.
    if (this.#visited.has(real)) return [];
    this.#visited.add(real);
    if (depth > MAX_DIRECTORY_DEPTH) {
      throw fileError(`${field}: ${this.#display(path)} is nested deeper than ${MAX_DIRECTORY_DEPTH} directories`);
    }
    // Name order by code point, not locale: the same files in the same order on every machine.
    const names = (await readdir(path)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const found: Array<{ object: unknown; origin: string }> = [];
    for (const name of names) {
      const entry = join(path, name);
      const real = await this.#inside(entry, field);
      const info = await stat(real);
      if (info.isDirectory()) {
        if (isRecursive) found.push(...(await this.#directory(entry, field, true, depth + 1)));
      } else if (info.isFile() && MANIFEST_EXTENSIONS.has(extname(name).toLowerCase())) {
        found.push(...(await this.#file(entry)));
      }
    }
    return found;
  }

  /** The manifests of one `resourcesFrom` entry. */
  async read(entry: unknown, field: string): Promise<Array<{ object: unknown; origin: string }>> {
    if (!isRecord(entry)) throw fileError(`Rollout ${field}: must be a mapping such as {path: manifests/}`);
    const { path, recursive } = entry;
    if (typeof path !== 'string' || path === '') throw fileError(`Rollout ${field}.path: must be a file or directory`);
    if (recursive !== undefined && typeof recursive !== 'boolean') {
      throw fileError(`Rollout ${field}.recursive: must be true or false`);
    }
    const unknown = Object.keys(entry).filter((key) => key !== 'path' && key !== 'recursive');
    if (unknown.length > 0) throw fileError(`Rollout ${field}: unknown field ${unknown.join(', ')}`);
    const full = isAbsolute(path) ? path : resolve(this.root, path);
    const real = await this.#inside(full, `Rollout ${field}.path`);
    const info = await lstat(real);
    if (info.isDirectory()) return this.#directory(full, `Rollout ${field}.path`, recursive === true, 0);
    if (!info.isFile()) throw fileError(`Rollout ${field}.path: ${path} is neither a file nor a directory`);
    return this.#file(full);
  }
}

/** Adds the file a resource came from to a parse error that names `spec.resources[N]`. */
function withOrigin(error: unknown, origins: readonly string[]): unknown {
  if (!(error instanceof ValidationError)) return error;
  const match = /^Rollout spec\.resources\[(\d+)\]/.exec(error.message);
  const origin = match ? origins[Number(match[1])] : undefined;
  if (origin === undefined || origin === 'inline') return error;
  return new ValidationError(`${error.message} (read from ${origin})`, {
    code: error.code,
    hints: error.hints,
    cause: error,
  });
}

/**
 * Reads `spec.resourcesFrom` of a document into `spec.resources` and checks
 * the result. `baseDir` is where relative references start and what they may
 * not leave.
 *
 * @throws {ValidationError} `E_ROLLOUT_INVALID` (a field), `E_ROLLOUT_FILE`,
 * `E_ROLLOUT_FILE_OUTSIDE`, `E_ROLLOUT_YAML`, `E_ROLLOUT_TOO_LARGE`.
 */
export async function resolveRolloutDocument(document: unknown, baseDir: string): Promise<LoadedRollout> {
  return resolveWithBudget(document, baseDir, new ReadBudget());
}

async function resolveWithBudget(document: unknown, baseDir: string, budget: ReadBudget): Promise<LoadedRollout> {
  // Checked by parseRollout first for the top fields, so an empty or wrong document says so.
  if (!isRecord(document) || !isRecord(document['spec']) || document['spec']['resourcesFrom'] === undefined) {
    const spec = parseRollout(document);
    const count = spec.resources.length;
    // parseRollout has checked apiVersion, kind, metadata.name and spec.
    return { document: document as RolloutDocument, spec, origins: new Array<string>(count).fill('inline') };
  }
  const { resourcesFrom, ...specRest } = document['spec'];
  const inline = specRest['resources'] ?? [];
  if (!Array.isArray(inline)) throw fileError('Rollout spec.resources: must be a list of Kubernetes objects');
  if (!Array.isArray(resourcesFrom)) {
    throw fileError('Rollout spec.resourcesFrom: must be a list such as [{path: manifests/}]');
  }
  let root: string;
  try {
    root = await realpath(baseDir);
  } catch {
    throw fileError(`the directory ${baseDir} of the Rollout cannot be read`);
  }
  const reader = new ManifestReader(root, budget);
  const resources: unknown[] = [...inline];
  const origins: string[] = inline.map(() => 'inline');
  for (const [index, entry] of resourcesFrom.entries()) {
    for (const { object, origin } of await reader.read(entry, `spec.resourcesFrom[${index}]`)) {
      resources.push(object);
      origins.push(origin);
    }
  }
  const resolved = { ...document, spec: { ...specRest, resources } };
  try {
    const spec = parseRollout(resolved);
    // parseRollout has checked apiVersion, kind, metadata.name and spec.
    return { document: resolved as unknown as RolloutDocument, spec, origins };
  } catch (error) {
    throw withOrigin(error, origins);
  }
}

/**
 * Reads a Rollout file (or stdin for `-`), its referenced manifests, and
 * checks it. Nothing goes over the network.
 *
 * @throws {ValidationError} as {@link resolveRolloutDocument}, and
 * `E_ROLLOUT_FILE` when the file cannot be read or holds other than one document.
 */
export async function readRolloutFile(options: RolloutFileOptions): Promise<LoadedRollout> {
  const cwd = options.cwd ?? process.cwd();
  const budget = new ReadBudget();
  let text: string;
  let source: string;
  let baseDir: string;
  if (options.path === STDIN_PATH) {
    if (options.readStdin === undefined) throw fileError('-f - reads stdin, and there is none here');
    text = await options.readStdin();
    budget.take(Buffer.byteLength(text), 'stdin');
    source = 'stdin';
    baseDir = cwd;
  } else {
    const path = resolve(cwd, options.path);
    source = options.path;
    try {
      const info = await stat(path);
      if (!info.isFile()) throw fileError(`${source} is not a file`);
      budget.take(info.size, source);
      text = await readFile(path, 'utf8');
    } catch (error) {
      if (error instanceof ValidationError) throw error;
      const code = (error as NodeJS.ErrnoException).code ?? '';
      throw fileError(
        `cannot read the Rollout file ${source}: ${code === 'ENOENT' ? 'no such file' : code || (error as Error).message}`,
      );
    }
    baseDir = dirname(path);
  }
  const documents = yamlDocuments(text, source).filter((document) => document !== null && document !== undefined);
  if (documents.length !== 1) {
    throw fileError(
      `${source} holds ${documents.length} documents; a Rollout file holds exactly one Rollout`,
      'E_ROLLOUT_FILE',
      documents.length > 1 ? ['Put the manifests in spec.resources, or in files that spec.resourcesFrom names.'] : [],
    );
  }
  return resolveWithBudget(documents[0], baseDir, budget);
}
