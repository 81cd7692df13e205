import { describe, expect, it } from 'vitest';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { isRenewalDue, withNameTakenHints } from '../../../src/registration/registration.js';
import { EdgeadmError } from '../../../src/errors.js';

describe('isRenewalDue', () => {
  it('is due once two thirds of the certificate lifetime have passed, not before', async () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const ca = await createCa({ commonName: 'test-ca', now });
    const { certPem } = await issueCertificate({
      ca,
      commonName: 'store-1',
      usages: ['client'],
      validityDays: 30,
      now,
    });
    // The certificate starts 5 minutes early (clock-skew backdate), so measure from there.
    const start = now.getTime() - 5 * 60_000;
    const end = now.getTime() + 30 * 24 * 3_600_000;
    const twoThirds = start + ((end - start) * 2) / 3;
    expect(isRenewalDue(certPem, new Date(twoThirds - 60_000))).toBe(false);
    expect(isRenewalDue(certPem, new Date(twoThirds + 60_000))).toBe(true);
  });
});

describe('a cluster name the hub already holds (newcomer point 11)', () => {
  it('says how to reuse or remove the earlier registration', () => {
    const refused = new EdgeadmError(
      'the hub refused: a cluster named "store-042" is already registered; delete it first',
      {
        code: 'E_HUB_CLUSTER_EXISTS',
      },
    );
    const error = withNameTakenHints(refused, 'store-042') as EdgeadmError;
    expect(error.code).toBe('E_HUB_CLUSTER_EXISTS');
    expect(error.hints.join('\n')).toContain('edgeadm hub clusters delete store-042');
    expect(error.hints.join('\n')).toContain('$EDGEADM_HOME/register-cloud/store-042');
    const other = new EdgeadmError('x', { code: 'E_OTHER' });
    expect(withNameTakenHints(other, 'store-042')).toBe(other);
  });
});
