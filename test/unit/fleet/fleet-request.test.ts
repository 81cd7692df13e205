/** The fleet commands' requests (src/fleet/fleet-request.ts): parsed and checked with no I/O. */
import { describe, expect, it } from 'vitest';
import {
  parseFleetJoinRequest,
  parseFleetResetRequest,
  parseFleetRunRequest,
  parseFleetUpgradeRequest,
  type FleetJoinInput,
} from '../../../src/fleet/fleet-request.js';

const run = { inventory: 'fleet.yaml', concurrency: 10, retries: 0 };
const join: FleetJoinInput = {
  ...run,
  endpoint: '10.0.0.10:6443',
  token: 'abcdef.0123456789abcdef',
  caCertHashes: [`sha256:${'a'.repeat(64)}`],
  isUnsafeSkipCaVerification: false,
  isDryRun: false,
  ignorePreflightErrors: [],
  skipPhases: [],
};

/** The code a parse throws, or undefined. */
function codeOf(parse: () => unknown): string | undefined {
  try {
    parse();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
}

describe('the fleet requests', () => {
  it('carry the rollout parsed: waves and budget as counts or percentages', () => {
    expect(parseFleetRunRequest({ ...run, canary: 1, waveSize: '20%', maxFailures: '3', limit: 'stores' })).toEqual({
      inventoryFile: 'fleet.yaml',
      limit: 'stores',
      rollout: { concurrency: 10, retries: 0, canary: 1, waveSize: { percent: 20 }, maxFailures: { count: 3 } },
    });
    expect(codeOf(() => parseFleetRunRequest({ ...run, waveSize: 'twenty' }))).toBe('E_USAGE');
  });

  it("give join's hosts one parsed discovery, the default timeout when none is given", () => {
    const request = parseFleetJoinRequest(join);
    expect(request.discovery.token).toEqual({ id: 'abcdef', secret: '0123456789abcdef' });
    expect(request.discovery.timeoutMs).toBe(5 * 60_000);
    expect(codeOf(() => parseFleetJoinRequest({ ...join, token: 'BADTOKEN' }))).toBe('E_TOKEN_INVALID');
    expect(codeOf(() => parseFleetJoinRequest({ ...join, caCertHashes: [] }))).toBe('E_DISCOVERY_NO_PIN');
    expect(codeOf(() => parseFleetJoinRequest({ ...join, discoveryTimeout: 'soon' }))).toBe('E_DURATION_INVALID');
    expect(codeOf(() => parseFleetJoinRequest({ ...join, skipPhases: ['no-such-phase'] }))).toBe('E_UNKNOWN_PHASE');
  });

  it("parse upgrade's deadlines and window once, and refuse an unconfirmed reset", () => {
    const upgrade = { ...run, installPackage: 'pkg.tar.gz', isForced: false };
    expect(parseFleetUpgradeRequest({ ...upgrade, drainTimeout: '90s' }).deadlines.drainTimeoutMs).toBe(90_000);
    expect(codeOf(() => parseFleetUpgradeRequest({ ...upgrade, gateTimeout: '0s' }))).toBe('E_DURATION_INVALID');
    expect(codeOf(() => parseFleetUpgradeRequest({ ...upgrade, windowStart: '25:00', windowEnd: '04:00' }))).toBe(
      'E_FLEET_WINDOW',
    );
    expect(codeOf(() => parseFleetResetRequest({ ...run, isForced: false, isDryRun: false }))).toBe(
      'E_RESET_NOT_CONFIRMED',
    );
    expect(parseFleetResetRequest({ ...run, isForced: true, isDryRun: false }).distribution).toBe('k3s');
  });
});
