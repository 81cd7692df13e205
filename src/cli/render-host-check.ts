/**
 * The human rendering of `host check`: a few lines of facts, then one line
 * per check (status, name, reason), then the counts.
 */
import type { ChalkInstance } from 'chalk';
import type { HostCheckReport } from '../hosts/host-check.js';
import { formatBytes, type PreflightStatus } from '../hosts/preflight.js';

/** The report as lines of text, coloured by `style`. */
export function renderHostCheck(report: HostCheckReport, style: ChalkInstance): string[] {
  const { facts } = report;
  const paint: Record<PreflightStatus, (text: string) => string> = {
    pass: style.green,
    warn: style.yellow,
    fail: style.red.bold,
  };
  const addresses = facts.addresses
    .filter((a) => a.scope === 'global')
    .map((a) => `${a.interface} ${a.address}/${a.prefixLength}`);
  const lines = [
    style.bold(`${report.host} (${facts.hostname}), checked for a ${report.role} node`),
    `  os:        ${facts.os.prettyName}, ${facts.kernel.name} ${facts.kernel.release}, ${facts.arch}`,
    `  resources: ${facts.cpus} CPUs, ${formatBytes(facts.memory.totalBytes)} memory, swap ${facts.swap.totalBytes > 0 ? formatBytes(facts.swap.totalBytes) : 'off'}`,
    `  init:      ${facts.initSystem}`,
    `  addresses: ${addresses.length > 0 ? addresses.join(', ') : 'none'}`,
    '',
  ];
  const titleWidth = Math.max(...report.checks.map((c) => c.title.length), 'CHECK'.length);
  lines.push(style.dim(`${'STATUS'.padEnd(6)}  ${'CHECK'.padEnd(titleWidth)}  REASON`));
  for (const check of report.checks) {
    lines.push(`${paint[check.status](check.status.padEnd(6))}  ${check.title.padEnd(titleWidth)}  ${check.reason}`);
  }
  const { pass, warn, fail } = report.summary;
  lines.push('');
  lines.push(
    fail > 0
      ? style.red.bold(
          `${fail} failed, ${warn} warning${warn === 1 ? '' : 's'}, ${pass} passed: not fit for a ${report.role} node as it is`,
        )
      : `${pass} passed, ${warn} warning${warn === 1 ? '' : 's'}: fit for a ${report.role} node`,
  );
  return lines;
}
