// The ceiling of each global serialization point, each on a scratch schema of its own, by
// driving the repository and kit functions the services run (docs/scale-out.md): the outbox
// relay of one schema, the webhook claim, the ingest queue's claim, and the per-partner locks
// of ingest notifications and webhook deliveries. No service runs; Postgres and NATS are the
// shared servers.
import { applyJetStreamTopology, jetStreamTopology } from '@pcp/service-kit';
import { fail, serverUrls } from '@pcp/setup';
import { connect } from 'nats';
import { envNumber } from '../../helpers.js';
import { cpuColumns, cpuMeter } from '../../load/cpu.js';
import { BenchPlatform } from '../../platform/bench-platform.js';
import { Report, type Row } from '../../report.js';
import { measureIngestClaims, measureNotify } from './ingest-queue.js';
import { measureOutbox } from './outbox.js';
import { scaling } from './tally.js';
import { measureWebhookClaim } from './webhook-claim.js';

export async function run(): Promise<void> {
  const seconds = envNumber('BENCH_SECONDS', 3);
  const outboxRows = envNumber('BENCH_OUTBOX_ROWS', 20_000);
  const deliveries = envNumber('BENCH_DELIVERIES', 20_000);
  const partners = envNumber('BENCH_PARTNERS', 200);
  if (![seconds, outboxRows, deliveries, partners].every((n) => n > 0)) {
    fail(
      new Error(
        'BENCH_SECONDS, BENCH_OUTBOX_ROWS, BENCH_DELIVERIES, BENCH_PARTNERS must be positive',
      ),
    );
  }
  const platform = await BenchPlatform.create({ port: 0, services: false, database: true });
  const withCpu = cpuMeter(platform);
  const report = new Report();
  const id = platform.subjectPrefix;

  /** Each section's rows with the CPU Postgres and NATS used meanwhile (seeding included). */
  async function section<R extends Row>(title: string, measure: () => Promise<R[]>): Promise<R[]> {
    const { rows, ...cpu } = await withCpu(['postgres', 'nats'], async () => ({
      rows: await measure(),
    }));
    report.table(
      title,
      rows.map((row) => ({ ...row, ...cpuColumns(cpu) })),
    );
    return rows;
  }

  const nc = await connect({ servers: serverUrls.nats, name: `bench-ceilings-${id}` });
  const jsm = await nc.jetstreamManager();
  await platform.run(
    async () => {
      await applyJetStreamTopology(jsm, jetStreamTopology(platform.subjectPrefix));
      const outbox = await section(
        `Outbox relay of one schema: ${outboxRows} events pending, published to JetStream`,
        () =>
          measureOutbox(platform, nc.jetstream(), {
            schema: `${id}_outbox`,
            rows: outboxRows,
            relays: [1, 2],
            seconds: 30,
          }),
      );
      const webhooks = await section(
        `Webhook claim: ${deliveries} due deliveries, each claim's rows settled as delivered`,
        () =>
          measureWebhookClaim(platform, {
            schema: `${id}_webhooks`,
            rows: deliveries,
            partners,
            runs: [{ workers: 1 }, { workers: 2 }, { workers: 1, partners: 1 }],
            seconds,
          }),
      );
      const ingest = await section(
        "Ingest queue: claim the fair queue's first run, end it, wake the next",
        () =>
          measureIngestClaims(platform, {
            schema: `${id}_ingest`,
            partners: 100,
            runs: [1, 2],
            seconds,
          }),
      );
      await section('Ingest notifications: the per-partner queue lock', () =>
        measureNotify(platform, { schema: `${id}_notify`, workers: 8, seconds }),
      );
      const scaled = (rows: { 'rows/s': number }[]) => scaling(rows[0]!, rows[1]!);
      report.verdicts.push(
        `a second relay: ×${scaled(outbox)} the events/s of one (serialized: about 1)`,
        `a second webhook claimer: ×${scaled(webhooks)} the rows/s of one`,
        `a second ingest claimer: ×${scaled(ingest)} the claims/s of one`,
      );
      report.print();
    },
    () => report.print(),
  );
  for await (const stream of jsm.streams.list()) {
    if (stream.config.name.startsWith(`${platform.subjectPrefix}_`)) {
      await jsm.streams.delete(stream.config.name);
    }
  }
  await nc.close();
}
