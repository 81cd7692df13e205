/**
 * `--trusted-key`: the flag of every command that reads an install package
 * (package verify and inspect, init, join, upgrade, fleet up/join/upgrade).
 */
import { Flags } from '@oclif/core';

/** The trusted-key flag, repeatable. */
export const trustedKeyFlags = {
  'trusted-key': Flags.string({
    summary:
      'A public key (PEM) allowed to sign install packages (repeatable). With one given, a package that is unsigned, signed by another key, or changed after signing is refused before anything reaches a host.',
    multiple: true,
  }),
};
