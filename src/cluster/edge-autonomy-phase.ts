/**
 * init's edge-autonomy phase (with --enable-edge, after edge-addons): runs
 * the autonomy controller (`edgeadm agent autonomy`,
 * src/edge/autonomy-controller.ts) on the control plane as the service
 * {@link AUTONOMY_UNIT_NAME}, with the distribution's admin kubeconfig
 * against the advertised API server. It gives the pods of edge nodes the
 * tolerations of their node's autonomy duration; see src/edge/README.md,
 * "Autonomy duration", for why a controller and not a webhook or the API
 * server's default toleration flags.
 *
 * The edgeadm binary comes from the install package (`bin/edgeadm`), or,
 * when it has none, this edgeadm uploads itself if it is the single
 * binary; otherwise the phase stops with `E_EDGE_NO_BINARY` (the control
 * plane is up by then; a re-run with such a package finishes). Unit and
 * binary are recorded in the install state first, so reset removes them.
 */
import { dirname } from 'node:path/posix';
import { ValidationError } from '../errors.js';
import type { Phase } from '../workflow/phase.js';
import { packagedEdgeadm } from './edge-node-phase.js';
import type { NodeData } from './node-context.js';

/** The unit name. */
export const AUTONOMY_UNIT_NAME = 'edgeadm-autonomy.service';
/** Where the controller keeps its run logs (EDGEADM_HOME): the one place its unit may write. */
export const AUTONOMY_DATA_DIR = '/var/lib/edgeadm/autonomy';

/** Paths and URLs may not carry what systemd's command line would split or expand. */
const UNIT_SAFE = /^[A-Za-z0-9@%+=:,./_[\]-]+$/;

/** The unit text. Pure. */
export function renderAutonomyUnit(input: { edgeadmBin: string; kubeconfig: string; server: string }): string {
  for (const [what, value] of Object.entries(input)) {
    if (!UNIT_SAFE.test(value)) {
      throw new ValidationError(
        `the ${what} ${JSON.stringify(value)} cannot go into the autonomy unit's command line`,
        {
          code: 'E_EDGE_UNIT_VALUE',
        },
      );
    }
  }
  return `# edgeadm autonomy controller: pods on edge nodes tolerate their node being
# cut off from the control plane for the node's autonomy duration
# (annotation edgeadm.io/autonomy-duration). Installed by
# "edgeadm init --enable-edge".
[Unit]
Description=edgeadm autonomy controller (tolerations of pods on edge nodes)
Documentation=https://github.com/edgeadm/edgeadm
Wants=network-online.target
After=network-online.target k3s.service kubelet.service

[Service]
Type=simple
ExecStart=${input.edgeadmBin} agent autonomy --kubeconfig ${input.kubeconfig} --server ${input.server}
Restart=always
RestartSec=5
# Run logs go under its own directory, the one place the service may write.
Environment=EDGEADM_HOME=${AUTONOMY_DATA_DIR}
StateDirectory=edgeadm/autonomy
StateDirectoryMode=0700
# It reads the admin kubeconfig (root's, 0600) and talks HTTPS; nothing else.
CapabilityBoundingSet=
NoNewPrivileges=yes
ProtectSystem=strict
ReadWritePaths=${AUTONOMY_DATA_DIR}
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
MemoryMax=256M

[Install]
WantedBy=multi-user.target
`;
}

/** What the phase needs of the init workflow. */
export interface EdgeAutonomyData extends NodeData {
  enableEdge: boolean;
}

/** Makes the edge-autonomy phase; `server` is the API server URL init reaches. */
export function edgeAutonomyPhase<C extends EdgeAutonomyData>(deps: { server: (ctx: C) => Promise<string> }): Phase<C> {
  return {
    name: 'edge-autonomy',
    summary:
      'With --enable-edge: run the autonomy controller on the control plane (pods on edge nodes stay while cut off)',
    runIf: (ctx) => ctx.enableEdge,
    async run(ctx) {
      const { host, state, serviceManager, distribution } = ctx;
      const binary = packagedEdgeadm(ctx);
      const server = await deps.server(ctx);
      const unit = {
        name: AUTONOMY_UNIT_NAME,
        content: renderAutonomyUnit({ edgeadmBin: binary.path, kubeconfig: distribution.adminKubeconfigPath, server }),
      };
      if (ctx.isDryRun) {
        ctx.say(
          `Would write the unit ${serviceManager.filesOf(AUTONOMY_UNIT_NAME)[0]} and start ${AUTONOMY_UNIT_NAME}`,
        );
        return 'unchanged';
      }
      let isChanged = false;
      if (binary.kind === 'upload') {
        state.file(binary.path);
        await state.save();
        const upload = await host.put(binary.from, binary.path, {
          mode: 0o755,
          sudo: true,
          description: `upload this edgeadm to ${binary.path}`,
        });
        if (!upload.skipped) isChanged = true;
      }
      await state.claimDirectory(AUTONOMY_DATA_DIR);
      for (const file of serviceManager.filesOf(AUTONOMY_UNIT_NAME)) {
        await state.ensureDirectory(dirname(file));
        state.file(file);
      }
      state.service(AUTONOMY_UNIT_NAME);
      await state.save();
      const isUnitChanged = await serviceManager.install(host, unit);
      const outcome = await serviceManager.ensureRunning(host, unit, { isRestartNeeded: isUnitChanged });
      if (isUnitChanged || outcome !== 'already-running') isChanged = true;
      ctx.say(
        outcome === 'already-running' ? `${AUTONOMY_UNIT_NAME} already running` : `${AUTONOMY_UNIT_NAME} ${outcome}`,
      );
      return isChanged ? 'changed' : 'unchanged';
    },
  };
}
