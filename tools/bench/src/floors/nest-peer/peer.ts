// The NestJS peer: the platform's store GET as a typical NestJS app would serve it, an HTTP
// app and a microservice over the same NATS hop to Postgres, for the benches to divide by.
import { join } from 'node:path';
import pg from 'pg';
import { startFloorChild, type ChildStarter } from '../child.js';

/** Rows of the peer's table: enough that the lookup is an index scan, as the platform's. */
export const PEER_STORES = 10_000;

export interface NestPeerOptions {
  databaseUrl: string;
  natsUrl: string;
  /** The peer's own NATS subject prefix (its pattern and queue group are under it). */
  prefix: string;
  /** Child process names are `${names}http` and `${names}stores`. */
  names?: string;
}

/** Create and fill `peer_stores` in `databaseUrl`; resolves one store's id. */
async function seed(databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`
      CREATE TABLE peer_stores (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        partner_id uuid NOT NULL,
        name text NOT NULL,
        phone text NOT NULL,
        timezone text NOT NULL,
        address jsonb NOT NULL,
        fulfillment_types text[] NOT NULL,
        availability jsonb NOT NULL,
        delivery jsonb NOT NULL,
        pickup jsonb NOT NULL,
        tax_rate numeric NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    const { rows } = await client.query<{ id: string }>(
      `INSERT INTO peer_stores (partner_id, name, phone, timezone, address, fulfillment_types,
         availability, delivery, pickup, tax_rate)
       SELECT gen_random_uuid(), 'Peer Store ' || n, '+13125550100', 'America/Chicago',
         jsonb_build_object('address1', n || ' Main St', 'city', 'Chicago', 'state', 'IL',
           'postalCode', '60601', 'country', 'US', 'latitude', 41.88, 'longitude', -87.62),
         ARRAY['PICKUP', 'DELIVERY_BY_MERCHANT'],
         '[{"dayOfWeek": "Monday", "start": "08:00:00", "end": "22:00:00"}]'::jsonb,
         '{"radiusMeters": 5000, "fee": 299, "minimumOrder": 1500, "etaMinutes": 40}'::jsonb,
         '{"etaMinutes": 15}'::jsonb, 0.0875
       FROM generate_series(1, $1::int) AS n
       RETURNING id`,
      [PEER_STORES],
    );
    await client.query('ANALYZE peer_stores');
    return rows[Math.floor(rows.length / 2)]!.id;
  } finally {
    await client.end();
  }
}

/** Seed the table, start the microservice, then the HTTP app; resolves its URL and a store id. */
export async function startNestPeer(
  starter: ChildStarter,
  { databaseUrl, natsUrl, prefix, names = 'nest-' }: NestPeerOptions,
): Promise<{ url: string; storeId: string }> {
  const storeId = await seed(databaseUrl);
  const env = {
    NATS_URL: natsUrl,
    DATABASE_URL: databaseUrl,
    PEER_PREFIX: prefix,
    // tsx reads the working directory's tsconfig; Nest's decorators need this one's
    // experimentalDecorators.
    TSX_TSCONFIG_PATH: join(import.meta.dirname, '..', '..', '..', 'tsconfig.json'),
  };
  await startFloorChild(starter, `${names}stores`, 'floors/nest-peer/stores.child.ts', '', env);
  const { port } = await startFloorChild<{ port: number }>(
    starter,
    `${names}http`,
    'floors/nest-peer/http.child.ts',
    '',
    env,
  );
  return { url: `http://127.0.0.1:${port}`, storeId };
}
