/**
 * The COMMANDS map: oclif's "explicit" command discovery, so that the whole
 * CLI can be bundled into one file for the single binary.
 */
import type { Command } from '@oclif/core';
import { notBuiltCommand } from './cli/not-built.js';
import { PLANNED_COMMANDS } from './cli/planned-commands.js';
import CertsCaHash from './commands/certs/ca-hash.js';
import HostCheck from './commands/host/check.js';
import JoinPhaseDiscovery from './commands/join/phase/discovery.js';
import PackageBuild from './commands/package/build.js';
import PackageInspect from './commands/package/inspect.js';
import PackageVerify from './commands/package/verify.js';
import TokenGenerate from './commands/token/generate.js';
import Version from './commands/version.js';

const BUILT_COMMANDS: Record<string, Command.Class> = {
  version: Version,
  'host:check': HostCheck,
  'package:build': PackageBuild,
  'package:verify': PackageVerify,
  'package:inspect': PackageInspect,
  'token:generate': TokenGenerate,
  'certs:ca-hash': CertsCaHash,
  'join:phase:discovery': JoinPhaseDiscovery,
};

/** Every command id (oclif's `topic:command` form) to its class. */
export const COMMANDS: Record<string, Command.Class> = {
  ...Object.fromEntries(Object.entries(PLANNED_COMMANDS).map(([id, planned]) => [id, notBuiltCommand(planned)])),
  ...BUILT_COMMANDS,
};
