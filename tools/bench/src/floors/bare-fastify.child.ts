// The bare Fastify baseline: one POST route returning the fixed body read from stdin.
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { announce, readStdin } from './child.js';

const body = (await readStdin()).toString('utf8');
const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
app.post('/*', (_request, reply) => {
  void reply.type('application/json; charset=utf-8').send(body);
});
await app.listen({ host: '127.0.0.1', port: 0 });
announce({ port: (app.server.address() as AddressInfo).port });
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
