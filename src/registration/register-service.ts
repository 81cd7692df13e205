/**
 * `register-cloud` without `--foreground`: register the cluster (or keep
 * the registration the host already has) and install the agent as a
 * service on the host (this machine, or `--host` over SSH).
 *
 * The registration is made here and staged under
 * `$EDGEADM_HOME/register-cloud/<cluster>` (0700): the private key is made
 * on this machine and travels to the host over SSH only. The stage is
 * removed once the host has it; after a failed install it is kept, so a
 * re-run installs the same registration instead of asking the hub again.
 * A re-run against a host that already has the agent reads the host's
 * registration back and changes nothing.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  requestedServiceManager,
  selectServiceManager,
  type ServiceManager,
  type StartOutcome,
} from '../hosts/service-manager.js';
import { EdgeadmError } from '../errors.js';
import type { Host } from '../hosts/host.js';
import { edgeadmHome, type Logger } from '../log/run-log.js';
import { checkServiceDataDir, installAgentService } from './agent-install.js';
import type { RegisterRequest } from './register-request.js';
import { existingRegistration, register } from './registration.js';

/** What {@link registerAsService} installs with, beside the request. */
export interface RegisterAsServiceOptions {
  host: Host;
  /** The data directory on the host. */
  dataDir: string;
  /** The local edgeadm binary to install on the host. */
  binary: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

/** What {@link registerAsService} did. */
export interface RegisterAsServiceResult {
  hubServer: string;
  wasRegistered: boolean;
  host: string;
  changed: string[];
  service: StartOutcome;
}

/** The files of a registration that are read back from a host. */
const STATE_FILES = ['agent.yaml', 'hub-ca.crt', 'client.crt', 'client.key'] as const;

/** Copies the host's registration (if any) into `stage`, so that a re-run can keep it. */
async function readBackRegistration(host: Host, dataDir: string, stage: string): Promise<void> {
  for (const file of STATE_FILES) {
    const result = await host.exec(`cat '${dataDir}/${file}'`, { sudo: true, readOnly: true });
    if (result.exitCode !== 0) return;
    writeFileSync(join(stage, file), result.stdout, { mode: 0o600 });
  }
}

/** Registers (or keeps the registration) and installs the agent service; see the module comment. */
export async function registerAsService(
  request: RegisterRequest,
  options: RegisterAsServiceOptions,
): Promise<RegisterAsServiceResult> {
  const { host, logger } = options;
  checkServiceDataDir(options.dataDir);
  const facts = await host.facts();
  const serviceManager: ServiceManager = selectServiceManager({
    requested: requestedServiceManager(options.env),
    initSystem: facts.initSystem,
    hostName: host.name,
  });
  const stage = join(edgeadmHome(options.env), 'register-cloud', request.cluster);
  mkdirSync(stage, { recursive: true, mode: 0o700 });
  if (existingRegistration(stage, request.cluster, request.discovery.caPins) === undefined) {
    rmSync(stage, { recursive: true, force: true });
    mkdirSync(stage, { recursive: true, mode: 0o700 });
    await readBackRegistration(host, options.dataDir, stage);
  }
  const { state, wasRegistered } = await register(request, { dataDir: stage, logger, env: options.env });
  let installed;
  try {
    installed = await installAgentService({
      host,
      serviceManager,
      state,
      dataDir: options.dataDir,
      binary: options.binary,
      logger,
    });
  } catch (error) {
    logger.warn(`the registration is kept in ${stage} for a re-run`);
    throw error;
  }
  rmSync(stage, { recursive: true, force: true });
  return {
    hubServer: state.hubServer,
    wasRegistered,
    host: installed.host,
    changed: installed.changed,
    service: installed.service,
  };
}

/**
 * The edgeadm binary to install: the one given, else this one when edgeadm
 * runs as the single binary.
 *
 * @throws {EdgeadmError} `E_AGENT_BINARY` when there is none.
 */
export async function agentBinary(given: string | undefined): Promise<string> {
  if (given !== undefined) return given;
  const { isSea } = await import('node:sea');
  if (isSea()) return process.execPath;
  throw new EdgeadmError('there is no edgeadm single binary to install on the host', {
    code: 'E_AGENT_BINARY',
    exitCode: 3,
    hints: [
      'Run register-cloud from the single binary (npm run build:binary), or give one with --edgeadm-binary.',
      'Or run the agent in the foreground with --foreground.',
    ],
  });
}
