import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import { parseArguments } from '../../bench/arguments';
import { retriedActivities, weighHistory, type History } from '../../bench/history-walk';
import { middleOf, percentile } from '../../bench/stats';

const payload = (value: unknown) => defaultPayloadConverter.toPayload(value);
/** Event ids arrive as Long objects; a stand-in with the same toString. */
const long = (value: number) => ({ low: value, high: 0, unsigned: false, toString: () => String(value) });

describe('bench: weighHistory', () => {
  const big = 'x'.repeat(70_000);
  const history = {
    events: [
      {
        eventId: long(1),
        workflowExecutionStartedEventAttributes: {
          workflowType: { name: 'landing' },
          input: { payloads: [payload({ repo: 'r' })] },
          memo: { fields: { recipe: payload('v1') } },
        },
      },
      { eventId: long(2), workflowTaskScheduledEventAttributes: { attempt: 1 } },
      {
        eventId: long(5),
        activityTaskScheduledEventAttributes: { activityType: { name: 'capsule.rebaseBranches' }, input: { payloads: [payload({ runId: 'x' })] } },
      },
      { eventId: long(6), activityTaskStartedEventAttributes: { scheduledEventId: long(5) } },
      { eventId: long(7), activityTaskCompletedEventAttributes: { scheduledEventId: long(5), result: { payloads: [payload({ log: big })] } } },
      {
        eventId: long(8),
        startChildWorkflowExecutionInitiatedEventAttributes: {
          workflowType: { name: 'reviewPanel' },
          workflowId: 'l.review-1',
          input: { payloads: [payload({})] },
        },
      },
      {
        eventId: long(9),
        childWorkflowExecutionStartedEventAttributes: {
          workflowType: { name: 'reviewPanel' },
          workflowExecution: { workflowId: 'l.review-1', runId: 'run-1' },
        },
      },
      { eventId: long(10), workflowExecutionSignaledEventAttributes: { signalName: 'admitted', input: { payloads: [payload(undefined)] } } },
      {
        eventId: long(11),
        childWorkflowExecutionCompletedEventAttributes: {
          workflowExecution: { workflowId: 'l.review-1', runId: 'run-1' },
          result: { payloads: [payload({ status: 'approved' })] },
        },
      },
      { eventId: long(12), workflowExecutionCompletedEventAttributes: { result: { payloads: [payload({ status: 'landed' })] } } },
    ],
  } as unknown as History;
  const weight = weighHistory(history);

  it('counts events by kind and finds the children it started', () => {
    assert.equal(weight.events, 10);
    assert.equal(weight.eventsByKind.activityTaskCompleted, 1);
    assert.equal(weight.eventsByKind.workflowTaskScheduled, 1);
    assert.deepEqual(weight.children, [{ workflowId: 'l.review-1', runId: 'run-1' }]);
    assert.deepEqual(weight.signalsByName, { admitted: 1 });
  });

  it('finds every payload, biggest first, naming the event, what it is about and where', () => {
    const table: { name: string; eventId: number; expected: { event: string; about: string; path: string } }[] = [
      { name: 'workflow input', eventId: 1, expected: { event: 'workflowExecutionStarted', about: 'landing', path: 'input.payloads[0]' } },
      { name: 'activity input', eventId: 5, expected: { event: 'activityTaskScheduled', about: 'capsule.rebaseBranches', path: 'input.payloads[0]' } },
      {
        name: 'activity result, named through its scheduling event',
        eventId: 7,
        expected: { event: 'activityTaskCompleted', about: 'capsule.rebaseBranches', path: 'result.payloads[0]' },
      },
      {
        name: 'child input',
        eventId: 8,
        expected: { event: 'startChildWorkflowExecutionInitiated', about: 'reviewPanel l.review-1', path: 'input.payloads[0]' },
      },
      { name: 'signal, an empty value', eventId: 10, expected: { event: 'workflowExecutionSignaled', about: 'admitted', path: 'input.payloads[0]' } },
      { name: 'child result', eventId: 11, expected: { event: 'childWorkflowExecutionCompleted', about: 'l.review-1', path: 'result.payloads[0]' } },
      {
        name: "the workflow's result is about the workflow",
        eventId: 12,
        expected: { event: 'workflowExecutionCompleted', about: 'landing', path: 'result.payloads[0]' },
      },
    ];
    for (const { name, eventId, expected } of table) {
      const site = weight.payloads.find((candidate) => candidate.eventId === eventId && candidate.path === expected.path);
      assert.deepEqual(site && { event: site.event, about: site.about, path: site.path }, expected, name);
    }
    assert.ok(
      weight.payloads.some((site) => site.eventId === 1 && site.path === 'memo.fields.recipe'),
      'memo fields are payloads too',
    );
    assert.equal(weight.payloads.length, 8);
    assert.equal(weight.payloads[0]!.eventId, 7, 'the 70 kB activity result is the biggest');
    assert.ok(weight.payloads[0]!.bytes > 70_000 && weight.payloads[0]!.bytes < 70_100, `size counts data and metadata: ${weight.payloads[0]!.bytes}`);
    assert.equal(
      weight.payloadBytes,
      weight.payloads.reduce((sum, site) => sum + site.bytes, 0),
    );
  });
});

describe('bench: retriedActivities', () => {
  it('names each activity that ran more than once, with the failure of the attempt before', () => {
    const history = {
      events: [
        { eventId: long(5), activityTaskScheduledEventAttributes: { activityType: { name: 'capsule.prepareRun' } } },
        { eventId: long(6), activityTaskScheduledEventAttributes: { activityType: { name: 'gate.runSuite' } } },
        { eventId: long(7), activityTaskStartedEventAttributes: { scheduledEventId: long(5), attempt: 1 } },
        {
          eventId: long(8),
          activityTaskStartedEventAttributes: {
            scheduledEventId: long(6),
            attempt: 2,
            lastFailure: { message: 'activity StartToClose timeout', timeoutFailureInfo: {} },
          },
        },
      ],
    } as unknown as History;
    assert.deepEqual(retriedActivities(history), [{ activity: 'gate.runSuite', attempt: 2, lastFailure: 'timeout: activity StartToClose timeout' }]);
  });
});

describe('bench: percentile (nearest rank)', () => {
  const twenty = Array.from({ length: 20 }, (_, index) => (20 - index) * 10);
  const table: { name: string; values: number[]; p: number; expected: number }[] = [
    { name: 'p50 of 20 is the 10th', values: twenty, p: 50, expected: 100 },
    { name: 'p95 of 20 is the 19th', values: twenty, p: 95, expected: 190 },
    { name: 'p100 is the largest', values: twenty, p: 100, expected: 200 },
    { name: 'one value', values: [7], p: 95, expected: 7 },
    { name: 'none', values: [], p: 50, expected: 0 },
  ];
  for (const { name, values, p, expected } of table) it(name, () => assert.equal(percentile(values, p), expected));
});

describe('bench: middleOf (the median proper)', () => {
  const table: { name: string; values: number[]; expected: number }[] = [
    { name: 'odd: the middle one', values: [30, 10, 20], expected: 20 },
    { name: 'even: the mean of the middle two, not the larger', values: [40, 10, 30, 20], expected: 25 },
    { name: 'two runs: their mean', values: [38_920, 21_321], expected: 30_120.5 },
    { name: 'one value', values: [7], expected: 7 },
    { name: 'none', values: [], expected: 0 },
  ];
  for (const { name, values, expected } of table) it(name, () => assert.equal(middleOf(values), expected));
});

describe('bench: parseArguments', () => {
  type Parsed = { count: number; landings?: number; batchSize: number; repeats: number; only: string[] };
  const all = ['ratio', 'throughput', 'history', 'queue', 'environment'];
  const table: { name: string; argv: string[]; expected: Parsed | RegExp }[] = [
    {
      name: 'nothing: all sections, 5 runs, each section its own landings, batches of 4 twice',
      argv: [],
      expected: { count: 5, batchSize: 4, repeats: 2, only: all },
    },
    { name: 'a count', argv: ['3'], expected: { count: 3, batchSize: 4, repeats: 2, only: all } },
    { name: 'the environment section alone', argv: ['3', 'environment'], expected: { count: 3, batchSize: 4, repeats: 2, only: ['environment'] } },
    { name: 'section names', argv: ['throughput', 'history'], expected: { count: 5, batchSize: 4, repeats: 2, only: ['throughput', 'history'] } },
    {
      name: '--only and --landings',
      argv: ['--only', 'throughput', '--landings', '4'],
      expected: { count: 5, landings: 4, batchSize: 4, repeats: 2, only: ['throughput'] },
    },
    {
      name: 'the queue with its flags',
      argv: ['queue', '--landings', '12', '--batch-size', '6', '--repeats', '3'],
      expected: { count: 5, landings: 12, batchSize: 6, repeats: 3, only: ['queue'] },
    },
    { name: '--only with two sections', argv: ['--only', 'queue,ratio'], expected: { count: 5, batchSize: 4, repeats: 2, only: ['queue', 'ratio'] } },
    { name: 'an unknown section', argv: ['--only', 'speed'], expected: /--only takes ratio, throughput, history, queue, environment .*"speed"/ },
    { name: 'a bad landing count', argv: ['--landings', '0'], expected: /--landings must be a whole number ≥ 1, got "0"/ },
    { name: 'a missing landing count', argv: ['--landings'], expected: /--landings must be a whole number ≥ 1, got ""/ },
    { name: 'batch size 1 is the baseline, not a variant', argv: ['--batch-size', '1'], expected: /--batch-size must be a whole number from 2 to 16, got "1"/ },
    {
      name: 'a batch size above what a gate file may ask',
      argv: ['--batch-size', '17'],
      expected: /--batch-size must be a whole number from 2 to 16, got "17"/,
    },
    { name: 'a fractional batch size', argv: ['--batch-size', '2.5'], expected: /--batch-size must be a whole number from 2 to 16/ },
    { name: 'no repeats', argv: ['--repeats', '0'], expected: /--repeats must be a whole number ≥ 1, got "0"/ },
    { name: 'an unknown word', argv: ['fast'], expected: /unknown argument "fast"/ },
  ];
  for (const { name, argv, expected } of table) {
    it(name, () => {
      if (expected instanceof RegExp) assert.throws(() => parseArguments(argv), expected);
      else {
        const options = parseArguments(argv);
        const parsed: Parsed = { count: options.count, batchSize: options.batchSize, repeats: options.repeats, only: [...options.only] };
        if (options.landings !== undefined) parsed.landings = options.landings;
        assert.deepEqual(parsed, expected);
      }
    });
  }
});
