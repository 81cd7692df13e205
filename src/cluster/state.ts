/**
 * The install state: what edgeadm and the distribution wrote on a host, kept
 * at {@link STATE_FILE} so that `edgeadm reset` removes exactly that and
 * leaves the host's file tree as it was before.
 *
 * Every path is recorded before it is written, and the record is saved at
 * the end of each phase and before a service starts, so an install cut off
 * half way still leaves a record that reset can follow. The record functions
 * are pure; {@link StateRecorder} ties them to a host.
 */
import { EdgeadmError } from '../errors.js';
import { HostCommandError, type Host } from '../hosts/host.js';
import { quoteShellArg } from '../hosts/shell.js';
import type { ServiceManagerKind } from '../hosts/service-manager.js';

/** The directory of the state. */
export const STATE_DIR = '/var/lib/edgeadm/state';
/** The state file. */
export const STATE_FILE = `${STATE_DIR}/install.json`;
/** Format of the state file. */
export const STATE_FORMAT_VERSION = 1;

/** What the state file holds. */
export interface InstallState {
  formatVersion: typeof STATE_FORMAT_VERSION;
  role?: 'control-plane' | 'worker';
  distribution?: string;
  serviceManager?: ServiceManagerKind;
  /** Files written, removed by reset. */
  files: string[];
  /** Directories created (or owned outright by the distribution), removed with their content by reset. */
  directories: string[];
  /** Services started (unit names), stopped by reset. */
  services: string[];
  /** The id of the bootstrap token init created (the secret stays in the cluster). */
  bootstrapTokenId?: string;
  /** SHA-256 of the configuration the distribution's setup command (kubeadm init/join) completed with. */
  setupDoneWith?: string;
  /** SHA-256s of the airgap image archives imported into the container runtime. */
  importedImages?: string[];
}

/** A state with nothing recorded. */
export function emptyState(): InstallState {
  return { formatVersion: STATE_FORMAT_VERSION, files: [], directories: [], services: [] };
}

function withEntry(list: readonly string[], entry: string): string[] {
  return list.includes(entry) ? [...list] : [...list, entry];
}

/** The state with a file added (once). */
export function recordFile(state: InstallState, path: string): InstallState {
  return { ...state, files: withEntry(state.files, path) };
}

/** The state with a directory added (once). */
export function recordDirectory(state: InstallState, path: string): InstallState {
  return { ...state, directories: withEntry(state.directories, path) };
}

/** The state with a service added (once). */
export function recordService(state: InstallState, name: string): InstallState {
  return { ...state, services: withEntry(state.services, name) };
}

/** The directories from `/` down to `path`, outermost first: `/a/b` → `/a`, `/a/b`. */
export function pathChain(path: string): string[] {
  const parts = path.split('/').filter((part) => part !== '');
  return parts.map((_, index) => `/${parts.slice(0, index + 1).join('/')}`);
}

/**
 * Directories in the order reset removes them: deepest first, and none
 * inside another one that goes anyway.
 */
export function directoriesToRemove(directories: readonly string[]): string[] {
  const unique = [...new Set(directories)];
  const covered = (dir: string): boolean => unique.some((other) => other !== dir && dir.startsWith(`${other}/`));
  return unique.filter((dir) => !covered(dir)).sort((a, b) => b.split('/').length - a.split('/').length);
}

/** Parses a state file's text. */
export function parseState(text: string): InstallState {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new EdgeadmError(`the install state ${STATE_FILE} is not valid JSON`, {
      code: 'E_STATE_INVALID',
      cause: error,
      hints: ['Use reset --force to remove what the distribution is known to write anyway.'],
    });
  }
  const state = value as Partial<InstallState>;
  if (state.formatVersion !== STATE_FORMAT_VERSION) {
    throw new EdgeadmError(`the install state ${STATE_FILE} has an unknown format version`, {
      code: 'E_STATE_INVALID',
    });
  }
  return {
    ...emptyState(),
    ...state,
    files: [...(state.files ?? [])],
    directories: [...(state.directories ?? [])],
    services: [...(state.services ?? [])],
  };
}

/** Reads the state of a host; undefined when there is none. */
export async function loadState(host: Host): Promise<InstallState | undefined> {
  const result = await host.exec(`cat ${STATE_FILE}`, { sudo: true, readOnly: true });
  if (result.exitCode !== 0 || result.stdout.trim() === '') return undefined;
  return parseState(result.stdout);
}

/** Marks where the state file's text starts in the output of {@link StateRecorder.open}'s command. */
const STATE_TEXT_MARKER = '@@edgeadm-install-state';

/** Records into a host's state as a workflow goes. */
export class StateRecorder {
  #state: InstallState;
  #isDirty = false;
  /** Whether {@link STATE_DIR} is known to exist (or to be created by the next save). */
  #hasStateDir: boolean;
  /**
   * Directories known to exist on the host: seen by a check or created
   * through this recorder. They are not asked about again; a join asks
   * about /var, /var/lib and /etc from several phases.
   */
  readonly #knownDirs = new Set<string>();
  /**
   * Directories on the way to {@link STATE_DIR} that did not exist when the
   * state was loaded; undefined when that is not known (the first save asks).
   */
  readonly #stateDirsMissingAtOpen: string[] | undefined;
  readonly #host: Host;

  /**
   * `existingStateDirs`: which directories from `/` down to {@link STATE_DIR}
   * exist on the host, when known; without it the first save asks the host.
   */
  constructor(host: Host, state: InstallState, existingStateDirs?: readonly string[]) {
    this.#host = host;
    this.#state = state;
    if (existingStateDirs === undefined) {
      this.#stateDirsMissingAtOpen = undefined;
      this.#hasStateDir = false;
    } else {
      const existing = new Set(existingStateDirs);
      const chain = pathChain(STATE_DIR);
      for (const dir of chain) if (existing.has(dir)) this.#knownDirs.add(dir);
      this.#stateDirsMissingAtOpen = chain.filter((dir) => !existing.has(dir));
      this.#hasStateDir = existing.has(STATE_DIR);
    }
  }

  /**
   * Loads the host's state (or starts an empty one), and finds out in the
   * same command which directories on the way to the state file exist, so
   * that the first save needs no command of its own to ask.
   */
  static async open(host: Host): Promise<StateRecorder> {
    const chain = pathChain(STATE_DIR);
    const result = await host.exec(
      [
        `for p in ${chain.map(quoteShellArg).join(' ')}; do if [ -e "$p" ] || [ -L "$p" ]; then printf 'dir %s\\n' "$p"; fi; done`,
        `if [ -f ${STATE_FILE} ]; then echo ${STATE_TEXT_MARKER}; cat ${STATE_FILE}; fi`,
      ].join('\n'),
      { sudo: true, readOnly: true, description: `read the install state ${STATE_FILE}` },
    );
    if (result.exitCode !== 0) throw new HostCommandError(host.name, result, `read ${STATE_FILE}`);
    const markerAt = result.stdout.indexOf(`${STATE_TEXT_MARKER}\n`);
    const listing = markerAt < 0 ? result.stdout : result.stdout.slice(0, markerAt);
    const text = markerAt < 0 ? '' : result.stdout.slice(markerAt + STATE_TEXT_MARKER.length + 1);
    const existing = listing
      .split('\n')
      .filter((line) => line.startsWith('dir '))
      .map((line) => line.slice('dir '.length));
    const state = text.trim() === '' ? emptyState() : parseState(text);
    return new StateRecorder(host, state, existing);
  }

  get state(): InstallState {
    return this.#state;
  }

  update(change: (state: InstallState) => InstallState): void {
    const next = change(this.#state);
    if (JSON.stringify(next) !== JSON.stringify(this.#state)) {
      this.#state = next;
      this.#isDirty = true;
    }
  }

  file(path: string): void {
    this.update((state) => recordFile(state, path));
  }

  service(name: string): void {
    this.update((state) => recordService(state, name));
  }

  /**
   * Records a directory the distribution owns outright (removed with its
   * content by reset), and those of its parents that do not exist yet,
   * without creating anything: the distribution creates them.
   */
  async claimDirectory(path: string): Promise<void> {
    await this.prepareDirectories({ claim: [path] });
  }

  /**
   * Creates `path` with its parents, recording each directory that did not
   * exist, so reset removes exactly those.
   */
  async ensureDirectory(path: string): Promise<void> {
    await this.prepareDirectories({ ensure: [path] });
  }

  /**
   * {@link claimDirectory} for each of `claim` and {@link ensureDirectory}
   * for each of `ensure`, at the cost of one of them: one command asks which
   * of all their paths exist, one save records what did not, and one
   * `mkdir -p` creates the missing ones. A phase that needs five directories
   * asked, saved and created them one by one: up to fifteen round trips.
   * Everything is recorded before anything is created, as for each alone.
   * With `isCreatedByCaller`, the missing directories of `ensure` are
   * recorded and saved but not created: the caller's next command creates
   * them (`mkdir -p` in the same script, after this save), and they are
   * not taken as existing until asked again. Returns the directories of
   * `ensure` that were missing.
   */
  async prepareDirectories(options: {
    claim?: readonly string[];
    ensure?: readonly string[];
    isCreatedByCaller?: boolean;
  }): Promise<string[]> {
    const claim = options.claim ?? [];
    const ensure = options.ensure ?? [];
    const claimParents = claim.flatMap((path) =>
      pathChain(path)
        .slice(0, -1)
        .filter((dir) => !this.#state.directories.includes(dir)),
    );
    const ensured = [...new Set(ensure)];
    const ensureChains = ensured.map((path) => pathChain(path));
    const asked = [...new Set([...claimParents, ...ensureChains.flat()])];
    const existing = await this.#existing(asked);
    for (const dir of claimParents) if (!existing.has(dir)) this.update((state) => recordDirectory(state, dir));
    for (const path of claim) this.update((state) => recordDirectory(state, path));
    const toCreate: string[] = [];
    for (const [index, chain] of ensureChains.entries()) {
      const firstMissing = chain.findIndex((dir) => !existing.has(dir));
      if (firstMissing < 0) continue;
      for (const dir of chain.slice(firstMissing)) this.update((state) => recordDirectory(state, dir));
      toCreate.push(ensured[index]!);
    }
    if (toCreate.length === 0) return toCreate;
    await this.save();
    if (!options.isCreatedByCaller) {
      const result = await this.#host.exec(`mkdir -p ${toCreate.map(quoteShellArg).join(' ')}`, {
        sudo: true,
        description: `create ${toCreate.join(', ')}`,
      });
      if (result.exitCode !== 0) {
        throw new EdgeadmError(`cannot create ${toCreate.join(', ')} on ${this.#host.name}: ${result.stderr.trim()}`, {
          code: 'E_HOST_COMMAND_FAILED',
        });
      }
      for (const chain of ensureChains) for (const dir of chain) this.#knownDirs.add(dir);
    }
    return toCreate;
  }

  /**
   * Which of `paths` exist on the host (even as dangling links), in one
   * command: a join checks dozens of paths, and each command is a round
   * trip and a shell on the host. Directories already known to exist are
   * not asked about.
   */
  async #existing(paths: string[]): Promise<Set<string>> {
    const unknown = paths.filter((path) => !this.#knownDirs.has(path));
    const found = new Set(paths.filter((path) => this.#knownDirs.has(path)));
    if (unknown.length === 0) return found;
    const result = await this.#host.exec(
      `for p in ${unknown.map(quoteShellArg).join(' ')}; do if [ -e "$p" ] || [ -L "$p" ]; then printf '%s\\n' "$p"; fi; done`,
      { sudo: true, readOnly: true, description: `check ${unknown.join(', ')}` },
    );
    if (result.exitCode !== 0) throw new HostCommandError(this.#host.name, result, `check ${unknown.join(', ')}`);
    const listed = new Set(result.stdout.split('\n'));
    for (const path of unknown) {
      if (!listed.has(path)) continue;
      found.add(path);
      this.#knownDirs.add(path);
    }
    return found;
  }

  /**
   * Writes the state file when something changed since the last save: one
   * upload, which creates the state directory when needed. The directories
   * on its way that were missing when the state was loaded are recorded
   * first (unless the recorder created them since, and recorded them then).
   */
  async save(): Promise<void> {
    if (!this.#isDirty) return;
    let isCreatingStateDir = false;
    if (!this.#hasStateDir) {
      const chain = pathChain(STATE_DIR);
      let missing = this.#stateDirsMissingAtOpen;
      if (missing === undefined) {
        const existing = await this.#existing(chain);
        missing = chain.filter((dir) => !existing.has(dir));
      }
      for (const dir of missing) {
        if (!this.#knownDirs.has(dir)) this.#state = recordDirectory(this.#state, dir);
      }
      isCreatingStateDir = !this.#knownDirs.has(STATE_DIR);
      this.#hasStateDir = true;
    }
    this.#state = recordFile(this.#state, STATE_FILE);
    await this.#host.put(Buffer.from(`${JSON.stringify(this.#state, null, 2)}\n`), STATE_FILE, {
      mode: 0o600,
      sudo: true,
      description: `record what was installed in ${STATE_FILE}${isCreatingStateDir ? ` (creating ${STATE_DIR})` : ''}`,
    });
    for (const dir of pathChain(STATE_DIR)) this.#knownDirs.add(dir);
    this.#isDirty = false;
  }
}
