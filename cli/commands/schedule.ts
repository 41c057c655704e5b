import { ExitCode, UsageError } from '../errors';
import { scheduleLines, scheduleListLines } from '../render';
import { parseCommand, positionals, writeLines, type CliContext } from '../context';
import { repoArgument } from './land';

const subcommands = ['list', 'create', 'show', 'trigger', 'delete'] as const;

/** `tarmac schedule list | create | show | trigger | delete`: nightly schedules (/v1/schedules). */
export async function scheduleCommand(args: string[], context: CliContext): Promise<ExitCode> {
  const [sub, ...rest] = args;
  if (sub === undefined) throw new UsageError(`schedule: missing <${subcommands.join('|')}>`);
  const client = () => context.client();
  switch (sub) {
    case 'list': {
      const parsed = parseCommand('schedule list', rest, { json: { type: 'boolean' } });
      positionals('schedule list', parsed.positionals, []);
      const schedules = await client().schedules();
      if (parsed.values.json) context.stdout.write(`${JSON.stringify({ schedules }, null, 2)}\n`);
      else writeLines(context.stdout, scheduleListLines(schedules));
      return ExitCode.ok;
    }
    case 'create': {
      const parsed = parseCommand('schedule create', rest, {
        cron: { type: 'string' },
        timezone: { type: 'string' },
        paused: { type: 'boolean' },
        implementer: { type: 'string' },
        json: { type: 'boolean' },
      });
      const [repo, target] = positionals('schedule create', parsed.positionals, ['repo', 'target']);
      const { cron, timezone, paused, implementer, json } = parsed.values;
      const created = await client().createSchedule({
        repo: repoArgument(repo!, context.cwd),
        target: target!,
        ...(cron !== undefined ? { cron } : {}),
        ...(timezone !== undefined ? { timezone } : {}),
        ...(paused ? { paused: true } : {}),
        ...(implementer ? { agents: { implementer } } : {}),
      });
      if (json) {
        context.stdout.write(`${JSON.stringify(created, null, 2)}\n`);
        return ExitCode.ok;
      }
      writeLines(context.stdout, [
        `${created.duplicate ? 'schedule already exists' : 'schedule created'}: ${created.id}${created.paused ? ' (paused)' : ''}`,
        `  every "${created.cron}" (${created.timezone}) on ${created.target}; next run: ${created.nextRuns[0] ?? 'none'}`,
        `  run it now with: tarmac schedule trigger ${created.id}`,
      ]);
      return ExitCode.ok;
    }
    case 'show': {
      const parsed = parseCommand('schedule show', rest, { json: { type: 'boolean' } });
      const [id] = positionals('schedule show', parsed.positionals, ['id']);
      const view = await client().schedule(id!);
      if (parsed.values.json) context.stdout.write(`${JSON.stringify(view, null, 2)}\n`);
      else writeLines(context.stdout, scheduleLines(view));
      return ExitCode.ok;
    }
    case 'trigger': {
      const parsed = parseCommand('schedule trigger', rest, {});
      const [id] = positionals('schedule trigger', parsed.positionals, ['id']);
      await client().triggerSchedule(id!);
      writeLines(context.stdout, [`schedule ${id} triggered: a nightly run starts now`, `  see it with: tarmac schedule show ${id}`]);
      return ExitCode.ok;
    }
    case 'delete': {
      const parsed = parseCommand('schedule delete', rest, {});
      const [id] = positionals('schedule delete', parsed.positionals, ['id']);
      await client().deleteSchedule(id!);
      writeLines(context.stdout, [`schedule ${id} deleted: no new runs start (a run in progress finishes)`]);
      return ExitCode.ok;
    }
    default:
      throw new UsageError(`schedule: unknown subcommand "${sub}" (${subcommands.join(', ')})`);
  }
}
