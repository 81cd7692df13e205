/**
 * The install primitive's script and its reading, without a host: what
 * the script runs (the system's tools by absolute path, the staged copy
 * checked before the rename), and the typed error for each mismatch it
 * reports. The same script on real hosts whose tools lie:
 * test/integration/packages/host-check.test.ts and upgrade-host-check.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  readVerifiedInstall,
  verifiedInstallScript,
  type VerifiedInstall,
} from '../../../src/cluster/verified-install.js';
import { isPackageError } from '../../../src/packages/errors.js';

const SHA = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const installs: VerifiedInstall[] = [
  {
    source: '/var/lib/edgeadm/packages/p/bin/k3s',
    target: '/usr/local/bin/k3s',
    mode: 0o755,
    sha256: SHA,
    what: 'bin/k3s of the package p',
  },
  {
    source: '/var/lib/edgeadm/packages/p/bin/kubectl',
    target: '/usr/local/bin/kubectl',
    mode: 0o755,
    sha256: OTHER,
    what: 'bin/kubectl of the package p',
  },
];

describe('verifiedInstallScript', () => {
  it('checks the staged copy before the rename and the target after it, with the system tools by absolute path', () => {
    const script = verifiedInstallScript(installs);
    const lines = script.split('\n');
    const stagedCheck = lines.findIndex((line) => line.includes('staged-mismatch 0'));
    const rename = lines.findIndex((line) => line.startsWith("/bin/mv -f -- '/usr/local/bin/k3s.edgeadm-new'"));
    expect(stagedCheck).toBeGreaterThan(0);
    expect(rename).toBeGreaterThan(stagedCheck);
    expect(lines.findIndex((line) => line.includes('installed-mismatch 0'))).toBeGreaterThan(rename);
    expect(script).toContain("/bin/cp '/var/lib/edgeadm/packages/p/bin/k3s' '/usr/local/bin/k3s.edgeadm-new'");
    expect(script).toContain("/usr/bin/sha256sum < '/usr/local/bin/k3s.edgeadm-new' | /usr/bin/cut -c1-64");
    // No tool by bare name (a package's /usr/local/bin comes first on root's PATH).
    for (const tool of ['cp', 'mv', 'rm', 'chmod', 'sync', 'sha256sum', 'cut']) {
      expect(script, tool).not.toMatch(new RegExp(`(^|[;|(]\\s*|then |else )${tool} `, 'm'));
    }
  });
});

describe('readVerifiedInstall', () => {
  it('names the targets written and the ones kept', () => {
    expect(readVerifiedInstall(installs, 'edgeadm-install: installed 0\nedgeadm-install: kept 1\n', 'h')).toEqual({
      installed: ['/usr/local/bin/k3s'],
    });
  });

  it('a staged copy that differs: E_PACKAGE_STAGED_MISMATCH, the target left as it was', () => {
    const read = () => readVerifiedInstall(installs, `edgeadm-install: staged-mismatch 0 ${OTHER}\n`, 'h');
    expect(read).toThrow(/staged as \/usr\/local\/bin\/k3s\.edgeadm-new on h has SHA-256 b{64}; it must be a{64}/);
    try {
      read();
    } catch (error) {
      expect(isPackageError(error, 'E_PACKAGE_STAGED_MISMATCH')).toBe(true);
    }
  });

  it('a target that differs after the rename: E_PACKAGE_INSTALLED_MISMATCH; no report at all is not success', () => {
    expect(() => readVerifiedInstall(installs, `edgeadm-install: installed-mismatch 0 ${OTHER}\n`, 'h')).toThrow(
      /\/usr\/local\/bin\/k3s on h, installed from bin\/k3s of the package p, has SHA-256 b{64}/,
    );
    expect(() => readVerifiedInstall(installs, 'edgeadm-install: installed 0\n', 'h')).toThrow(/printed no result/);
  });
});
