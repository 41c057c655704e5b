// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'assert',
  'buffer',
  'child_process',
  'cluster',
  'crypto',
  'dgram',
  'dns',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'net',
  'os',
  'path',
  'perf_hooks',
  'process',
  'readline',
  'stream',
  'timers',
  'tls',
  'url',
  'util',
  'v8',
  'vm',
  'worker_threads',
  'zlib',
];

/**
 * The sandbox rule for a floor (and what above it the floor may not import).
 * @param {string[]} files
 * @param {string[]} above
 * @param {string} why
 */
function sandboxSafe(files, above, why) {
  return [
    {
      files,
      ignores: ['core/node/**'],
      rules: {
        'no-restricted-imports': [
          'error',
          {
            paths: [
              ...nodeBuiltins.flatMap((name) => [
                { name, message: 'sandbox-safe code: no Node builtins (Node-bound code lives in core/node/ or above)' },
                { name: `node:${name}`, message: 'sandbox-safe code: no Node builtins (Node-bound code lives in core/node/ or above)' },
              ]),
              { name: 'dockerode', message: 'sandbox-safe code must not do I/O; call an activity' },
              { name: 'simple-git', message: 'sandbox-safe code must not do I/O; call an activity' },
              { name: 'pino', message: 'use `log` from @temporalio/workflow' },
            ],
            patterns: [
              { group: ['**/activities', '**/activities/**'], allowTypeImports: true, message: 'import activities with `import type` only' },
              { group: ['**/api/**', '**/infra/**', '**/worker/**', '**/core/node/**', './node/**'], message: 'not sandbox-safe (Node-bound)' },
              ...(above.length ? [{ group: above, message: why }] : []),
            ],
          },
        ],
      },
    },
  ];
}

export default tseslint.config(
  { ignores: ['node_modules/**', '.tarmac/**', 'dist/**', 'images/agent-script/agents/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: { allowDefaultProject: ['eslint.config.mjs'] }, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', name: ['describe', 'it', 'test', 'suite'], package: 'node:test' }] },
      ],
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      '@typescript-eslint/only-throw-error': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    // Short functions, short lines: a function over 120 lines (60 in workflows/, which read like state
    // diagrams) is split; strings, templates and regular expressions may run long, code and comments not.
    files: ['**/*.ts', '**/*.tsx', '**/*.mts'],
    ignores: ['test/**', 'bench/**'],
    rules: {
      'max-lines-per-function': ['error', { max: 120, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }] },
  },
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.mts', '**/*.mjs'],
    rules: {
      'max-len': ['error', { code: 160, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true }],
    },
  },
  {
    // Tests read JSON bodies loosely; assertions check their shape.
    files: ['test/**'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  // Where code may run is said by its folder. `core/` (but `core/node/`), `policies/` and `workflows/`
  // are sandbox-safe: deterministic, no Node builtins, no I/O. `core/node/` and everything above need
  // Node. Floors, ground up: core → policies → activities | workflows → api, worker → infra, cli, bin;
  // no folder imports one above it.
  ...sandboxSafe(['core/**/*.ts'], ['**/policies/**', '**/workflows/**', '**/activities/**'], 'core is the ground floor: it imports nothing above it'),
  ...sandboxSafe(
    ['policies/**/*.ts'],
    ['**/workflows/**', '**/activities/**'],
    'policies are pure rules below workflows and activities: types and rules from core only',
  ),
  ...sandboxSafe(['workflows/**/*.ts'], [], ''),
);
