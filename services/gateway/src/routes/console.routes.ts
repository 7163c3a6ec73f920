import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The partner console's build (`packages/console/dist`, made by `vite build`), four levels
 * above this module in `src/routes` and `dist/routes` alike (the image copies it there too).
 */
export const consoleDirectory = fileURLToPath(
  new URL('../../../../packages/console/dist/', import.meta.url),
);

/**
 * What the console's pages may load: only its own files and API. No inline script or style
 * (Vite emits none; the app sets classes, never `style=`), no framing, no plugins.
 */
export const consoleSecurityPolicy = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
};

/** A build holds a handful of files: more, or bigger, is not a console build. */
const MAX_FILES = 200;
const MAX_TOTAL_BYTES = 20 * 1024 * 1024;

interface ConsoleFile {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
  readonly cacheControl: string;
}

/**
 * Every file of the build by its path under /console (`assets/index-3f2a.js`), read once:
 * requests are answered from memory, so no request path ever reaches the filesystem.
 * Vite names what is under `assets/` by its content hash: those are immutable.
 */
export function loadConsoleFiles(directory: string): ReadonlyMap<string, ConsoleFile> {
  const files = new Map<string, ConsoleFile>();
  let totalBytes = 0;
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) {
        walk(path);
        continue;
      }
      const type = contentTypes[extname(entry.name)];
      if (!entry.isFile() || !type) continue;
      totalBytes += statSync(path).size;
      if (files.size >= MAX_FILES || totalBytes > MAX_TOTAL_BYTES) {
        throw new Error(`${directory} holds more than a console build (${MAX_FILES} files)`);
      }
      const name = relative(directory, path).split(sep).join('/');
      const body = readFileSync(path);
      files.set(name, {
        body,
        type,
        etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
        cacheControl: name.startsWith('assets/')
          ? 'public, max-age=31536000, immutable'
          : name === 'index.html'
            ? 'no-cache'
            : 'public, max-age=300',
      });
    }
  };
  try {
    walk(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (!files.has('index.html')) {
    throw new Error(
      `The partner console is not built (no ${join(directory, 'index.html')}): ` +
        'run `npm run build` (or `npm start`, which builds it)',
    );
  }
  return files;
}

/** A client-side route of the app (`stores/9b1…/hours`): letters, digits, `-`, `_` and `/`. */
const CLIENT_ROUTE = /^[A-Za-z0-9_/-]{0,512}$/;

export interface ConsoleRoutesOptions {
  /** The console's build folder (default: {@link consoleDirectory}). */
  readonly directory?: string;
}

/**
 * The partner console at `/console`: its built files, and its index.html for any client
 * route under `/console/`, with a strict CSP. A path that is neither (a `..`, encoded or not,
 * or a missing asset) is 404.
 */
export const consoleRoutes: FastifyPluginAsync<ConsoleRoutesOptions> = async (app, options) => {
  const files = loadConsoleFiles(options.directory ?? consoleDirectory);
  const index = files.get('index.html')!;

  const send = (ifNoneMatch: string | undefined, reply: FastifyReply, file: ConsoleFile) => {
    reply
      .header('content-security-policy', consoleSecurityPolicy)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cross-origin-opener-policy', 'same-origin')
      .header('cache-control', file.cacheControl)
      .header('etag', file.etag);
    if (ifNoneMatch === file.etag) return reply.code(304).send();
    return reply.type(file.type).send(file.body);
  };

  const hidden = { schema: { hide: true } };
  app.get('/console', hidden, (request, reply) =>
    send(request.headers['if-none-match'], reply, index),
  );
  app.get<{ Params: { '*': string } }>('/console/*', hidden, (request, reply) => {
    const path = request.params['*'];
    const file = files.get(path) ?? (CLIENT_ROUTE.test(path) ? index : undefined);
    if (!file) return reply.callNotFound();
    return send(request.headers['if-none-match'], reply, file);
  });
};
