import { describe, expect, it } from 'vitest';
import { parseUpgradeApplyRequest } from '../../../../src/cluster/upgrade/apply-request.js';
import { DEFAULT_GATE_TIMEOUT_MS } from '../../../../src/cluster/upgrade/limits.js';

const connect = { host: 'root@10.0.0.10' };

describe('the upgrade apply request', () => {
  it('is parsed once: the package, dry run and the gate deadline in milliseconds', () => {
    expect(parseUpgradeApplyRequest({ connect, installPkgPath: './pkg.tar.gz' })).toEqual({
      connect,
      packageSource: './pkg.tar.gz',
      trustedKeyFiles: [],
      isDryRun: false,
      gateTimeoutMs: DEFAULT_GATE_TIMEOUT_MS,
    });
    expect(
      parseUpgradeApplyRequest({ connect, installPkgPath: './pkg.tar.gz', trustedKeys: ['a.pub', 'b.pub'] }),
    ).toMatchObject({ trustedKeyFiles: ['a.pub', 'b.pub'] });
    expect(
      parseUpgradeApplyRequest({ connect, installPkgPath: './pkg.tar.gz', isDryRun: true, gateTimeout: '1m30s' }),
    ).toMatchObject({ isDryRun: true, gateTimeoutMs: 90_000 });
  });

  it('refuses a missing or empty package and a malformed or non-positive gate deadline, before any I/O', () => {
    for (const installPkgPath of [undefined, '', '  ']) {
      expect(() => parseUpgradeApplyRequest({ connect, installPkgPath })).toThrow(
        expect.objectContaining({ code: 'E_USAGE', exitCode: 3 }),
      );
    }
    for (const gateTimeout of ['0', '-5s', 'soon', '5']) {
      expect(() => parseUpgradeApplyRequest({ connect, installPkgPath: './p.tar.gz', gateTimeout })).toThrow(
        expect.objectContaining({ code: 'E_DURATION_INVALID', exitCode: 3 }),
      );
    }
  });
});
