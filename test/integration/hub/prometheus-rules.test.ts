/**
 * The alert rules shipped with the hub (assets/prometheus/edgeadm-hub-rules.yaml)
 * mean what they say, checked by Prometheus' own promtool, built from its Go
 * module by test/real/build.sh: `promtool check rules` accepts the file, and
 * `promtool test rules` runs prometheus-rules.promtool.yaml, where series as
 * the hub serves them go to 0 (or past a date) and each alert fires naming
 * its cluster or rollout. The same tests expecting another cluster fail, so
 * a pass is not promtool passing anything.
 *
 * Without promtool the file is still parsed: every alert names its cluster
 * or rollout, and reads only series the hub renders. The promtool checks are
 * then skipped, saying why (`test/real/build.sh promtool`).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { HubMetrics } from '../../../src/hub/metrics/hub-metrics.js';
import { renderFleetMetrics } from '../../../src/hub/metrics/fleet-metrics.js';
import { builtPromtool } from '../../support/real/rig.js';

const RULES = fileURLToPath(new URL('../../../assets/prometheus/edgeadm-hub-rules.yaml', import.meta.url));
const RULE_TESTS = fileURLToPath(new URL('./prometheus-rules.promtool.yaml', import.meta.url));

const promtool = builtPromtool();
const skipReason = 'reason' in promtool ? promtool.reason : undefined;
if (skipReason !== undefined) console.warn(`promtool checks of the hub's alert rules skipped: ${skipReason}`);

interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

function alertRules(): AlertRule[] {
  const file = load(readFileSync(RULES, 'utf8')) as { groups: Array<{ name: string; rules: AlertRule[] }> };
  return file.groups.flatMap((group) => group.rules);
}

/** The names of every series family the hub renders for a fleet with everything reported. */
async function renderedFamilies(): Promise<Set<string>> {
  const text = await renderFleetMetrics({
    clusters: [
      {
        name: 'store-042',
        labels: {},
        state: 'Connected',
        lastSeen: '2026-11-29T10:00:00.000Z',
        registeredAt: '2026-01-01T00:00:00.000Z',
        certNotAfter: '2027-01-01T00:00:00.000Z',
        health: {
          reportedAt: '2026-11-29T10:00:00.000Z',
          nodes: { total: 1, ready: 1, notReady: [] },
          certificates: [{ kind: 'cluster-ca', subject: 'CN=kubernetes', notAfter: '2035-01-01T00:00:00.000Z' }],
        },
      },
    ],
    rollouts: [{ name: 'web', state: 'halted' }],
  });
  // The replica's own series (its start time) with the fleet's.
  const own = await new HubMetrics().render();
  return new Set([...`${text}\n${own}`.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] as string));
}

function runPromtool(args: string[]): { status: number; output: string } {
  const result = spawnSync((promtool as { binary: string }).binary, args, { encoding: 'utf8', timeout: 60_000 });
  return { status: result.status ?? 1, output: `${result.stdout}${result.stderr}` };
}

describe("the hub's alert rules, as a file", () => {
  it('has the alerts issue #38 asks for, each naming its cluster or rollout', () => {
    const rules = alertRules();
    expect(rules.map((rule) => rule.alert).sort()).toEqual([
      'EdgeadmCertificateExpired',
      'EdgeadmCertificateExpiringSoon',
      'EdgeadmClusterNodesNotReady',
      'EdgeadmClusterNotSeen',
      'EdgeadmClusterOffline',
      'EdgeadmRolloutHalted',
    ]);
    for (const rule of rules) {
      const subject = rule.alert === 'EdgeadmRolloutHalted' ? 'rollout' : 'cluster';
      expect(rule.expr, rule.alert).toMatch(new RegExp(`by \\((\\w+, )*${subject}\\b`));
      expect(rule.annotations['summary'], rule.alert).toContain(`{{ $labels.${subject} }}`);
      expect(rule.labels['severity'], rule.alert).toMatch(/^(warning|critical)$/);
    }
  });

  it('reads only series the hub renders', async () => {
    const families = await renderedFamilies();
    const read = new Set(alertRules().flatMap((rule) => rule.expr.match(/\bedgeadm_\w+/g) ?? []));
    expect(read.size).toBeGreaterThan(0);
    for (const name of read) expect(families, name).toContain(name);
  });
});

describe.skipIf(skipReason !== undefined)(
  `the hub's alert rules, by promtool ${'version' in promtool ? promtool.version : ''}`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'edgeadm-promtool-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('passes promtool check rules', () => {
      const { status, output } = runPromtool(['check', 'rules', RULES]);
      expect(status, output).toBe(0);
      expect(output).toContain('SUCCESS: 6 rules found');
    });

    it('passes promtool test rules: each alert fires when its series say so, naming the cluster or rollout', () => {
      const { status, output } = runPromtool(['test', 'rules', RULE_TESTS]);
      expect(status, output).toBe(0);
      expect(output).toContain('SUCCESS');
    });

    it('fails the same tests when they expect the offline alert to name another cluster', () => {
      const wrong = readFileSync(RULE_TESTS, 'utf8')
        .replace('../../../assets/prometheus/edgeadm-hub-rules.yaml', RULES)
        .replace("summary: 'Cluster store-042 is offline'", "summary: 'Cluster store-043 is offline'");
      const file = join(dir, 'wrong-cluster.promtool.yaml');
      writeFileSync(file, wrong);
      const { status, output } = runPromtool(['test', 'rules', file]);
      expect(status).not.toBe(0);
      expect(output).toContain('EdgeadmClusterOffline');
    });
  },
);
