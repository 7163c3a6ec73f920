// The floor, part 2: Fastify passing the body unparsed to FLOOR_SUBJECT and the reply's
// bytes back (the gateway's path without keys, rate limits, headers or metrics).
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { connect } from 'nats';
import { announce } from './child.js';

const subject = process.env.FLOOR_SUBJECT ?? '';
const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
app.removeContentTypeParser('application/json');
app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
  done(null, body),
);
app.post('/*', async (request, reply) => {
  const answer = await nc.request(subject, request.body as Buffer, { timeout: 5000 });
  const { buffer, byteOffset, byteLength } = answer.data;
  return reply
    .type('application/json; charset=utf-8')
    .send(Buffer.from(buffer, byteOffset, byteLength));
});
await app.listen({ host: '127.0.0.1', port: 0 });
announce({ port: (app.server.address() as AddressInfo).port });
process.once(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => nc.drain())
      .then(() => process.exit(0)),
);
