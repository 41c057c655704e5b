import type { Context } from '@temporalio/activity';

/**
 * What each running activity last heartbeated (the container id a gate suite or session runs in),
 * by its Context. The worker heartbeats every running activity (worker/heartbeat.ts) and repeats
 * these details, so its keep-alive never wipes what the activity reported, and an activity that is
 * busy before its first heartbeat of its own (exporting a tree, copying a workspace) is kept alive too.
 */
const lastDetails = new WeakMap<Context, unknown>();

/** Heartbeats these details now and makes them the ones the worker's keep-alive repeats. */
export function heartbeatWith(context: Context, details: unknown): void {
  lastDetails.set(context, details);
  context.heartbeat(details);
}

/** The details the activity last heartbeated through `heartbeatWith` (undefined when none). */
export function lastHeartbeatDetails(context: Context): unknown {
  return lastDetails.get(context);
}
