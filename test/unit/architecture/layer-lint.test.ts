/**
 * The lint run holds the layers: an adapter that imports a workflow, or a room
 * of the hub that imports against the one direction (registration → hub-client
 * → hub → tunnel), is an error. Linted as text under the path it would have,
 * with the project's own eslint.config.js.
 */
import { readdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(__dirname, '../../..');
const eslint = new ESLint({ cwd: ROOT });

/**
 * A real file standing for `src/<room>/probe.ts`: the type-aware rules parse
 * only files the TypeScript project knows, so the probe's text is linted
 * under the name of a file of the same room.
 */
function standIn(file: string): string {
  const room = dirname(file);
  const first = readdirSync(resolve(ROOT, room))
    .filter((name) => name.endsWith('.ts'))
    .sort()[0];
  if (first === undefined) throw new Error(`no TypeScript file in ${room}`);
  return resolve(ROOT, room, first);
}

/** The import restrictions lint reports for `code` placed at `file`. */
async function restrictedImports(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: standIn(file) });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('the layer rules of the lint run', () => {
  it.each([
    ['src/hosts/probe.ts', "import { runInit } from '../cluster/init.js';", /never imports a workflow/],
    ['src/kube/probe.ts', "import { fleetUp } from '../fleet/fleet-up.js';", /never imports a workflow/],
    ['src/trust/probe.ts', "import { callHub } from '../hub-client/hub-client.js';", /never imports a workflow/],
    ['src/tunnel/probe.ts', "import { callHub } from '../hub-client/hub-client.js';", /transport only/],
    ['src/tunnel/probe.ts', "import type { HubContext } from '../hub/hub-context.js';", /transport only/],
    ['src/tunnel/probe.ts', "import { register } from '../registration/registration.js';", /transport only/],
    ['src/hub/probe.ts', "import { register } from '../registration/registration.js';", /neither its clients/],
    ['src/hub/probe.ts', "import { callHub } from '../hub-client/hub-client.js';", /neither its clients/],
    ['src/hub-client/probe.ts', "import type { HubTunnel } from '../tunnel/hub-tunnel.js';", /not the tunnel/],
    ['src/registration/probe.ts', "import { runJoin } from '../cluster/join.js';", /no cluster or fleet/],
    ['src/registration/probe.ts', "import { Command } from '@oclif/core';", /oclif/],
  ])('refuses in %s: %s', async (file, code, message) => {
    const messages = await restrictedImports(file, `${code}\nexport const probe = 1;\n`);
    expect(messages).toEqual([expect.stringMatching(message)]);
  });

  it.each([
    ['src/registration/probe.ts', "import { callHub } from '../hub-client/hub-client.js';"],
    ['src/hub-client/probe.ts', "import type { HubConfig } from '../hub/hub-config.js';"],
    ['src/hub/probe.ts', "import type { HubTunnel } from '../tunnel/hub-tunnel.js';"],
    ['src/hub/probe.ts', "import { stepRollout } from '../rollout/progress.js';"],
    ['src/cluster/probe.ts', "import { isClusterName } from '../kube/names.js';"],
  ])('allows in %s the import downwards: %s', async (file, code) => {
    expect(await restrictedImports(file, `${code}\nexport const probe = 1;\n`)).toEqual([]);
  });
});

/** The rule ids lint reports for `code` placed at `file` (an existing file, so the type checker knows it). */
async function ruleIds(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: resolve(ROOT, file) });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe('the type-aware rules of the lint run', () => {
  it.each([
    [
      'a promise nobody awaits',
      'async function later(): Promise<void> {}\nexport function now(): void {\n  later();\n}\n',
      '@typescript-eslint/no-floating-promises',
    ],
    [
      'an async callback where nothing awaits it',
      'export function arm(f: () => void): void {\n  f();\n}\narm(async () => {});\n',
      '@typescript-eslint/no-misused-promises',
    ],
    [
      'a switch that misses a member of its union',
      "export type Side = 'hub' | 'agent';\nexport function port(side: Side): number {\n  switch (side) {\n    case 'hub':\n      return 1;\n  }\n  return 0;\n}\n",
      '@typescript-eslint/switch-exhaustiveness-check',
    ],
    [
      'a cast that changes nothing',
      "export const name = 'edge' as string as string;\nexport const same = (name as string).length;\n",
      '@typescript-eslint/no-unnecessary-type-assertion',
    ],
  ])('refuses %s', async (_what, code, rule) => {
    expect(await ruleIds('src/kube/names.ts', code)).toContain(rule);
  });

  it('accepts the same code done right', async () => {
    const code =
      "async function later(): Promise<void> {}\nexport async function now(): Promise<void> {\n  await later();\n}\nexport type Side = 'hub' | 'agent';\nexport function port(side: Side): number {\n  switch (side) {\n    case 'hub':\n      return 1;\n    case 'agent':\n      return 2;\n  }\n}\n";
    expect(await ruleIds('src/kube/names.ts', code)).toEqual([]);
  });
});
