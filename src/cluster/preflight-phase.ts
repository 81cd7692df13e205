/**
 * The preflight phase of init and join: the checks of `edgeadm host check`
 * for the role, with the package's architecture, and `--ignore-preflight-errors`.
 * On a host this workflow already set up (its service running), the ports
 * its own service holds are expected to be in use, so a re-run passes.
 */
import { PreflightError } from '../errors.js';
import { checkHost } from '../hosts/host-check.js';
import type { PreflightResult } from '../hosts/preflight.js';
import type { Phase } from '../workflow/phase.js';
import type { NodeData } from './node-context.js';

/** Ports a role's own running service holds. */
function isOwnPort(check: PreflightResult): boolean {
  return check.id.startsWith('port-');
}

/** Makes the preflight phase. */
export function preflightPhase<C extends NodeData>(): Phase<C> {
  return {
    name: 'preflight',
    summary: 'Run the pre-flight checks of host check on the host',
    isCheck: true,
    async run(ctx) {
      const report = await checkHost(ctx.host, { role: ctx.role, expectedArch: ctx.package.manifest.arch });
      ctx.facts = report.facts;
      const unit = ctx.distribution.serviceUnit(ctx.role).name;
      const isOurs =
        ctx.state.state.role === ctx.role && (await ctx.serviceManager.isActive(ctx.host, unit).catch(() => false));
      const ignoreAll = ctx.ignorePreflightErrors.includes('all');
      const failures = report.checks.filter((check) => check.status === 'fail');
      const blocking: PreflightResult[] = [];
      for (const check of failures) {
        if (isOurs && isOwnPort(check)) {
          ctx.say(`${check.title}: in use by the ${unit} edgeadm installed (fine on a re-run)`);
        } else if (ignoreAll || ctx.ignorePreflightErrors.includes(check.id)) {
          ctx.say(`ignored failing check ${check.id}: ${check.reason}`);
        } else blocking.push(check);
      }
      for (const check of report.checks.filter((c) => c.status === 'warn')) {
        ctx.say(`WARNING ${check.id}: ${check.reason}`);
      }
      if (blocking.length > 0) {
        throw new PreflightError(
          `${ctx.host.name} is not fit for a ${ctx.role} node:\n${blocking.map((c) => `  [ERROR ${c.id}]: ${c.reason}`).join('\n')}`,
          {
            code: 'E_PREFLIGHT',
            hints: [
              `Fix the host, or pass --ignore-preflight-errors=${blocking.map((c) => c.id).join(',')} to go on anyway.`,
            ],
            details: { failed: blocking.map((c) => c.id) },
          },
        );
      }
      ctx.say(`${report.summary.pass} checks passed, ${report.summary.warn} warnings`);
      return 'unchanged';
    },
  };
}
