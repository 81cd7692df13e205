// Lint rules: typescript-eslint's recommended set, type-aware rules on src/, plus the house
// rules from STYLE.md that a linter can hold (no oclif below the CLI layer, layers
// that import only downwards,
// no process.exit below the command layer).
import { readFileSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The most lines a file of src/ may have, and a function (blank lines and comments not counted),
 * and the files over them today: eslint.size-allowlist.json.
 */
const SIZES = JSON.parse(readFileSync(new URL('./eslint.size-allowlist.json', import.meta.url), 'utf8'));
const MAX_FILE_LINES = SIZES.limits.fileLines;
const MAX_FUNCTION_LINES = SIZES.limits.functionLines;

export default tseslint.config(
  { ignores: ['lib/', 'dist/', 'node_modules/', 'coverage/', 'oclif.manifest.json'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        performance: 'readonly',
        Buffer: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        setImmediate: 'readonly',
        AbortController: 'readonly',
        AbortSignal: 'readonly',
        TextEncoder: 'readonly',
        TextDecoder: 'readonly',
        fetch: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    // Type-aware rules where a mistake is silent at run time: a promise nobody awaits or catches, a
    // switch over a union that misses a member, a cast that hides nothing. Only on src/ (the tests'
    // type information would double the lint time for little).
    files: ['src/**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      // Sizes: a file or function past these is split by job (STYLE.md). Files over them today are
      // listed in eslint.size-allowlist.json, each held to its own size (sizeAllowlist below).
      'max-lines': ['error', { max: MAX_FILE_LINES, skipBlankLines: true, skipComments: true }],
      'max-lines-per-function': ['error', { max: MAX_FUNCTION_LINES, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/commands/**', 'src/cli/**', 'src/index.ts', 'src/sea-main.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@oclif/*'],
              message:
                'Domain code does not import oclif (see ARCHITECTURE.md): it must bundle and serve agents and tests.',
            },
            {
              group: ['**/cli/*', '**/commands/*', '**/commands/**'],
              message: 'Data flows one way: commands and cli call domain code, never the reverse.',
            },
          ],
        },
      ],
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'exit', message: 'Throw a typed EdgeadmError; only the CLI layer exits.' },
      ],
    },
  },
  {
    // Adapters touch the world for the workflows; they never call a workflow or a service above them.
    files: [
      'src/hosts/**/*.ts',
      'src/kube/**/*.ts',
      'src/packages/**/*.ts',
      'src/trust/**/*.ts',
      'src/log/**/*.ts',
      'src/metrics/**/*.ts',
      'src/workflow/**/*.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@oclif/*'], message: 'Adapters do not import oclif.' },
            {
              group: ['**/cli/*', '**/commands/*', '**/commands/**'],
              message: 'Data flows one way: commands and cli call domain code, never the reverse.',
            },
            {
              group: [
                '**/cluster/*',
                '**/cluster/**',
                '**/fleet/*',
                '**/fleet/**',
                '**/hub/*',
                '**/hub/**',
                '**/hub-client/*',
                '**/hub-client/**',
                '**/registration/*',
                '**/registration/**',
                '**/tunnel/*',
                '**/tunnel/**',
                '**/edge/*',
                '**/edge/**',
                '**/rollout/*',
                '**/rollout/**',
              ],
              message:
                'An adapter (hosts, kube, packages, trust, log, metrics, workflow) never imports a workflow or a service.',
            },
          ],
        },
      ],
    },
  },
  ...sizeAllowlist(),
  // The hub's rooms import one way only: registration → hub-client → hub → tunnel (see
  // src/tunnel/README.md); test/unit/architecture/folder-graph.test.ts fails on any loop.
  roomRule(
    ['src/tunnel/**/*.ts'],
    ['hub', 'hub-client', 'registration', 'cluster', 'fleet', 'rollout', 'edge'],
    'The tunnel is transport only: the hub and registration import it, never the reverse.',
  ),
  // The hub runs rollouts: it imports their pure core (src/rollout/), which imports no room above it.
  roomRule(
    ['src/hub/**/*.ts'],
    ['hub-client', 'registration', 'cluster', 'fleet', 'edge'],
    'The hub server imports neither its clients nor the workflows.',
  ),
  roomRule(
    ['src/hub-client/**/*.ts'],
    ['registration', 'tunnel', 'cluster', 'fleet', 'edge'],
    'The hub client calls the hub API; it imports no workflow and not the tunnel.',
  ),
  // Registration runs the agent, and the agent applies the rollout copies the hub sends
  // (rollout/copy-agent.ts); rollout imports neither registration nor the tunnel.
  roomRule(
    ['src/registration/**/*.ts'],
    ['cluster', 'fleet', 'edge'],
    'Registration talks to the hub and installs the agent; it imports no cluster or fleet workflow.',
  ),
);

/**
 * A layer rule for one room: the domain rules (no oclif, nothing from cli/ or commands/) plus
 * the rooms it must not import. One function, because a later `no-restricted-imports` entry
 * replaces an earlier one for the same files rather than adding to it.
 */
function roomRule(files, forbiddenRooms, message) {
  return {
    files,
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@oclif/*'], message: 'Domain code does not import oclif.' },
            {
              group: ['**/cli/*', '**/commands/*', '**/commands/**'],
              message: 'Data flows one way: commands and cli call domain code, never the reverse.',
            },
            { group: forbiddenRooms.flatMap((room) => [`**/${room}/*`, `**/${room}/**`]), message },
          ],
        },
      ],
    },
  };
}

/**
 * The files over the size limits today (eslint.size-allowlist.json), each held to its own size so
 * that it cannot grow; test/unit/architecture/size-allowlist.test.ts keeps the list tight and shrinking.
 */
function sizeAllowlist() {
  const allowlist = SIZES;
  const limit = (rule, max) => ({ [rule]: ['error', { max, skipBlankLines: true, skipComments: true }] });
  return [
    ...Object.entries(allowlist.maxLines).map(([file, max]) => ({ files: [file], rules: limit('max-lines', max) })),
    ...Object.entries(allowlist.maxLinesPerFunction).map(([file, max]) => ({
      files: [file],
      rules: limit('max-lines-per-function', max),
    })),
  ];
}
