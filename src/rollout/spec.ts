/**
 * The Rollout document (`edgeadm.io/v1alpha1`, `kind: Rollout`): one set of
 * Kubernetes objects placed onto many edge clusters, customized per cluster,
 * delivered in waves. This module owns its typed form and the one parser
 * that checks a document before anything is stored or applied, with errors
 * that name the field (`spec.strategy.waves[1].clusters`). Pure: no I/O.
 * Manifests read from files are turned into `spec.resources` by the caller.
 */
import { ValidationError } from '../errors.js';
import { parseLabelSelector, type LabelSelector } from '../kube/label-selector.js';

/** The API group and version of a Rollout document. */
export const ROLLOUT_API_VERSION = 'edgeadm.io/v1alpha1';
/** Longest rollout name: a DNS-1123 label, since it names objects' field manager and annotations. */
const MAX_ROLLOUT_NAME_LENGTH = 63;
/** Most objects in one rollout. */
export const MAX_ROLLOUT_RESOURCES = 5_000;
/** Most waves. */
const MAX_WAVES = 100;

/** A Kubernetes object in a rollout, loosely typed: it is checked for identity, not schema. */
export interface RolloutResource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [key: string]: unknown };
  [key: string]: unknown;
}

/** A count of clusters: absolute, or a percentage of the placed clusters. */
export type ClusterCount = { count: number } | { percent: number };

/** Which clusters a rollout reaches. Both given: clusters that match the selector and are named. */
export interface Placement {
  selector?: LabelSelector;
  /** The selector as written, for display and for scope checks. */
  selectorText?: string;
  clusters?: string[];
}

/** A JSON merge patch (RFC 7386) applied to the matching objects of the matching clusters. */
export interface CustomizationPatch {
  selector: LabelSelector;
  selectorText: string;
  target: { kind?: string; name?: string; namespace?: string };
  patch: Record<string, unknown>;
}

/** How each cluster's copy differs: `${…}` substitution in every string, and patches by selector. */
export interface Customization {
  patches: CustomizationPatch[];
}

/** How the copies are delivered. */
export interface Strategy {
  /** Cumulative wave sizes; the last wave always takes every remaining cluster. */
  waves: ClusterCount[];
  /** Most clusters of a wave that may be not ready (applying, failed, offline) at once. */
  maxUnavailable: ClusterCount;
  /** Failed clusters beyond which the rollout halts. */
  failureBudget: ClusterCount;
  /** How long a wave must stay ready before the next starts. */
  soakMs: number;
  /** How long a cluster has to become ready before it counts as failed. */
  deadlineMs: number;
  /**
   * What a failed gate (more failures than the budget) does: `halt` stops
   * and waits for the operator; `rollback` also applies the previous
   * revision's document again, as a new revision, so the clusters this one
   * updated return to what they ran.
   */
  onFailure: 'halt' | 'rollback';
}

/** A reduction over the copies' fields. */
export type SummaryReducer = 'count' | 'sum' | 'min' | 'max';

/** A declared summary: `min(.status.availableReplicas)` of Deployment web across clusters. */
export interface SummarySpec {
  name: string;
  reduce: SummaryReducer;
  /** A dotted path into the object (`.status.availableReplicas`); for `count`, objects where it is truthy. */
  field: string;
  kind?: string;
  objectName?: string;
}

/** A parsed, checked Rollout. */
export interface RolloutSpec {
  name: string;
  resources: RolloutResource[];
  placement: Placement;
  customization: Customization;
  strategy: Strategy;
  summaries: SummarySpec[];
}

/** Defaults of the strategy: one canary, then 10 %, then everything; a small budget; a short soak. */
export const DEFAULT_STRATEGY: Strategy = {
  waves: [{ count: 1 }, { percent: 10 }, { percent: 100 }],
  maxUnavailable: { percent: 10 },
  failureBudget: { count: 0 },
  soakMs: 30_000,
  deadlineMs: 10 * 60_000,
  onFailure: 'halt',
};

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUMMARY_FIELD = /^(\.[A-Za-z0-9_-]+)+$/;

function invalid(field: string, why: string): ValidationError {
  return new ValidationError(`Rollout ${field}: ${why}`, {
    code: 'E_ROLLOUT_INVALID',
    hints: ['"edgeadm hub rollout apply --help" shows a complete Rollout document.'],
  });
}

/**
 * The fields each mapping of a Rollout may have. A typo (`soakSecond`,
 * `clusterSelecter`) is refused naming the field and the expected names, as
 * the inventory reader does, instead of being dropped (the canary then had
 * no soak; issue #30). Kubernetes objects in `spec.resources` and the
 * `patch` of a customization are not checked: their schema is the
 * cluster's.
 */
const KNOWN_FIELDS = {
  document: ['apiVersion', 'kind', 'metadata', 'spec'],
  metadata: ['name', 'labels', 'annotations'],
  spec: ['resources', 'placement', 'customization', 'strategy', 'status'],
  placement: ['clusterSelector', 'clusters'],
  customization: ['patches'],
  patch: ['clusterSelector', 'target', 'patch'],
  target: ['kind', 'name', 'namespace'],
  strategy: ['waves', 'maxUnavailable', 'failureBudget', 'soakSeconds', 'deadlineSeconds', 'onFailure'],
  wave: ['clusters'],
  status: ['summaries'],
  summary: ['name', 'reduce', 'field', 'kind', 'objectName'],
} as const satisfies Record<string, readonly string[]>;

/** Options of {@link parseRollout}. */
export interface ParseRolloutOptions {
  /**
   * Refuse fields a Rollout does not have (the default: every document a
   * user sends). Off only for documents already stored, which a hub that
   * did not check them may have taken.
   */
  isStrict?: boolean;
}

/** Checks a mapping's fields against the names it may have (or, for stored documents, not at all). */
type FieldCheck = (record: Record<string, unknown>, field: string, known: readonly string[]) => void;

const ignoreFields: FieldCheck = () => undefined;

const refuseUnknownFields: FieldCheck = (record, field, known) => {
  for (const key of Object.keys(record)) {
    if (!known.includes(key)) {
      const at = field === 'document' ? key : `${field}.${key}`;
      throw invalid(at, `unknown field (expected one of: ${known.join(', ')})`);
    }
  }
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function requireRecord(value: unknown, field: string): Record<string, unknown> {
  if (!isRecord(value)) throw invalid(field, 'must be a mapping');
  return value;
}

function optionalString(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw invalid(field, 'must be a non-empty string');
  return value;
}

function selectorOf(text: unknown, field: string): { selector: LabelSelector; text: string } {
  if (typeof text !== 'string') throw invalid(field, 'must be a label selector string such as env=prod,region=eu');
  try {
    return { selector: parseLabelSelector(text), text };
  } catch (error) {
    throw invalid(field, (error as Error).message);
  }
}

/** Parses `3`, `"3"` or `"25%"`. */
export function parseClusterCount(value: unknown, field: string): ClusterCount {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return { count: value };
  if (typeof value === 'string') {
    const percent = /^(\d{1,3})%$/.exec(value);
    if (percent) {
      const n = Number(percent[1]);
      if (n > 100) throw invalid(field, 'a percentage is at most 100%');
      return { percent: n };
    }
    if (/^\d{1,9}$/.test(value)) return { count: Number(value) };
  }
  throw invalid(field, 'must be a whole number of clusters or a percentage such as "25%"');
}

/** Resolves a count against a total: percentages round up, so 1% of 10 clusters is 1. */
export function resolveClusterCount(count: ClusterCount, total: number): number {
  if ('count' in count) return Math.min(count.count, total);
  return Math.min(total, Math.ceil((count.percent * total) / 100));
}

function seconds(value: unknown, field: string, fallbackMs: number): number {
  if (value === undefined) return fallbackMs;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > 7 * 24 * 3600) {
    throw invalid(field, 'must be a whole number of seconds from 0 to 604800 (7 days)');
  }
  return value * 1000;
}

function parseResource(value: unknown, field: string): RolloutResource {
  const object = requireRecord(value, field);
  const { apiVersion, kind } = object;
  if (typeof apiVersion !== 'string' || apiVersion === '') throw invalid(`${field}.apiVersion`, 'is missing');
  if (typeof kind !== 'string' || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) throw invalid(`${field}.kind`, 'is not a kind');
  const metadata = requireRecord(object['metadata'], `${field}.metadata`);
  const name = metadata['name'];
  if (typeof name !== 'string' || name === '' || name.length > 253) {
    throw invalid(
      `${field}.metadata.name`,
      'is missing (generateName is not supported: each copy needs a stable name)',
    );
  }
  const namespace = metadata['namespace'];
  if (namespace !== undefined && (typeof namespace !== 'string' || !DNS_LABEL.test(namespace))) {
    throw invalid(`${field}.metadata.namespace`, 'is not a namespace name');
  }
  return object as RolloutResource;
}

/** The identity of an object in a rollout: two resources with one identity are one mistake. */
export function resourceKeyOf(resource: RolloutResource): string {
  const group = resource.apiVersion.includes('/') ? resource.apiVersion.split('/')[0] : '';
  return `${group}/${resource.kind}/${resource.metadata.namespace ?? ''}/${resource.metadata.name}`;
}

function parsePlacement(value: unknown, checkFields: FieldCheck): Placement {
  const placement = requireRecord(value, 'spec.placement');
  checkFields(placement, 'spec.placement', KNOWN_FIELDS.placement);
  const result: Placement = {};
  if (placement['clusterSelector'] !== undefined) {
    const { selector, text } = selectorOf(placement['clusterSelector'], 'spec.placement.clusterSelector');
    result.selector = selector;
    result.selectorText = text;
  }
  if (placement['clusters'] !== undefined) {
    const names = placement['clusters'];
    if (!Array.isArray(names) || names.some((n) => typeof n !== 'string' || !DNS_LABEL.test(n) || n.length > 63)) {
      throw invalid('spec.placement.clusters', 'must be a list of cluster names');
    }
    result.clusters = [...new Set(names as string[])];
  }
  if (result.selector === undefined && result.clusters === undefined) {
    throw invalid('spec.placement', 'needs clusterSelector, clusters or both (an empty clusterSelector "" takes all)');
  }
  return result;
}

function parseCustomization(value: unknown, checkFields: FieldCheck): Customization {
  if (value === undefined) return { patches: [] };
  const customization = requireRecord(value, 'spec.customization');
  checkFields(customization, 'spec.customization', KNOWN_FIELDS.customization);
  const patches = customization['patches'] ?? [];
  if (!Array.isArray(patches)) throw invalid('spec.customization.patches', 'must be a list');
  return {
    patches: patches.map((raw, index) => {
      const field = `spec.customization.patches[${index}]`;
      const entry = requireRecord(raw, field);
      checkFields(entry, field, KNOWN_FIELDS.patch);
      const { selector, text } = selectorOf(entry['clusterSelector'] ?? '', `${field}.clusterSelector`);
      const target = entry['target'] === undefined ? {} : requireRecord(entry['target'], `${field}.target`);
      checkFields(target, `${field}.target`, KNOWN_FIELDS.target);
      const kind = optionalString(target['kind'], `${field}.target.kind`);
      const name = optionalString(target['name'], `${field}.target.name`);
      const namespace = optionalString(target['namespace'], `${field}.target.namespace`);
      return {
        selector,
        selectorText: text,
        target: { ...(kind && { kind }), ...(name && { name }), ...(namespace && { namespace }) },
        patch: requireRecord(entry['patch'], `${field}.patch`),
      };
    }),
  };
}

function parseStrategy(value: unknown, checkFields: FieldCheck): Strategy {
  if (value === undefined) return DEFAULT_STRATEGY;
  const strategy = requireRecord(value, 'spec.strategy');
  checkFields(strategy, 'spec.strategy', KNOWN_FIELDS.strategy);
  let waves = DEFAULT_STRATEGY.waves;
  if (strategy['waves'] !== undefined) {
    const raw = strategy['waves'];
    if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_WAVES) {
      throw invalid('spec.strategy.waves', `must be a list of 1 to ${MAX_WAVES} waves`);
    }
    waves = raw.map((wave, index) => {
      if (isRecord(wave)) checkFields(wave, `spec.strategy.waves[${index}]`, KNOWN_FIELDS.wave);
      return parseClusterCount(
        isRecord(wave) ? wave['clusters'] : wave,
        `spec.strategy.waves[${index}]${isRecord(wave) ? '.clusters' : ''}`,
      );
    });
  }
  return {
    waves,
    maxUnavailable:
      strategy['maxUnavailable'] === undefined
        ? DEFAULT_STRATEGY.maxUnavailable
        : parseClusterCount(strategy['maxUnavailable'], 'spec.strategy.maxUnavailable'),
    failureBudget:
      strategy['failureBudget'] === undefined
        ? DEFAULT_STRATEGY.failureBudget
        : parseClusterCount(strategy['failureBudget'], 'spec.strategy.failureBudget'),
    soakMs: seconds(strategy['soakSeconds'], 'spec.strategy.soakSeconds', DEFAULT_STRATEGY.soakMs),
    deadlineMs: seconds(strategy['deadlineSeconds'], 'spec.strategy.deadlineSeconds', DEFAULT_STRATEGY.deadlineMs),
    onFailure: onFailureOf(strategy['onFailure']),
  };
}

function onFailureOf(value: unknown): Strategy['onFailure'] {
  if (value === undefined) return DEFAULT_STRATEGY.onFailure;
  if (value !== 'halt' && value !== 'rollback') throw invalid('spec.strategy.onFailure', 'must be halt or rollback');
  return value;
}

function parseSummaries(value: unknown, checkFields: FieldCheck): SummarySpec[] {
  if (value === undefined) return [];
  const status = requireRecord(value, 'spec.status');
  checkFields(status, 'spec.status', KNOWN_FIELDS.status);
  const summaries = status['summaries'] ?? [];
  if (!Array.isArray(summaries)) throw invalid('spec.status.summaries', 'must be a list');
  const names = new Set<string>();
  return summaries.map((raw, index) => {
    const field = `spec.status.summaries[${index}]`;
    const entry = requireRecord(raw, field);
    checkFields(entry, field, KNOWN_FIELDS.summary);
    const name = optionalString(entry['name'], `${field}.name`);
    if (name === undefined) throw invalid(`${field}.name`, 'is missing');
    if (names.has(name)) throw invalid(`${field}.name`, `"${name}" is declared twice`);
    names.add(name);
    const reduce = entry['reduce'];
    if (reduce !== 'count' && reduce !== 'sum' && reduce !== 'min' && reduce !== 'max') {
      throw invalid(`${field}.reduce`, 'must be count, sum, min or max');
    }
    const path = entry['field'];
    if (typeof path !== 'string' || !SUMMARY_FIELD.test(path)) {
      throw invalid(`${field}.field`, 'must be a dotted path such as .status.availableReplicas');
    }
    const kind = optionalString(entry['kind'], `${field}.kind`);
    const objectName = optionalString(entry['objectName'], `${field}.objectName`);
    return { name, reduce, field: path, ...(kind && { kind }), ...(objectName && { objectName }) };
  });
}

/**
 * Parses and checks a Rollout document (already read from YAML or JSON).
 * Unknown fields are refused unless `options.isStrict` is false.
 *
 * @throws {ValidationError} `E_ROLLOUT_INVALID`, naming the field.
 */
export function parseRollout(document: unknown, options: ParseRolloutOptions = {}): RolloutSpec {
  const checkFields = options.isStrict === false ? ignoreFields : refuseUnknownFields;
  const top = requireRecord(document, 'document');
  checkFields(top, 'document', KNOWN_FIELDS.document);
  if (top['apiVersion'] !== ROLLOUT_API_VERSION) throw invalid('apiVersion', `must be ${ROLLOUT_API_VERSION}`);
  if (top['kind'] !== 'Rollout') throw invalid('kind', 'must be Rollout');
  const metadata = requireRecord(top['metadata'], 'metadata');
  checkFields(metadata, 'metadata', KNOWN_FIELDS.metadata);
  const name = metadata['name'];
  if (typeof name !== 'string' || name.length > MAX_ROLLOUT_NAME_LENGTH || !DNS_LABEL.test(name)) {
    throw invalid('metadata.name', 'must be a DNS-1123 label (lowercase letters, digits and "-", at most 63)');
  }
  const spec = requireRecord(top['spec'], 'spec');
  checkFields(spec, 'spec', KNOWN_FIELDS.spec);
  const rawResources = spec['resources'];
  if (!Array.isArray(rawResources) || rawResources.length === 0) {
    throw invalid('spec.resources', 'must list at least one Kubernetes object');
  }
  if (rawResources.length > MAX_ROLLOUT_RESOURCES) {
    throw invalid('spec.resources', `holds more than ${MAX_ROLLOUT_RESOURCES} objects`);
  }
  const resources = rawResources.map((raw, index) => parseResource(raw, `spec.resources[${index}]`));
  const seen = new Map<string, number>();
  resources.forEach((resource, index) => {
    const key = resourceKeyOf(resource);
    const first = seen.get(key);
    if (first !== undefined) {
      throw invalid(`spec.resources[${index}]`, `is the same object as spec.resources[${first}] (${key})`);
    }
    seen.set(key, index);
  });
  return {
    name,
    resources,
    placement: parsePlacement(spec['placement'], checkFields),
    customization: parseCustomization(spec['customization'], checkFields),
    strategy: parseStrategy(spec['strategy'], checkFields),
    summaries: parseSummaries(spec['status'], checkFields),
  };
}
