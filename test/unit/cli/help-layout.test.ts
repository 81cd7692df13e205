/**
 * What `--help` shows, read from the command table oclif renders it from
 * (oclif.manifest.json, made by `npm run build`).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface ManifestFlag {
  name: string;
  summary?: string;
  description?: string;
  default?: unknown;
  helpGroup?: string;
}
const manifest = JSON.parse(readFileSync(new URL('../../../oclif.manifest.json', import.meta.url), 'utf8')) as {
  commands: Record<string, { flags: Record<string, ManifestFlag> }>;
};
const commands = Object.entries(manifest.commands);

describe('help layout (newcomer point 24)', () => {
  it('says what --json prints, never oclif’s "Format output as json."', () => {
    for (const [id, command] of commands) {
      const json = command.flags.json;
      if (json) expect(`${id}: ${json.summary ?? json.description}`).toMatch(/one JSON document/);
    }
  });

  it('states a default once: oclif shows [default: …], so the text does not repeat it', () => {
    for (const [id, command] of commands) {
      for (const flag of Object.values(command.flags)) {
        if (flag.default === undefined) continue;
        expect(`${id} --${flag.name}: ${flag.summary ?? flag.description ?? ''}`).not.toMatch(/\bdefault:/i);
      }
    }
  });

  it('keeps what a run takes (package, config) with the main flags, not under NODE FLAGS', () => {
    for (const id of ['init', 'join']) {
      for (const name of ['install-pkg-path', 'config', 'distribution', 'dry-run']) {
        expect(`${id} --${name}: ${manifest.commands[id]!.flags[name]!.helpGroup ?? 'FLAGS'}`).toBe(
          `${id} --${name}: FLAGS`,
        );
      }
      expect(manifest.commands[id]!.flags['node-name']!.helpGroup).toBe('NODE');
    }
  });
});
