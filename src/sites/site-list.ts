/**
 * `edgeadm sites list`: the cluster's sites, read from its Nodes. A site is
 * the set of nodes labelled `edgeadm.io/site=NAME`; nothing else records it.
 * {@link summarizeSites} is pure; {@link listSites} reads the Nodes once.
 */
import { corePath, type KubeClient, type KubeObject } from '../kube/client.js';
import { SITE_LABEL } from './site-label.js';

/** A Node as far as sites need it. */
export interface SiteNodeObject extends KubeObject {
  status?: { conditions?: Array<{ type?: string; status?: string }> };
}

/** One node of a site. */
export interface SiteNode {
  name: string;
  isReady: boolean;
}

/** One site: its nodes, sorted by name. */
export interface Site {
  name: string;
  nodes: SiteNode[];
  readyNodes: number;
}

/** What `sites list` shows (and prints with `--json`). */
export interface SiteListing {
  sites: Site[];
  /** Nodes with no site label (the control plane, usually). */
  nodesWithoutSite: string[];
}

/** Whether a Node's Ready condition is True. */
export function isNodeReady(node: SiteNodeObject): boolean {
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
}

/** Groups Nodes by their site label. Pure. */
export function summarizeSites(nodes: readonly SiteNodeObject[]): SiteListing {
  const bySite = new Map<string, SiteNode[]>();
  const nodesWithoutSite: string[] = [];
  for (const node of nodes) {
    const name = node.metadata?.name;
    if (name === undefined) continue;
    const site = node.metadata?.labels?.[SITE_LABEL];
    if (site === undefined || site === '') {
      nodesWithoutSite.push(name);
      continue;
    }
    const members = bySite.get(site) ?? [];
    members.push({ name, isReady: isNodeReady(node) });
    bySite.set(site, members);
  }
  const sites = [...bySite]
    .map(([name, members]) => ({
      name,
      nodes: members.sort((a, b) => a.name.localeCompare(b.name)),
      readyNodes: members.filter((node) => node.isReady).length,
    }))
    .sort((a, b) => a.name.localeCompare(b.name));
  return { sites, nodesWithoutSite: nodesWithoutSite.sort() };
}

/** Reads the cluster's Nodes and groups them into sites. */
export async function listSites(client: KubeClient): Promise<SiteListing> {
  return summarizeSites(await client.list<SiteNodeObject>(corePath('nodes')));
}
