import { createServer } from 'node:net';

/** One pick: a TCP port on loopback that was free a moment ago. */
async function pick(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Picks from `pick` that were never handed out before by this picker (100 tries a call). */
export function uniquePicks(pick: () => Promise<number>): () => Promise<number> {
  const handedOut = new Set<number>();
  return async () => {
    for (let attempt = 0; attempt < 100; attempt += 1) {
      const port = await pick();
      if (handedOut.has(port)) continue;
      handedOut.add(port);
      return port;
    }
    throw new Error('no free loopback port that this process has not handed out already (100 picks)');
  };
}

/**
 * A TCP port on loopback that was free a moment ago, and that this process has not handed out
 * before: a port is picked now and bound later by someone else (a child process, a listener started
 * after more picks), and the system may offer a port that was just closed again — two picks of one
 * stack (the worker's metrics and the API) once got the same port, and the second to bind failed
 * with EADDRINUSE. A port is handed out once per process.
 */
export const freePort: () => Promise<number> = uniquePicks(pick);
