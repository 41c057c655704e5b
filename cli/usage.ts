/**
 * The help of the `tarmac` binary: each command's own usage (`tarmac <command> --help`, `tarmac help
 * <command>`) and the overview (`tarmac help`), made from the same entries so they cannot disagree.
 */
interface CommandDoc {
  /** Usage lines, without the leading `tarmac `. */
  synopsis: string[];
  /** One line for the overview. */
  summary: string;
  /** The command's own help: what it does, then its options. */
  details?: string[];
}

const watchOptions = [
  "  --logs                   plain output: the runner's log lines too (a terminal shows their tail anyway)",
  '  --plain                  one line per event, also on a terminal (a pipe or CI always gets these)',
];

const docs = {
  dev: {
    synopsis: ['dev'],
    summary: 'start the Temporal dev server (SQLite in the data dir), a worker and the API on this machine',
    details: [
      'Ctrl-C stops all three; run it again and every run in flight resumes. Prints the API URL, the',
      "token file, Temporal's address and UI, and the metrics endpoints.",
    ],
  },
  worker: {
    synopsis: ['worker'],
    summary: "run a worker: workflows, capsules and this host's containers (TARMAC_WORKER_QUEUES)",
  },
  api: {
    synopsis: ['api'],
    summary: 'run the REST API (needs TARMAC_API_TOKENS and TARMAC_REPO_ALLOW)',
  },
  land: {
    synopsis: ['land <repo> <branch...> --onto <target> [--priority <n>] [--resolver h#m] [--fixer h#m] [--watch [--logs] [--plain]] [--json]'],
    summary: 'land branches (in this order) onto the target; prints the id, or follows it with --watch',
    details: [
      '<repo> is a path on this machine (made absolute) or a git URL the API allows (TARMAC_REPO_ALLOW).',
      'The same heads again answer with the run they started (not started twice).',
      '',
      'options:',
      '  --onto <target>          the branch the landing fast-forwards (required)',
      "  --priority <n>           its lane in the target's queue, -100 to 100 (default 0): higher lanes are",
      '                           admitted first; a batch in flight is never reordered (a negative one: --priority=-5)',
      '  --resolver <harness#model>  the agent that resolves rebase conflicts',
      '  --fixer <harness#model>  the agent of the fixup round after a red gate',
      '  --watch                  follow it to its outcome (exit 0 only when it landed)',
      ...watchOptions,
      "  --json                   print the API's answer as JSON",
    ],
  },
  list: {
    synopsis: [
      'list [--kind <kind>] [--repo <repo>] [--target <branch>] [--branch <branch>] [--phase <phase>]',
      '     [--outcome <outcome>] [--status <status>] [--limit <n>] [--json]',
    ],
    summary: 'runs, newest first: landings, review panels, fix loops and nightlies, filtered',
    details: [
      'Every filter narrows the list (Temporal visibility, GET /v1/runs).',
      '',
      'options:',
      '  --kind <kind>            landing, review-panel, fix-loop, nightly, agent-session or merge-batch',
      '                           (default: the first four)',
      '  --repo <repo>            runs on this repository (a path is made absolute)',
      '  --target <branch>        runs onto this target branch',
      '  --branch <branch>        landings that include this source branch',
      '  --phase <phase>          the phase a run is in (or ended in), e.g. gate, review, done',
      "  --outcome <outcome>      the run's outcome, e.g. landed, gate-failed",
      '  --status <status>        running, completed, failed, canceled, terminated or timed-out',
      '  --limit <n>              at most n runs (1-200, default 50)',
      "  --json                   print the API's answer as JSON",
    ],
  },
  status: {
    synopsis: ['status <id> [--json]'],
    summary:
      "a run now: a landing's phase, steps, gates, questions, meters and outcome; a panel's verdict; a fix loop's outcome; a merge batch's members, rounds and fast-forwards",
    details: ['options:', "  --json                   print the API's record as JSON"],
  },
  watch: {
    synopsis: ['watch <id> [--logs] [--plain]'],
    summary: 'follow a run (landing, review panel, fix loop) live until its outcome',
    details: [
      "Follows the run's event stream (a dropped connection resumes where it was). Exit 0 when it",
      'landed, a panel approved, or a fix loop fixed (or found nothing to fix); 1 for any other outcome.',
      '',
      'options:',
      ...watchOptions,
    ],
  },
  logs: {
    synopsis: ['logs <id>'],
    summary: "a run's runner log lines (gates, agents), from the start, following them until the run ends",
    details: ['Each line is `<log file>: <line>`. Ctrl-C stops following; the run goes on.'],
  },
  answer: {
    synopsis: ['answer <id> <text> [--question <qid>]'],
    summary: "answer a run's pending question (a landing's, a fix loop's or a panel's, or their agents')",
    details: [
      "A landing's gate-file question takes approve, approved or yes to go on; any other text stops it with",
      'needs-decision. An agent\'s question gets the text as its answer. An empty text ("") is a decision not',
      'to go on: needs-decision.',
      '',
      'options:',
      '  --question <qid>         which question, when the run waits on more than one',
    ],
  },
  cancel: {
    synopsis: ['cancel <id>'],
    summary: 'cancel a landing: its containers stop, cleanup runs, outcome cancelled',
  },
  retry: {
    synopsis: ['retry <id> [--watch [--logs] [--plain]] [--json]'],
    summary: 'start a landing that did not land again, on the same heads (a new run id)',
    details: [
      'The old run keeps its id, history and outcome. Refused while it runs or once it landed.',
      'The same heads on an unmoved target are the same tree: its gate results and reviews are reused',
      '(GATE_CACHE=hit, REVIEW_CACHE=hit).',
      '',
      'options:',
      '  --watch                  follow the new run to its outcome (exit 0 only when it landed)',
      ...watchOptions,
      "  --json                   print the API's answer as JSON",
    ],
  },
  budget: {
    synopsis: ['budget <id> extend [--tokens <n>] [--cost-usd <dollars>] [--sessions <n>] [--wall <duration>]', 'budget <id> stop'],
    summary: 'extend the budget of a run paused for it, or stop the run',
    details: [
      'A run whose budget is spent with onExhausted "pause" waits for one of these (its status says',
      'pausedFor). extend adds to the limits and the run goes on; stop ends it budget-exhausted.',
      '',
      'options of extend (at least one):',
      '  --tokens <n>             tokens to add',
      '  --cost-usd <dollars>     US dollars to add (at least 0.01)',
      '  --sessions <n>           agent sessions to add',
      '  --wall <duration>        wall time to add: 500ms, 30s, 10m, 2h',
    ],
  },
  review: {
    synopsis: ['review <repo> <head> --base <branch> --panel <name> [--quorum <n>] [--watch [--logs] [--plain]] [--json]'],
    summary: 'start a review panel over base...head on its own; with --watch, follow it to its verdict',
    details: [
      'An unchanged tree is not reviewed twice: the findings cache answers (REVIEW_CACHE=hit, no session).',
      '',
      'options:',
      '  --base <branch>          the branch the change is reviewed against (required)',
      '  --panel <name>           a panel of recipes/panels.json (required)',
      "  --quorum <n>             verdicts needed (default the panel's)",
      '  --watch                  follow it to its verdict (exit 0 only when approved)',
      ...watchOptions,
      "  --json                   print the API's answer as JSON",
    ],
  },
  fix: {
    synopsis: [
      'fix <repo> <branch> <request> [--repro <cmd>] [--max-repairs <n>] [--implementer h#m] [--architect h#m]',
      '    [--wait [--logs] [--plain]] [--json]',
    ],
    summary: 'run a fix loop on a branch; its fixes go to a branch tarmac/fix/<id>',
    details: [
      'options:',
      '  --repro <cmd>            the command that shows the problem (default: found from the request and the repository)',
      '  --max-repairs <n>        repair attempts (0-10)',
      '  --implementer <harness#model>, --architect <harness#model>  the agents',
      '  --wait                   follow it to its outcome (exit 0 when fixed, nothing to fix, or answered)',
      ...watchOptions,
      "  --json                   print the API's answer (with --wait: the finished run) as JSON",
    ],
  },
  schedule: {
    synopsis: [
      'schedule list [--json]',
      'schedule create <repo> <target> [--cron "<cron>"] [--timezone <zone>] [--paused] [--implementer h#m] [--json]',
      'schedule show <id> [--json]',
      'schedule trigger <id>',
      'schedule delete <id>',
    ],
    summary: 'nightly schedules: gate the target head every night; red → a fix loop → a landing of its fix',
    details: [
      'One schedule per repository and target; the same create again answers with it, another cron for the',
      'same pair is refused (delete it first). trigger runs it now; delete stops new runs (one in progress',
      'finishes).',
      '',
      'options of create:',
      '  --cron "<cron>"          minute hour day-of-month month day-of-week, or @daily… (default "0 3 * * *")',
      '  --timezone <zone>        IANA time zone the cron is read in (default UTC)',
      '  --paused                 create it paused (trigger still runs it)',
      '  --implementer <harness#model>  the agent of its fix loop',
    ],
  },
  quarantines: {
    synopsis: ['quarantines [--repo <repo>] [--target <branch>] [--json]', 'quarantines lift <suite> --repo <repo> --target <branch>'],
    summary: 'suites quarantined on a target (red, settled flaky or pre-existing): their red blocks no landing until they expire',
    details: [
      "A landing's red suite is run again on the same tree and on its base; the recipe's limits.gate may",
      'quarantine it on the target (GET /v1/quarantines). Each ends by itself; lift ends one now, and its red',
      'blocks landings again.',
    ],
  },
  agents: {
    synopsis: ['agents [--json]'],
    summary: 'per worker, each harness#model of the recipes: runnable or not, and what is missing (a key, an image)',
    details: [
      'Every harness#model the recipes name (harness model lists, the ladder, the panels), as each worker last',
      'reported it (GET /v1/agents): ✓ it can run there; ✗ what is missing — the image not built, the key not',
      'set. A notice line says when the default panel or the default ladder cannot run on a worker.',
      '',
      'options:',
      "  --json                   print the API's answer as JSON",
    ],
  },
  environments: {
    synopsis: ['environments [--repo <repo>] [--json]'],
    summary: "the repositories' environments cached on the API's host, most recently used first",
    details: [
      'An environment is what a repository declares its gates and agents run in (a base image plus what its',
      'setup produced), built once per key: the declaration, the base image and its inputs (lockfiles) in the',
      'tree under test (GET /v1/environments). Each row: the key as step details name it (ENV_CACHE=hit <key>),',
      'the repository, its size on disk, when a landing last used it, and the runs whose directories hold it',
      '(the collection keeps those; the rest go least recently used first past TARMAC_ENV_CACHE_MAX).',
      '',
      'options:',
      '  --repo <repo>            environments of this repository (a path is made absolute)',
      "  --json                   print the API's answer as JSON (inputs, products, egress, the declaration)",
    ],
  },
  queue: {
    synopsis: ['queue [<repo> <target>] [--json]'],
    summary: "a target's merge queue: who holds the target, the batch in flight, the waiting line with lanes and ETAs",
    details: [
      'Without arguments: every target queue that runs, one a row (GET /v1/queues). With a repository and a',
      'target: that queue (GET /v1/queues/:repo/:target) — the landing that holds the target or the speculative',
      'batch in flight and its members, then each waiting landing with its position (0 goes next), its lane',
      '(land --priority), whether it may join a batch, and its ETA: when its turn should be over, from the',
      "queue's recent turns (- until the queue has timed one). The line is ordered by lane, then arrival.",
      '',
      'options:',
      "  --json                   print the API's answer as JSON",
    ],
  },
  help: {
    synopsis: ['help [<command>]', '<command> --help'],
    summary: "this text, or one command's",
  },
} as const satisfies Record<string, CommandDoc>;

type DocumentedCommand = keyof typeof docs;

export function isDocumentedCommand(name: string | undefined): name is DocumentedCommand {
  return name !== undefined && Object.hasOwn(docs, name);
}

const exitCodes = `exit codes: 0 done (watch, --watch, --wait: landed, approved or fixed) · 1 failed, or any other outcome ·
            2 bad command line or configuration, or a request the API refused (4xx)`;

const configuration = `settings: the environment, then .env in the working directory (the environment wins over the file;
TARMAC_ENV_FILE names another file, or none when empty). The client commands talk to the API at
TARMAC_API_URL with TARMAC_API_TOKEN (defaults: tarmac dev's).`;

/** One command's help: its usage lines, what it does, its options, the exit codes. */
export function commandUsage(name: DocumentedCommand): string {
  const doc: CommandDoc = docs[name];
  const lines = doc.synopsis.map((line, index) => `${index === 0 ? 'usage: ' : '       '}tarmac ${line}`);
  lines.push('', doc.summary.charAt(0).toUpperCase() + doc.summary.slice(1) + '.');
  if (doc.details) lines.push('', ...doc.details);
  lines.push('', exitCodes, '');
  return lines.join('\n');
}

const section = (names: DocumentedCommand[]) =>
  names
    .map((name) => {
      const doc: CommandDoc = docs[name];
      return [...doc.synopsis.map((line) => `  ${line}`), `      ${doc.summary}`].join('\n');
    })
    .join('\n');

/** The overview: every command, server and client. */
export const usage = `usage: tarmac <command> [options]     tarmac <command> --help: that command's own help
       tarmac --version

run Tarmac:
${section(['dev', 'worker', 'api'])}

use it:
${section(['land', 'list', 'status', 'watch', 'logs', 'answer', 'cancel', 'retry', 'budget', 'review', 'fix', 'schedule', 'quarantines', 'queue', 'environments', 'agents', 'help'])}

${configuration}

${exitCodes}
`;
