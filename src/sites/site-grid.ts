/**
 * The SiteGrid resource (`sitegrids.edgeadm.io`, `edgeadm.io/v1alpha1`):
 * one workload and Service declared once, copied to every selected site
 * with per-site overrides. Types, names and the labels that tie a copy to
 * its grid and site. Pure: no I/O.
 *
 * The API server checks the structure (the CRD's schema,
 * manifests/site-grid-crd.yaml); {@link copyName} is the one rule the schema
 * cannot state, since it joins two names.
 */
import type { KubeObject } from '../kube/client.js';
import { SITE_LABEL } from './site-label.js';

/** The API group and version of site grids. */
export const SITE_GRID_API_VERSION = 'edgeadm.io/v1alpha1';
/** The label every object of a grid carries, with the grid's name: the edge-proxy keys its filter on it. */
export const SITE_GRID_LABEL = 'edgeadm.io/site-grid';
/** The controller's service account (kube-system), and the prefix of its token Secret's name. */
export const SITE_GRID_CONTROLLER_ACCOUNT = 'edgeadm-site-grid-controller';
/** The field manager the controller applies as. */
export const SITE_GRID_FIELD_MANAGER = 'edgeadm-site-grid-controller';
/** The taint edge nodes carry (src/cluster/edge-settings.ts): copies tolerate it, being meant for them. */
export const EDGE_NODE_TAINT_KEY = 'edgeadm.io/edge';

/** A Kubernetes label selector (`matchLabels`, `matchExpressions`). */
export interface KubeLabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }>;
}

/** An environment variable (the value form only: per-site configuration). */
export interface EnvVar {
  name: string;
  value?: string;
  [key: string]: unknown;
}

/** A container, as far as overrides touch it. */
export interface Container {
  name: string;
  image?: string;
  env?: EnvVar[];
  resources?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A pod template, as far as the grid touches it. */
export interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: {
    containers: Container[];
    nodeSelector?: Record<string, string>;
    tolerations?: Array<Record<string, unknown>>;
    [key: string]: unknown;
  };
}

/** What a copy may change for a site, and which sites it is for. */
export interface SiteOverride {
  /** Sites by name. */
  sites?: string[];
  /** Sites by the labels all their nodes share. */
  siteSelector?: KubeLabelSelector;
  replicas?: number;
  /** The container whose image, env and resources change; every container when absent. */
  container?: string;
  image?: string;
  env?: EnvVar[];
  resources?: Record<string, unknown>;
}

/** A grid's spec. */
export interface SiteGridSpec {
  /** Which sites get a copy: by name and/or by label; every site when both are absent. */
  sites?: { names?: string[]; selector?: KubeLabelSelector };
  workload: { kind: 'Deployment' | 'StatefulSet'; replicas?: number; template: PodTemplate };
  service?: { type?: string; ports: Array<Record<string, unknown>> };
  overrides?: SiteOverride[];
}

/** One site's line of a grid's status. */
export interface SiteCopyStatus {
  site: string;
  /** `Ready`, `Progressing`, `Offline` (no Ready node: the copy is left as it is) or `Invalid`. */
  state: 'Ready' | 'Progressing' | 'Offline' | 'Invalid';
  readyNodes: number;
  nodes: number;
  replicas: number;
  readyReplicas: number;
  /** The copy's own status.observedGeneration. */
  observedGeneration?: number;
  message?: string;
}

/** A grid's status. */
export interface SiteGridStatus {
  observedGeneration?: number;
  sites: SiteCopyStatus[];
}

/** A SiteGrid object. */
export interface SiteGrid extends KubeObject {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    resourceVersion?: string;
    [key: string]: unknown;
  };
  spec: SiteGridSpec;
  status?: SiteGridStatus;
}

/** The name of a grid's copy (workload and Service) for a site. */
export function copyName(grid: string, site: string): string {
  return `${grid}-${site}`;
}

/**
 * Why `name` cannot name a copy's Service (a DNS-1035 label: a Service's
 * name must start with a letter), or undefined when it can.
 */
export function copyNameProblem(name: string): string | undefined {
  if (name.length > 63) return `${name} is longer than 63 characters (a Service name)`;
  if (!/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name)) return `${name} is not a DNS-1035 label (a Service name)`;
  return undefined;
}

/** The labels that tie an object to its grid and, for a copy, its site. */
export function copyLabels(grid: string, site?: string): Record<string, string> {
  return {
    'app.kubernetes.io/managed-by': 'edgeadm',
    [SITE_GRID_LABEL]: grid,
    ...(site === undefined ? {} : { [SITE_LABEL]: site }),
  };
}
