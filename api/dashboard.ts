import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { NotFound } from './errors';

/** Where `npm run build:dashboard` writes the dashboard (scripts/build-dashboard.ts). */
const builtDashboardDir = resolve(__dirname, '..', 'dist', 'dashboard');

/**
 * The page's Content-Security-Policy: everything from this origin only; no inline script or
 * style, no eval, no plugin, no framing; data calls (fetch) to this origin only.
 */
export const dashboardCsp = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The files of a build, by the name they are served under, with their media type. */
const assets: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/**
 * The operator's dashboard (dashboard/, built into dist/dashboard/), served at /dashboard/ from
 * the same origin as the API. Its static files need no token (they hold no data); every data
 * call the page makes goes to /v1 with the tab's bearer token. Hidden from the OpenAPI document.
 */
export const dashboardRoutes: FastifyPluginAsync<{ dir?: string }> = async (app, { dir = builtDashboardDir }) => {
  const headers = (reply: FastifyReply, type: string) =>
    reply.headers({
      'content-type': type,
      'content-security-policy': dashboardCsp,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-resource-policy': 'same-origin',
      'permissions-policy': 'camera=(), microphone=(), geolocation=()',
      // A rebuilt dashboard is picked up at once: revalidate every time (the files are small).
      'cache-control': 'no-cache',
    });
  const serve = async (name: string, reply: FastifyReply) => {
    const type = assets[name];
    if (!type) throw new NotFound(`no dashboard file ${name}`);
    let body: Buffer;
    try {
      body = await readFile(join(dir, name));
    } catch {
      throw new NotFound(`the dashboard is not built (${join(dir, name)} is missing): run npm run build:dashboard`);
    }
    return headers(reply, type).send(body);
  };

  app.get('/dashboard', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/dashboard/', 308));
  app.get('/dashboard/', { schema: { hide: true } }, async (_request, reply) => serve('index.html', reply));
  app.get<{ Params: { file: string } }>('/dashboard/:file', { schema: { hide: true } }, async (request, reply) => serve(request.params.file, reply));
};
