// The baselines the benches measure the platform against in the same run: a bare Fastify
// route, and the architecture's floor (Fastify passing the body over NATS to a responder,
// doing the platform's I/O with none of its work), each answering a fixed body.
import { randomUUID } from 'node:crypto';
import { root, serverUrls } from './setup.mjs';

/** The bare Fastify baseline: one POST route returning a fixed body read from stdin. */
const BASELINE_SOURCE = `
import Fastify from 'fastify';
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const body = Buffer.concat(chunks).toString('utf8');
const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
app.post('/*', (request, reply) => {
  reply.type('application/json; charset=utf-8').send(body);
});
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(JSON.stringify({ port: app.server.address().port }) + '\\n');
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
`;

/**
 * The architecture's floor, part 1: a NATS responder answering every request on
 * FLOOR_SUBJECT with the fixed body read from stdin (no parsing, validation or pricing).
 * With FLOOR_JSON set it does the JSON work no service can skip: it parses each request
 * and serializes the reply (parsed once, at start) for each reply.
 */
const FLOOR_RESPONDER_SOURCE = `
import { connect } from 'nats';
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const body = Buffer.concat(chunks);
const pricedCart = JSON.parse(body.toString('utf8'));
const decoder = new TextDecoder();
const encoder = new TextEncoder();
const answer = process.env.FLOOR_JSON
  ? (msg) => {
      JSON.parse(decoder.decode(msg.data));
      return encoder.encode(JSON.stringify(pricedCart));
    }
  : () => body;
const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
nc.subscribe(process.env.FLOOR_SUBJECT, {
  queue: 'floor',
  callback: (error, msg) => {
    if (!error) msg.respond(answer(msg));
  },
});
await nc.flush();
process.stdout.write(JSON.stringify({ ready: true }) + '\\n');
process.once('SIGTERM', () => nc.drain().then(() => process.exit(0)));
`;

/**
 * The floor, part 2: Fastify passing the body unparsed to FLOOR_SUBJECT and the reply's
 * bytes back (the gateway's path without keys, rate limits, headers or metrics).
 */
const FLOOR_FORWARDER_SOURCE = `
import Fastify from 'fastify';
import { connect } from 'nats';
const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
app.removeContentTypeParser('application/json');
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) =>
  done(null, body),
);
app.post('/*', async (request, reply) => {
  const answer = await nc.request(process.env.FLOOR_SUBJECT, request.body, { timeout: 5000 });
  const { buffer, byteOffset, byteLength } = answer.data;
  return reply
    .type('application/json; charset=utf-8')
    .send(Buffer.from(buffer, byteOffset, byteLength));
});
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(JSON.stringify({ port: app.server.address().port }) + '\\n');
process.once('SIGTERM', () => app.close().then(() => nc.drain()).then(() => process.exit(0)));
`;

/** Start `source` as a child named `name` with `input` on stdin; resolves its first JSON line. */
async function startInlineChild(platform, name, source, input, env = {}) {
  // -e modules resolve bare specifiers from the working directory: the workspace root.
  const child = platform.startChild(name, ['--input-type=module', '-e', source], {
    cwd: root,
    env: { ...process.env, NATS_URL: serverUrls.nats, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin.end(input);
  const line = await new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve(text.split('\n')[0]);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited (code ${code})`)));
  });
  return JSON.parse(line);
}

/** The bare Fastify baseline answering `responseBody`; resolves its base URL. */
export const startBaseline = async (platform, responseBody) =>
  `http://127.0.0.1:${(await startInlineChild(platform, 'fastify', BASELINE_SOURCE, responseBody)).port}`;

/**
 * The floor answering `responseBody`: a forwarder and responder named `${prefix}forwarder`
 * and `${prefix}responder`; resolves the forwarder's base URL (any POST path).
 */
export async function startFloor(platform, responseBody, { prefix = '', json = false } = {}) {
  const env = {
    FLOOR_SUBJECT: `bench_floor_${randomUUID()}`,
    ...(json ? { FLOOR_JSON: 'true' } : {}),
  };
  await startInlineChild(platform, `${prefix}responder`, FLOOR_RESPONDER_SOURCE, responseBody, env);
  const { port } = await startInlineChild(
    platform,
    `${prefix}forwarder`,
    FLOOR_FORWARDER_SOURCE,
    '',
    env,
  );
  return `http://127.0.0.1:${port}`;
}
