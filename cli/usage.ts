/** The usage text of the whole `tarmac` binary: every command, server and client. */
export const usage = `usage: tarmac <command> [options]

run Tarmac:
  dev                       start the Temporal dev server (SQLite in the data dir), a worker and the API
  worker                    run a worker (workflows, capsules, and this host's containers)
  api                       run the REST API

use it (talks to the API at TARMAC_API_URL with TARMAC_API_TOKEN; defaults: tarmac dev's):
  land <repo> <branch...> --onto <target> [--watch [--logs] [--plain]] [--fixer h#m] [--resolver h#m] [--json]
                            land branches (in this order) onto the target; prints the id, or follows it with --watch
  status <id> [--json]      phase, steps, gates, meters and outcome of a landing (or a fix loop's outcome)
  watch <id> [--logs] [--plain]
                            follow a landing live (phase, steps, meters, log tail) until its outcome
  answer <id> <text> [--question <qid>]
                            answer a landing's pending question: approve, approved or yes approve a
                            gate-file change; "" or any other text stops it with needs-decision
  cancel <id>               cancel a landing: its containers stop, cleanup runs, outcome cancelled
  retry <id> [--watch [--logs] [--plain]] [--json]
                            start a landing that did not land again, on the same heads (a new run id;
                            the old run keeps its history); refused while it runs or once it landed
  fix <repo> <branch> <request> [--repro <cmd>] [--max-repairs <n>] [--implementer h#m] [--architect h#m] [--wait] [--json]
                            run a fix loop on a branch; its fixes go to a branch tarmac/fix/<id>
  help                      this text

exit codes: 0 done (watch, land --watch: landed; fix --wait: fixed) · 1 failed, or any other outcome ·
            2 bad command line or a request the API refused (4xx)
`;
