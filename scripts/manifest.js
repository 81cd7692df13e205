// After tsc: write lib/build-info.json (the git commit) and oclif.manifest.json,
// the cached command metadata oclif reads instead of importing every command.
import { gitCommit } from './git-commit.js';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Plugin } from '@oclif/core';

const root = fileURLToPath(new URL('..', import.meta.url));
writeFileSync(new URL('../lib/build-info.json', import.meta.url), `${JSON.stringify({ commit: gitCommit() })}\n`);

const plugin = new Plugin({ root, type: 'core', ignoreManifest: true, errorOnManifestCreate: true, isRoot: true });
await plugin.load();
writeFileSync(new URL('../oclif.manifest.json', import.meta.url), `${JSON.stringify(plugin.manifest, null, 2)}\n`);
console.log(`oclif.manifest.json: ${Object.keys(plugin.manifest.commands).length} commands`);
