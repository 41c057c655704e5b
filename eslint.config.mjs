// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeBuiltins = [
  'assert', 'buffer', 'child_process', 'cluster', 'crypto', 'dgram', 'dns', 'events', 'fs', 'fs/promises', 'http', 'http2',
  'https', 'net', 'os', 'path', 'perf_hooks', 'process', 'readline', 'stream', 'timers', 'tls', 'url', 'util', 'v8', 'vm',
  'worker_threads', 'zlib',
];

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
  {
    // The workflow sandbox: deterministic code only. No Node builtins, no value imports of
    // activities (types only), no I/O libraries.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.flatMap((name) => [
              { name, message: 'workflows run in a deterministic sandbox: no Node builtins' },
              { name: `node:${name}`, message: 'workflows run in a deterministic sandbox: no Node builtins' },
            ]),
            { name: 'dockerode', message: 'workflows must not do I/O; call an activity' },
            { name: 'simple-git', message: 'workflows must not do I/O; call an activity' },
            { name: 'pino', message: 'use `log` from @temporalio/workflow' },
          ],
          patterns: [
            { group: ['**/activities', '**/activities/**'], allowTypeImports: true, message: 'import activities with `import type` only' },
            { group: ['**/api/**', '**/infra/**', '**/worker/**', '**/core/config', '**/core/landing-id', '**/core/logger'], message: 'not sandbox-safe' },
          ],
        },
      ],
    },
  },
);
