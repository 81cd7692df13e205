/**
 * The resolved inventory every fleet command works on: a flat, ordered list
 * of hosts with their SSH settings, role, groups and labels, whatever file
 * format they were written in.
 */

/** The role a host plays in the cluster. */
export type FleetRole = 'control-plane' | 'worker';

/** How edgeadm reaches one host; unset fields fall back to the command's SSH flags. */
export interface FleetSshSettings {
  user?: string;
  port?: number;
  /** Private key file. */
  keyFile?: string;
  /** Bastions in order, `user@host[:port]` each. */
  jumps?: string[];
  /** Run privileged commands through sudo (a non-root login). */
  become?: boolean;
}

/** One host of the inventory, fully resolved. */
export interface FleetHost {
  /** The inventory name (unique), used in reports, `--limit` and the run state. */
  name: string;
  /** Address or DNS name to connect to. */
  address: string;
  ssh: FleetSshSettings;
  role: FleetRole;
  /** Every group the host is in, ancestors included (not `all`). */
  groups: string[];
  labels: Record<string, string>;
  /** Whether the host is an edge node. */
  isEdge: boolean;
  /** Install package path, when the inventory names one. */
  packagePath?: string;
}

/** The inventory formats edgeadm reads. */
export type InventoryFormat = 'edgeadm' | 'ansible';

/** Where a setting is written in an inventory (or where it belongs, when it is missing). */
export interface InventoryLocation {
  file: string;
  line?: number;
  /** The field's path, dot-joined (`controlPlane.endpoint`, `all.children.control_plane.vars`). */
  field: string;
}

/** A parsed inventory. */
export interface FleetInventory {
  /** The file it came from (as given). */
  file: string;
  format: InventoryFormat;
  /** Hosts in file order, control-plane hosts first. */
  hosts: FleetHost[];
  /**
   * The control planes' shared address (`host` or `host:port`, no scheme):
   * `controlPlane.endpoint` in edgeadm's format, `control_plane_endpoint` in
   * Ansible's. Nodes and joining control planes reach the cluster there.
   */
  controlPlaneEndpoint?: string;
  /** Where the endpoint is written, or where it belongs when it is not (errors name it). */
  controlPlaneEndpointLocation: InventoryLocation;
  /** Non-fatal remarks (an unsupported Ansible variable, say), with their lines. */
  warnings: string[];
  /**
   * Public key files every install package of the run must be signed by
   * (`trustedKeys` at the top of edgeadm's format): an inventory per
   * environment pins that environment's keys. `--trusted-key` replaces them.
   */
  trustedKeys?: string[];
}
