// The architecture's floor, part 1: a NATS responder answering every request on FLOOR_SUBJECT
// with the fixed body read from stdin (no parsing, validation or pricing). With FLOOR_JSON
// set it does the JSON work no service can skip: it parses each request and serializes the
// reply (parsed once, at start) for each reply.
import { connect, type Msg } from 'nats';
import { announce, readStdin } from './child.js';

const body = await readStdin();
const pricedCart: unknown = JSON.parse(body.toString('utf8'));
const decoder = new TextDecoder();
const encoder = new TextEncoder();
const answer = process.env.FLOOR_JSON
  ? (msg: Msg) => {
      JSON.parse(decoder.decode(msg.data));
      return encoder.encode(JSON.stringify(pricedCart));
    }
  : () => body;
const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
nc.subscribe(process.env.FLOOR_SUBJECT ?? '', {
  queue: 'floor',
  callback: (error, msg) => {
    if (!error) msg.respond(answer(msg));
  },
});
await nc.flush();
announce({ ready: true });
process.once('SIGTERM', () => void nc.drain().then(() => process.exit(0)));
