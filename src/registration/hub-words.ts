/**
 * Discovery's errors in the hub's words. `register-cloud` discovers the hub
 * with the code `join` uses to discover a cluster, whose messages speak of
 * control planes, `edgeadm token create` and `certs ca-hash`; for a hub
 * they name the hub, `hub token create` and the pin `hub serve` prints.
 * Pure: an error in, an error out.
 */
import { EdgeadmError, isEdgeadmError } from '../errors.js';

const HUB_PIN = 'the hub\'s pin is printed by "edgeadm hub serve" and "edgeadm hub token create"';

/** Each cluster phrase of discovery's messages and hints, and the hub's. */
const HUB_WORDS: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /Use "edgeadm token create" on the control-plane node to create a new valid token/g,
    'Use "edgeadm hub token create" to create a new valid hub token',
  ],
  [
    /create a new token on the control plane \("edgeadm token create"\) and use the join command it prints/g,
    'create a new hub token ("edgeadm hub token create") and use the register-cloud command it prints',
  ],
  [/create a new token on the control plane/g, 'create a new hub token ("edgeadm hub token create")'],
  [
    /Print the join command on the control plane, or make a new token with "edgeadm token generate"/g,
    'Create a hub token with "edgeadm hub token create": it prints the whole register-cloud command',
  ],
  [/[Pp]rint (?:the hash|it) on the control plane with "edgeadm certs ca-hash"/g, HUB_PIN],
  [/run "edgeadm certs ca-hash" on the control plane/g, HUB_PIN],
  [/--discovery-token-ca-cert-hash/g, '--hub-ca-cert-hash'],
  [/\bThe cluster does not know\b/g, 'The hub does not know'],
  [/\binvalid for this cluster\b/g, 'invalid for this hub'],
  [/\bthe one the cluster signed with\b/g, 'the one the hub signed with'],
];

/** `text` with discovery's cluster phrases put in the hub's words. */
export function inHubWords(text: string): string {
  return HUB_WORDS.reduce((out, [pattern, words]) => out.replace(pattern, words), text);
}

/** A discovery error as register-cloud reports it: same code and exit code, the hub's words. */
export function hubDiscoveryError(error: unknown): unknown {
  if (!isEdgeadmError(error)) return error;
  const translated = new EdgeadmError(inHubWords(error.message), {
    code: error.code,
    exitCode: error.exitCode,
    hints: error.hints.map(inHubWords),
    ...(error.details === undefined ? {} : { details: error.details }),
    cause: error,
  });
  // Keeps the class (ValidationError, …) that callers tell failures apart by.
  return Object.setPrototypeOf(translated, Object.getPrototypeOf(error) as object) as EdgeadmError;
}
