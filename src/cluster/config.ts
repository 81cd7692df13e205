/**
 * edgeadm's configuration files (`--config FILE`) for init and join, their
 * defaults (`edgeadm config print init-defaults | join-defaults`), and the
 * merge of a file with flags: a flag given on the command line wins over the
 * file, and the file over the defaults.
 */
import { dump, load } from 'js-yaml';
import { ValidationError } from '../errors.js';
import { DEFAULT_BOOTSTRAP_TOKEN_TTL_MS } from '../trust/bootstrap-token.js';
import { formatGoDuration } from '../trust/duration.js';
import { DEFAULT_DISTRIBUTION } from './distributions/index.js';

/** The apiVersion of edgeadm's configuration files. */
export const CONFIG_API_VERSION = 'edgeadm.io/v1alpha1';
/** k3s's default pod network. */
export const DEFAULT_POD_CIDR = '10.42.0.0/16';
/** k3s's default Service network. */
export const DEFAULT_SERVICE_CIDR = '10.43.0.0/16';

/** What `init` is told, from flags and the config file together. */
export interface InitSettings {
  distribution: string;
  installPackage?: string;
  nodeName?: string;
  nodeLabels: Record<string, string>;
  advertiseAddress?: string;
  certSans: string[];
  podCidr: string;
  serviceCidr: string;
  enableEdge: boolean;
  /** A bootstrap token to create (else one is generated). A secret. */
  token?: string;
  tokenTtl: string;
  /** Public keys (PEM files) allowed to sign the install package (`--trusted-key`). */
  trustedKeys?: string[];
}

/** What `join` is told. */
export interface JoinSettings {
  /** `host:port` of the API server. */
  endpoint?: string;
  token?: string;
  caCertHashes: string[];
  unsafeSkipCaVerification: boolean;
  discoveryTimeout: string;
  installPackage?: string;
  nodeName?: string;
  nodeLabels: Record<string, string>;
  enableEdge: boolean;
  /** Public keys (PEM files) allowed to sign the install package (`--trusted-key`). */
  trustedKeys?: string[];
}

/** The defaults `config print init-defaults` shows. */
export function initDefaults(): InitSettings {
  return {
    distribution: DEFAULT_DISTRIBUTION,
    nodeLabels: {},
    certSans: [],
    podCidr: DEFAULT_POD_CIDR,
    serviceCidr: DEFAULT_SERVICE_CIDR,
    enableEdge: false,
    tokenTtl: formatGoDuration(DEFAULT_BOOTSTRAP_TOKEN_TTL_MS),
  };
}

/** The defaults `config print join-defaults` shows. */
export function joinDefaults(): JoinSettings {
  return {
    caCertHashes: [],
    unsafeSkipCaVerification: false,
    discoveryTimeout: '5m0s',
    nodeLabels: {},
    enableEdge: false,
  };
}

/** A configuration document as YAML, with placeholders for what has no default. */
export function renderConfigDefaults(kind: 'init' | 'join'): string {
  const document =
    kind === 'init'
      ? {
          apiVersion: CONFIG_API_VERSION,
          kind: 'InitConfiguration',
          ...initDefaults(),
          installPackage: './edge-k3s-v1.30.4-amd64.tar.gz',
          advertiseAddress: '10.0.0.10',
        }
      : {
          apiVersion: CONFIG_API_VERSION,
          kind: 'JoinConfiguration',
          ...joinDefaults(),
          endpoint: '10.0.0.10:6443',
          token: 'abcdef.0123456789abcdef',
          caCertHashes: ['sha256:<hash printed by edgeadm init>'],
          installPackage: './edge-k3s-v1.30.4-amd64.tar.gz',
        };
  return dump(document, { lineWidth: -1 });
}

function parseDocument(text: string, kind: 'InitConfiguration' | 'JoinConfiguration', file: string): unknown {
  let document: unknown;
  try {
    document = load(text);
  } catch (error) {
    throw new ValidationError(`${file} is not valid YAML: ${(error as Error).message}`, { code: 'E_CONFIG_INVALID' });
  }
  const record = document as { apiVersion?: unknown; kind?: unknown } | null;
  if (!record || typeof record !== 'object' || record.kind !== kind || record.apiVersion !== CONFIG_API_VERSION) {
    throw new ValidationError(`${file} must be an ${CONFIG_API_VERSION} ${kind}`, {
      code: 'E_CONFIG_INVALID',
      hints: [`Start from: edgeadm config print ${kind === 'InitConfiguration' ? 'init' : 'join'}-defaults`],
    });
  }
  return document;
}

/** The type each field of a configuration file must have. */
type FieldType = 'string' | 'boolean' | 'strings' | 'labels';

const INIT_FIELDS: Record<keyof InitSettings, FieldType> = {
  distribution: 'string',
  installPackage: 'string',
  nodeName: 'string',
  nodeLabels: 'labels',
  advertiseAddress: 'string',
  certSans: 'strings',
  podCidr: 'string',
  serviceCidr: 'string',
  enableEdge: 'boolean',
  token: 'string',
  tokenTtl: 'string',
  trustedKeys: 'strings',
};

const JOIN_FIELDS: Record<keyof JoinSettings, FieldType> = {
  endpoint: 'string',
  token: 'string',
  caCertHashes: 'strings',
  unsafeSkipCaVerification: 'boolean',
  discoveryTimeout: 'string',
  installPackage: 'string',
  nodeName: 'string',
  nodeLabels: 'labels',
  enableEdge: 'boolean',
  trustedKeys: 'strings',
};

function hasType(value: unknown, type: FieldType): boolean {
  if (type === 'strings') return Array.isArray(value) && value.every((item) => typeof item === 'string');
  if (type === 'labels') {
    return (
      typeof value === 'object' &&
      value !== null &&
      !Array.isArray(value) &&
      Object.values(value).every((item) => typeof item === 'string')
    );
  }
  return typeof value === type;
}

const TYPE_WORDS: Record<FieldType, string> = {
  string: 'a string (quote it)',
  boolean: 'true or false',
  strings: 'a list of strings',
  labels: 'a map of label names to string values',
};

/**
 * Checks the type of every field a file sets, so that a number where a token
 * belongs fails as a config mistake rather than deep inside a workflow.
 * Fields edgeadm does not know are left alone.
 */
function checkFieldTypes(settings: Record<string, unknown>, fields: Record<string, FieldType>, file: string): void {
  for (const [key, type] of Object.entries(fields)) {
    const value = settings[key];
    if (value === undefined || value === null || hasType(value, type)) continue;
    throw new ValidationError(`${file}: ${key} must be ${TYPE_WORDS[type]}`, { code: 'E_CONFIG_INVALID' });
  }
}

function pick<T extends object>(defaults: T, fromFile: GivenFlags<T>, fromFlags: GivenFlags<T>): T {
  const out: Record<string, unknown> = { ...(defaults as Record<string, unknown>) };
  for (const source of [fromFile, fromFlags]) {
    // A key without a value (`nodeName:` in YAML, null) is not set.
    for (const [key, value] of Object.entries(source)) if (value !== undefined && value !== null) out[key] = value;
  }
  return out as T;
}

/** Settings from flags: each given or not (undefined). */
export type GivenFlags<T> = { [K in keyof T]?: T[K] | undefined };

/** Merges defaults, the config file's text (if any) and the flags given. */
export function resolveInitSettings(options: {
  configText?: string;
  configFile?: string;
  flags: GivenFlags<InitSettings>;
}): InitSettings {
  const file =
    options.configText === undefined
      ? {}
      : (parseDocument(
          options.configText,
          'InitConfiguration',
          options.configFile ?? '--config',
        ) as Partial<InitSettings>);
  const {
    apiVersion: _a,
    kind: _k,
    ...settings
  } = file as Partial<InitSettings> & { apiVersion?: string; kind?: string };
  checkFieldTypes(settings, INIT_FIELDS, options.configFile ?? '--config');
  return pick(initDefaults(), settings, options.flags);
}

/** Merges defaults, the config file's text (if any) and the flags given. */
export function resolveJoinSettings(options: {
  configText?: string;
  configFile?: string;
  flags: GivenFlags<JoinSettings>;
}): JoinSettings {
  const file =
    options.configText === undefined
      ? {}
      : (parseDocument(
          options.configText,
          'JoinConfiguration',
          options.configFile ?? '--config',
        ) as Partial<JoinSettings>);
  const {
    apiVersion: _a,
    kind: _k,
    ...settings
  } = file as Partial<JoinSettings> & { apiVersion?: string; kind?: string };
  checkFieldTypes(settings, JOIN_FIELDS, options.configFile ?? '--config');
  return pick(joinDefaults(), settings, options.flags);
}

/** Parses `--node-labels a=b,c=d`. */
export function parseNodeLabels(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined;
  const labels: Record<string, string> = {};
  for (const part of text.split(',').filter((p) => p.trim() !== '')) {
    const [key, ...rest] = part.split('=');
    if (!key || rest.length === 0) {
      throw new ValidationError(`--node-labels: ${JSON.stringify(part)} is not key=value`, { code: 'E_FLAG_INVALID' });
    }
    labels[key.trim()] = rest.join('=').trim();
  }
  return labels;
}
