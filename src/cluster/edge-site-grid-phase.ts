/**
 * init's edge-site-grids phase (with --enable-edge, after edge-addons and
 * edge-autonomy): runs the site grid controller (`edgeadm agent
 * site-grid-controller`, src/sites/grid-controller.ts) on the control plane
 * as the service {@link SITE_GRID_UNIT_NAME}, as its own service account
 * (manifests/site-grid-controller.yaml), not as the admin: its kubeconfig
 * holds that account's token, read from the token Secret edge-addons made.
 *
 * A service beside the autonomy controller, not a Deployment: edgeadm is one
 * binary the operator carries, with no container image of itself in the
 * install package; a pod would need one on every control plane node.
 */
import { dirname } from 'node:path/posix';
import { EdgeadmError } from '../errors.js';
import { corePath, type KubeClient } from '../kube/client.js';
import { renderKubeconfig } from '../kube/kubeconfig.js';
import { SITE_GRID_CONTROLLER_ACCOUNT } from '../sites/site-grid.js';
import type { Phase } from '../workflow/phase.js';
import { renderAutonomyUnit } from './edge-autonomy-phase.js';
import { packagedEdgeadm } from './edge-node-phase.js';
import type { NodeData } from './node-context.js';

/** The unit name. */
export const SITE_GRID_UNIT_NAME = 'edgeadm-site-grid-controller.service';
/** Where the controller keeps its run logs (EDGEADM_HOME): the one place its unit may write. */
export const SITE_GRID_DATA_DIR = '/var/lib/edgeadm/site-grid-controller';
/** Its kubeconfig: the service account's token, mode 0600. */
export const SITE_GRID_KUBECONFIG = '/etc/edgeadm/site-grid-controller/kubeconfig';
/** How long the token controller may take to fill the token Secret. */
const TOKEN_WAIT_MS = 60_000;

/** The unit text: the autonomy unit's hardening, another command. Pure. */
export function renderSiteGridUnit(input: { edgeadmBin: string; kubeconfig: string; server: string }): string {
  return renderAutonomyUnit(input)
    .replace(
      /^# edgeadm autonomy controller[\s\S]*?\n\[Unit\]/,
      '# edgeadm site grid controller: one copy of each SiteGrid per site\n# (docs/guides/site-grids.md). Installed by "edgeadm init --enable-edge".\n[Unit]',
    )
    .replace(/^Description=.*$/m, 'Description=edgeadm site grid controller (a copy of each SiteGrid per site)')
    .replace(' agent autonomy ', ' agent site-grid-controller ')
    .replaceAll('edgeadm/autonomy', 'edgeadm/site-grid-controller')
    .replace('# It reads the admin kubeconfig (root', '# It reads its own kubeconfig (root')
    .replace(/^(After=.*)$/m, '$1 edgeadm-autonomy.service');
}

/** The service account's token and CA, once the token controller has filled its Secret. */
async function controllerToken(client: KubeClient): Promise<{ token: string; caPem: string }> {
  const path = corePath('secrets', { namespace: 'kube-system', name: `${SITE_GRID_CONTROLLER_ACCOUNT}-token` });
  const deadline = Date.now() + TOKEN_WAIT_MS;
  for (;;) {
    const secret = await client.get<{ data?: { token?: string; 'ca.crt'?: string } }>(path);
    const { token, 'ca.crt': ca } = secret?.data ?? {};
    if (token && ca) {
      return { token: Buffer.from(token, 'base64').toString(), caPem: Buffer.from(ca, 'base64').toString() };
    }
    if (Date.now() > deadline) {
      throw new EdgeadmError(
        `the token of ${SITE_GRID_CONTROLLER_ACCOUNT} was not issued within ${TOKEN_WAIT_MS / 1000} s`,
        {
          code: 'E_SITE_GRID_TOKEN',
          hints: ['Is kube-controller-manager running? Its token controller fills service account token Secrets.'],
        },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/** What the phase needs of the init workflow. */
export interface EdgeSiteGridData extends NodeData {
  enableEdge: boolean;
}

/** Makes the edge-site-grids phase. */
export function edgeSiteGridPhase<C extends EdgeSiteGridData>(deps: {
  server: (ctx: C) => Promise<string>;
  adminClient: (ctx: C) => Promise<KubeClient>;
}): Phase<C> {
  return {
    name: 'edge-site-grids',
    summary: 'With --enable-edge: run the site grid controller on the control plane, as its own service account',
    runIf: (ctx) => ctx.enableEdge,
    async run(ctx) {
      const { host, state, serviceManager } = ctx;
      const binary = packagedEdgeadm(ctx);
      const server = await deps.server(ctx);
      const unit = {
        name: SITE_GRID_UNIT_NAME,
        content: renderSiteGridUnit({ edgeadmBin: binary.path, kubeconfig: SITE_GRID_KUBECONFIG, server }),
      };
      if (ctx.isDryRun) {
        ctx.say(
          `Would write ${SITE_GRID_KUBECONFIG} (the token of ${SITE_GRID_CONTROLLER_ACCOUNT}) and start ${SITE_GRID_UNIT_NAME}`,
        );
        return 'unchanged';
      }
      // The binary is where edge-autonomy put it (that phase uploads it when the package has none).
      const credentials = {
        server,
        contextName: SITE_GRID_CONTROLLER_ACCOUNT,
        ...(await controllerToken(await deps.adminClient(ctx))),
      };
      await state.claimDirectory(SITE_GRID_DATA_DIR);
      await state.ensureDirectory(dirname(SITE_GRID_KUBECONFIG));
      state.file(SITE_GRID_KUBECONFIG);
      for (const file of serviceManager.filesOf(SITE_GRID_UNIT_NAME)) {
        await state.ensureDirectory(dirname(file));
        state.file(file);
      }
      state.service(SITE_GRID_UNIT_NAME);
      await state.save();
      const written = await host.put(
        Buffer.from(renderKubeconfig(credentials, SITE_GRID_CONTROLLER_ACCOUNT)),
        SITE_GRID_KUBECONFIG,
        {
          mode: 0o600,
          sudo: true,
          description: `write ${SITE_GRID_KUBECONFIG} (the site grid controller's service account)`,
        },
      );
      const isUnitChanged = await serviceManager.install(host, unit);
      const outcome = await serviceManager.ensureRunning(host, unit, {
        isRestartNeeded: isUnitChanged || !written.skipped,
      });
      ctx.say(
        outcome === 'already-running' ? `${SITE_GRID_UNIT_NAME} already running` : `${SITE_GRID_UNIT_NAME} ${outcome}`,
      );
      return isUnitChanged || !written.skipped || outcome !== 'already-running' ? 'changed' : 'unchanged';
    },
  };
}
