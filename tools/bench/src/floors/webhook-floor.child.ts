// The webhook floor's process (webhook-floor.ts): a JetStream pull consumer; per message a row
// inserted, the signed POST on a keep-alive connection, the row marked delivered, the ack.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import { AckPolicy, connect, type JsMsg } from 'nats';
import pg from 'pg';
import { announce, readStdin } from './child.js';

interface FloorEvent {
  id: string;
  occurredAt: string;
  version: number;
  data: {
    event: string;
    partnerId: string;
    orderId: string;
    storeId: string;
    state: string;
    status: string;
    previousStatus: string | null;
  };
}

const targets = JSON.parse((await readStdin()).toString('utf8')) as Record<
  string,
  { url: string; secret: string }
>;
const signers = new Map(
  Object.entries(targets).map(([partnerId, { url, secret }]) => [
    partnerId,
    { url: new URL(url), key: Buffer.from(secret.replace(/^whsec_/, ''), 'base64') },
  ]),
);
const stream = process.env.FLOOR_STREAM ?? '';
const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
const jsm = await nc.jetstreamManager();
await jsm.streams.add({ name: stream, subjects: [process.env.FLOOR_SUBJECT ?? ''] });
await jsm.consumers.add(stream, {
  durable_name: 'floor',
  ack_policy: AckPolicy.Explicit,
  max_ack_pending: 1024,
});
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
await pool.query(
  'create table if not exists webhook_floor (event_id uuid primary key, payload text not null, delivered_at timestamptz)',
);
const decoder = new TextDecoder();
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
const post = (url: URL, headers: Record<string, string>, body: string) =>
  new Promise<number | undefined>((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers, agent }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
    });
    request.on('error', reject);
    request.end(body);
  });

async function deliver(msg: JsMsg): Promise<void> {
  const event = JSON.parse(decoder.decode(msg.data)) as FloorEvent;
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
  if (!target) throw new Error(`no target for partner ${data.partnerId}`);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const signature = createHmac('sha256', target.key)
    .update(`${event.id}.${timestamp}.${payload}`)
    .digest('base64');
  await post(
    target.url,
    {
      'content-type': 'application/json',
      'webhook-id': event.id,
      'webhook-timestamp': timestamp,
      'webhook-signature': `v1,${signature}`,
    },
    payload,
  );
  await pool.query('update webhook_floor set delivered_at = now() where event_id = $1', [event.id]);
  msg.ack();
}

const consumer = await nc.jetstream().consumers.get(stream, 'floor');
const messages = await consumer.consume({ max_messages: 256 });
announce({ ready: true });
process.once('SIGTERM', () => process.exit(0));
for await (const msg of messages) {
  deliver(msg).catch((error: unknown) => {
    process.stderr.write(`[webhook-floor] ${String(error)}\n`);
    msg.nak();
  });
}
