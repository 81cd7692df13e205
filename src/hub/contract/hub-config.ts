/**
 * The hub client configuration: where the hub is, the CA that vouches for
 * it, and the bearer token of one hub user. `hub serve` writes the admin's
 * (`<data-dir>/admin.yaml`), `hub user create` writes one per user, and every
 * hub client command reads one from `--hub-config`, `$EDGEADM_HUB_CONFIG` or
 * `~/.edgeadm/hub.yaml`, in that order.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { EdgeadmError, ValidationError } from '../../errors.js';
import { edgeadmHome } from '../../log/run-log.js';
import { writeSecretFileAtomic } from '../../trust/secret-file.js';

/** The document's apiVersion. */
export const HUB_CONFIG_API_VERSION = 'edgeadm.io/v1alpha1';
/** The document's kind. */
export const HUB_CONFIG_KIND = 'HubConfig';
/** The environment variable naming a hub config file. */
export const HUB_CONFIG_ENV = 'EDGEADM_HUB_CONFIG';
/** The default file name under the edgeadm home. */
export const DEFAULT_HUB_CONFIG_FILE = 'hub.yaml';

/** A hub client configuration. `token` is a credential. */
export interface HubConfig {
  /** `https://host:port`. */
  server: string;
  caPem: string;
  /** The hub user this config authenticates as. */
  user: string;
  token: string;
}

/** Renders a hub config as YAML. */
export function renderHubConfig(config: HubConfig): string {
  return dump({
    apiVersion: HUB_CONFIG_API_VERSION,
    kind: HUB_CONFIG_KIND,
    server: config.server,
    'certificate-authority-data': Buffer.from(config.caPem, 'utf8').toString('base64'),
    user: config.user,
    token: config.token,
  });
}

/** Writes a hub config, mode 0600, atomically. */
export function writeHubConfig(path: string, config: HubConfig): void {
  writeSecretFileAtomic(path, renderHubConfig(config));
}

/**
 * Parses a hub config.
 *
 * @throws {ValidationError} `E_HUB_CONFIG_INVALID`.
 */
export function parseHubConfig(text: string, source: string): HubConfig {
  const invalid = (why: string): ValidationError =>
    new ValidationError(`the hub config ${source} is invalid: ${why}`, {
      code: 'E_HUB_CONFIG_INVALID',
      hints: ['Use the admin.yaml that "edgeadm hub serve" wrote, or a file from "edgeadm hub user create --output".'],
    });
  let document: unknown;
  try {
    document = load(text);
  } catch (error) {
    throw invalid((error as Error).message);
  }
  if (document === null || typeof document !== 'object') throw invalid('it is not a YAML mapping');
  const doc = document as Record<string, unknown>;
  if (doc.kind !== HUB_CONFIG_KIND) throw invalid(`kind is not ${HUB_CONFIG_KIND}`);
  const { server, user, token } = doc;
  const caData = doc['certificate-authority-data'];
  if (typeof server !== 'string' || !/^https:\/\/[^/]+$/.test(server)) throw invalid('server is not https://host:port');
  if (typeof caData !== 'string' || caData === '') throw invalid('certificate-authority-data is missing');
  if (typeof token !== 'string' || token === '') throw invalid('token is missing');
  return {
    server,
    caPem: Buffer.from(caData, 'base64').toString('utf8'),
    user: typeof user === 'string' ? user : '',
    token,
  };
}

/** Which file a hub client command reads: the flag, the environment, then the default. */
export function resolveHubConfigPath(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag !== undefined && flag !== '') return flag;
  const fromEnv = env[HUB_CONFIG_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return join(edgeadmHome(env), DEFAULT_HUB_CONFIG_FILE);
}

/**
 * Reads the hub config a command should use.
 *
 * @throws {EdgeadmError} `E_HUB_CONFIG_MISSING` (exit 3) or `E_HUB_CONFIG_INVALID`.
 */
export function loadHubConfig(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): HubConfig {
  const path = resolveHubConfigPath(flag, env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new EdgeadmError(`cannot read the hub config ${path}: ${(error as NodeJS.ErrnoException).code ?? ''}`, {
      code: 'E_HUB_CONFIG_MISSING',
      exitCode: 3,
      cause: error,
      hints: [
        `Pass --hub-config FILE, set ${HUB_CONFIG_ENV}, or copy the hub's admin.yaml (or your user's file) to ${path}.`,
      ],
    });
  }
  return parseHubConfig(text, path);
}
