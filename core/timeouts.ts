/**
 * Recovery in seconds: how long Temporal waits on a worker that may have died before it hands the
 * worker's workflow task to another. Pure: the API, the worker's activities and workflow code
 * (children) start runs with it.
 *
 * A workflow task is one activation of a run's workflow code, its local activities included (the
 * placement, verify, the merge: the SDK extends a task whose local activities outlast 80% of this by
 * completing it and asking for another). A task taken by a worker that is then killed is given to
 * another worker only when this runs out; Temporal's default is 10 s, and a worker restarts in
 * about 3. Measured by the chaos suite (test/chaos, docs/BENCHMARKS.md).
 */
export const workflowTaskTimeout = '5s';
