/**
 * How long Temporal waits on a worker that may have died before it hands the worker's workflow task
 * to another. Pure: the API, the worker's activities and workflow code (children) start runs with
 * it, so every run has it whatever the server's default.
 *
 * A workflow task is one activation of a run's workflow code, its local activities included (the
 * placement, verify, the merge). While local activities run, the SDK keeps the task alive by
 * completing it at 80% of this, measured from when the worker got the task — so this must exceed
 * what a task may wait inside a busy worker before it runs, by a fifth. Temporal's 10 s does: a
 * task taken by a killed worker goes to another after 10 s. 5 s did not (the chaos suite, under a
 * restarted worker's replay of every run at once: the task's keep-alive came after the server had
 * timed it out, the task was run again with its placement, and from the fourth attempt on Temporal
 * waits longer before each — one landing waited 95 s). test/chaos, docs/BENCHMARKS.md.
 */
export const workflowTaskTimeout = '10s';
