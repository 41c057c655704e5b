/** Resolves on the first SIGINT or SIGTERM; a second one exits at once. */
export function onceStopRequested(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let seen = false;
    const handler = (signal: NodeJS.Signals) => {
      if (seen) process.exit(130);
      seen = true;
      resolve(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}
