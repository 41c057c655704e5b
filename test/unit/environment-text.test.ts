import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EnvironmentFailure, EnvironmentRef } from '../../core/environment-types';
import { environmentDetail, environmentFailureText } from '../../policies/environment-text';

const key = `sha256:${'ab'.repeat(32)}`;
const egress = [
  { host: 'registry.example.com', port: 443, allowed: true, bytesUp: 10, bytesDown: 900 },
  { host: 'elsewhere.example.net', port: 443, allowed: false, bytesUp: 0, bytesDown: 0, reason: 'not on the allow-list' },
];

describe('environment text: the step line and the failure a landing shows', () => {
  const ref = (cache: EnvironmentRef['cache']): EnvironmentRef => ({
    key,
    image: 'tarmac/runner:bookworm',
    products: ['node_modules'],
    env: {},
    cache,
    buildMs: 1000,
    egress,
  });
  const details: Array<{ name: string; input: EnvironmentRef; expected: string }> = [
    {
      name: 'a build names every host it reached or was refused',
      input: ref('miss'),
      expected: `ENV_CACHE=miss ${'ab'.repeat(6)}; 1 path(s); egress: registry.example.com:443 allowed, elsewhere.example.net:443 refused`,
    },
    { name: 'a hit reached nothing: no egress', input: ref('hit'), expected: `ENV_CACHE=hit ${'ab'.repeat(6)}; 1 path(s)` },
  ];
  for (const { name, input, expected } of details) it(name, () => assert.equal(environmentDetail(input), expected));

  const failure = (change: Partial<EnvironmentFailure>): EnvironmentFailure => ({
    key,
    why: 'setup[0] `npm ci` exited 1',
    exitCode: 1,
    logRef: 'runs/r/logs/environment.log',
    logTail: 'npm error 404\nnpm error code E404',
    refused: [],
    egress: [],
    branchChangedInputs: false,
    ...change,
  });
  const failures: Array<{ name: string; input: EnvironmentFailure; summary: RegExp; message: RegExp }> = [
    {
      name: 'the command, its exit and the log, with the tail in the message',
      input: failure({}),
      summary: /^environment abababababab: setup\[0\] `npm ci` exited 1; log: runs\/r\/logs\/environment\.log$/,
      message: /exited 1\nnpm error 404\nnpm error code E404$/,
    },
    {
      name: 'a refused host is named with where to allow it',
      input: failure({ refused: ['elsewhere.example.net:443'] }),
      summary: /egress refused: elsewhere\.example\.net:443 \(not in the worker's TARMAC_EGRESS_ALLOW\)/,
      message: /egress refused: elsewhere\.example\.net:443/,
    },
    {
      name: 'a declared host the operator does not allow is named',
      input: failure({ refusedDeclared: ['other.example.org'] }),
      summary: /egress hosts not allowed by the operator \(TARMAC_EGRESS_ALLOW\): other\.example\.org/,
      message: /other\.example\.org/,
    },
  ];
  for (const { name, input, summary, message } of failures) {
    it(name, () => {
      const text = environmentFailureText(input);
      assert.match(text.summary, summary);
      assert.match(text.message, message);
    });
  }
});
