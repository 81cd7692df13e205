import { describe, expect, it } from 'vitest';
import { createCa, issueCertificate } from '../../../src/trust/pki.js';
import { isRenewalDue } from '../../../src/registration/registration.js';

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
