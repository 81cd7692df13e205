/** The facts `edgeadm version` reports. */
import { isSea } from 'node:sea';
import { buildInfo } from './build-info.js';

/** What `edgeadm version --json` prints. */
export interface VersionReport {
  version: string;
  commit: string;
  node: string;
  platform: NodeJS.Platform;
  arch: string;
  /** True when running as the single executable, not from a Node.js install. */
  singleBinary: boolean;
}

/** Collects the version report for this process. */
export function versionReport(): VersionReport {
  const { version, commit } = buildInfo();
  return {
    version,
    commit,
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    singleBinary: isSea(),
  };
}
