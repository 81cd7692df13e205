/**
 * The documentation against the command table (oclif.manifest.json, made by
 * `npm run build`): the generated reference is current, and every command
 * README.md and docs/guides name exists. CI runs this with the unit tests.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ES module script, without declarations
import { renderCommandReference } from '../../../scripts/command-reference.js';
import { commandMentions, unknownCommandMentions } from './command-mentions.js';

const root = new URL('../../../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('oclif.manifest.json', root), 'utf8')) as {
  commands: Record<string, { args?: Record<string, unknown>; strict?: boolean }>;
};
const docs = ['README.md', ...readdirSync(new URL('docs/guides/', root)).map((file) => `docs/guides/${file}`)];

describe('docs/reference/commands.md', () => {
  it('is what scripts/command-reference.js makes from oclif.manifest.json (run "npm run build")', () => {
    const written = readFileSync(new URL('docs/reference/commands.md', root), 'utf8');
    expect(written).toBe((renderCommandReference as (m: unknown) => string)(manifest));
  });
});

describe('commands named in README.md and docs/guides', () => {
  it('finds the commands a page names', () => {
    expect(commandMentions('run `edgeadm hub token create --ttl 1h` then `hub serve`').map((m) => m.words)).toEqual([
      ['hub', 'token', 'create'],
      ['hub', 'serve'],
    ]);
  });

  it('refuses a command the manifest does not have', () => {
    const text = 'get a kubeconfig with `edgeadm hub kubeconfig`, or `fleet frobnicate`';
    expect(unknownCommandMentions(text, manifest.commands).map((m) => m.text)).toEqual([
      'edgeadm hub kubeconfig',
      'fleet frobnicate',
    ]);
  });

  it.each(docs)('%s names only commands that exist', (file) => {
    const text = readFileSync(new URL(file, root), 'utf8');
    expect(unknownCommandMentions(text, manifest.commands).map((m) => `line ${m.line}: ${m.text}`)).toEqual([]);
  });
});
