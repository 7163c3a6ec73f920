// The floor of webhook delivery for bench:webhooks: what any durable, at-least-once
// dispatcher must do per event, and nothing else. A JetStream pull consumer on a stream of
// its own; for each message, a row inserted (committed), the Standard Webhooks signature,
// an HTTP POST on a new connection (as ordering's, whose address check is per connection),
// the row marked delivered (committed), the ack. No in-order rule, leases, per-partner cap,
// breaker, retry schedule or metrics.
import { randomUUID } from 'node:crypto';
import { root, serverUrls } from './setup.mjs';

const FLOOR_SOURCE = `
import http from 'node:http';
import { AckPolicy, connect } from 'nats';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const targets = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const signers = new Map(
  Object.entries(targets).map(([partnerId, { url, secret }]) => [
    partnerId,
    { url: new URL(url), webhook: new Webhook(secret) },
  ]),
);
const { FLOOR_STREAM, FLOOR_SUBJECT } = process.env;
const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
const jsm = await nc.jetstreamManager();
await jsm.streams.add({ name: FLOOR_STREAM, subjects: [FLOOR_SUBJECT] });
await jsm.consumers.add(FLOOR_STREAM, {
  durable_name: 'floor',
  ack_policy: AckPolicy.Explicit,
  max_ack_pending: 1024,
});
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(
  'create table if not exists webhook_floor (event_id uuid primary key, payload text not null, delivered_at timestamptz)',
);
const decoder = new TextDecoder();
const post = (url, headers, body) =>
  new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
    });
    request.on('error', reject);
    request.end(body);
  });
async function deliver(msg) {
  const event = JSON.parse(decoder.decode(msg.data));
  const { data } = event;
  const payload = JSON.stringify({
    type: data.event,
    timestamp: event.occurredAt,
    data: {
      orderId: data.orderId,
      storeId: data.storeId,
      state: data.state,
      status: data.status,
      previousStatus: data.previousStatus,
      version: event.version,
    },
  });
  await pool.query(
    'insert into webhook_floor (event_id, payload) values ($1, $2) on conflict do nothing',
    [event.id, payload],
  );
  const target = signers.get(data.partnerId);
  const sentAt = new Date();
  await post(
    target.url,
    {
      'content-type': 'application/json',
      'webhook-id': event.id,
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      'webhook-signature': target.webhook.sign(event.id, sentAt, payload),
    },
    payload,
  );
  await pool.query('update webhook_floor set delivered_at = now() where event_id = $1', [event.id]);
  msg.ack();
}
const consumer = await nc.jetstream().consumers.get(FLOOR_STREAM, 'floor');
const messages = await consumer.consume({ max_messages: 256 });
process.stdout.write(JSON.stringify({ ready: true }) + '\\n');
process.once('SIGTERM', () => process.exit(0));
for await (const msg of messages) {
  deliver(msg).catch((error) => {
    process.stderr.write('[webhook-floor] ' + String(error) + '\\n');
    msg.nak();
  });
}
`;

/**
 * Start the floor as the child `webhook-floor`, delivering to `targets` (partnerId → {url,
 * secret}); resolves the subject to publish its events on.
 */
export async function startWebhookFloor(platform, targets) {
  const id = randomUUID().slice(0, 8);
  const subject = `${platform.subjectPrefix}_floor_${id}.events`;
  const child = platform.startChild('webhook-floor', ['--input-type=module', '-e', FLOOR_SOURCE], {
    cwd: root,
    env: {
      ...process.env,
      NATS_URL: serverUrls.nats,
      DATABASE_URL: platform.databaseUrl.toString(),
      FLOOR_STREAM: `${platform.subjectPrefix}_floor_${id}`,
      FLOOR_SUBJECT: subject,
    },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  child.stdin.end(JSON.stringify(targets));
  await new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`webhook-floor exited (code ${code})`)));
  });
  return subject;
}
