import { describe, expect, it } from 'vitest';
import { EdgeadmError, ValidationError } from '../../../src/errors.js';
import { hubDiscoveryError, inHubWords } from '../../../src/registration/hub-words.js';
import { parseCaPins } from '../../../src/trust/ca-pin.js';
import { parseDiscoveryRequest } from '../../../src/trust/discovery.js';

describe('register-cloud speaks of the hub, not of control planes (newcomer point 10)', () => {
  it('turns a wrong pin’s hint to the pin the hub prints', () => {
    const hint =
      'The CA this server presents is not the one the pin names: check the pin (run "edgeadm certs ca-hash" on the control plane) and the address.';
    expect(inHubWords(hint)).toBe(
      'The CA this server presents is not the one the pin names: check the pin (the hub\'s pin is printed by "edgeadm hub serve" and "edgeadm hub token create") and the address.',
    );
  });

  it('turns an unknown token’s message to hub token create', () => {
    const message =
      'token id "abcdef" is invalid for this cluster or it has expired. Use "edgeadm token create" on the control-plane node to create a new valid token';
    expect(inHubWords(message)).toBe(
      'token id "abcdef" is invalid for this hub or it has expired. Use "edgeadm hub token create" to create a new valid hub token',
    );
    expect(
      inHubWords(
        'The cluster does not know token ID "abcdef", or it has expired, or it may not sign: create a new token on the control plane ("edgeadm token create") and use the join command it prints.',
      ),
    ).toBe(
      'The hub does not know token ID "abcdef", or it has expired, or it may not sign: create a new hub token ("edgeadm hub token create") and use the register-cloud command it prints.',
    );
  });

  it('leaves no control plane, certs ca-hash or token create in the errors discovery throws for a bad pin and token', () => {
    const errors = [
      (() => {
        try {
          parseCaPins(['sha256:nothex']);
        } catch (error) {
          return error;
        }
      })(),
      (() => {
        try {
          parseDiscoveryRequest({ endpoint: 'hub.example.com:9443', token: 'not-a-token', caCertHashes: [] });
        } catch (error) {
          return error;
        }
      })(),
    ];
    for (const error of errors) {
      expect(error).toBeInstanceOf(EdgeadmError);
      const translated = hubDiscoveryError(error) as EdgeadmError;
      const text = [translated.message, ...translated.hints].join('\n');
      expect(text).not.toMatch(/control.plane|certs ca-hash|"edgeadm token create"|discovery-token-ca-cert-hash/);
      expect(translated.code).toBe((error as EdgeadmError).code);
    }
  });

  it('keeps the error’s class and code', () => {
    const translated = hubDiscoveryError(new ValidationError('x', { code: 'E_X', hints: ['y'] }));
    expect(translated).toBeInstanceOf(ValidationError);
    expect((translated as EdgeadmError).code).toBe('E_X');
  });
});
