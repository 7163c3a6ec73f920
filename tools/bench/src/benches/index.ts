// Every bench by the name `npm run bench -- <name>` takes, in the order the umbrella run runs them.
export interface Bench {
  summary: string;
  run: () => Promise<void>;
}

const lazy = (load: () => Promise<{ run: () => Promise<void> }>) => async (): Promise<void> =>
  (await load()).run();

export const BENCHES = {
  baselines: {
    summary: 'bare Fastify, the floor (Fastify → NATS → fixed reply) and the NestJS peer',
    run: lazy(() => import('./baselines.js')),
  },
  ingest: {
    summary: 'CatalogSet ingest by size, and the catalog service answering while it ingests',
    run: lazy(() => import('./ingest.js')),
  },
  'ingest-fairness': {
    summary: "one partner's ingest latency, idle and while another partner floods",
    run: lazy(() => import('./ingest-fairness.js')),
  },
  stores: {
    summary: 'store lookups of 10,000 distinct stores through gateway → NATS → stores → Postgres',
    run: lazy(() => import('./stores.js')),
  },
  discovery: {
    summary: 'store discovery over 100k seeded stores, and a dense city',
    run: lazy(() => import('./discovery/index.js')),
  },
  'discovery-dense': {
    summary: 'store discovery in a dense city (1,000 stores within 25 km), 50 connections',
    run: lazy(() => import('./discovery/dense.js')),
  },
  cart: {
    summary: 'cart pricing (add, reprice) against bare Fastify and the floors',
    run: lazy(() => import('./cart.js')),
  },
  payments: {
    summary: 'card authorizations through payments, the processor alone, the breaker open',
    run: lazy(() => import('./payments.js')),
  },
  orders: {
    summary: 'order validate, place and idempotent replay, against the floor',
    run: lazy(() => import('./orders.js')),
  },
  webhooks: {
    summary: 'order-status webhook delivery, with a failing partner, against the webhook floor',
    run: lazy(() => import('./webhooks/index.js')),
  },
  'store-webhooks': {
    summary: 'a store event fanned out to 1,000 partners, order webhooks measured meanwhile',
    run: lazy(() => import('./store-webhooks.js')),
  },
  acceptance: {
    summary: 'a burst of due card orders cancelled and refunded by the acceptance sweeper',
    run: lazy(() => import('./acceptance.js')),
  },
  memory: {
    summary:
      "sustained place, validate, GET store and replay; peak RSS against the manifests' limits",
    run: lazy(() => import('./memory/index.js')),
  },
  ceilings: {
    summary:
      'the ceiling of each global serialization point: outbox relay, webhook and ingest claims',
    run: lazy(() => import('./ceilings/index.js')),
  },
} satisfies Record<string, Bench>;

export type BenchName = keyof typeof BENCHES;

export const isBenchName = (name: string): name is BenchName => Object.hasOwn(BENCHES, name);
