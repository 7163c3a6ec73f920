import {
  CATALOG_SCHEMA,
  catalogEnvSchema,
  createCatalogService,
  type CatalogDatabase,
} from '@pcp/catalog';
import {
  createGatewayService,
  gatewayEnvSchema,
  type GatewayDatabase,
  type GatewayService,
} from '@pcp/gateway';
import { createPartner } from '@pcp/gateway/admin';
import {
  createOrderingService,
  ORDERING_SCHEMA,
  orderingEnvSchema,
  type OrderingDatabase,
} from '@pcp/ordering';
import {
  createPaymentsService,
  PAYMENTS_SCHEMA,
  paymentsEnvSchema,
  type PaymentsDatabase,
} from '@pcp/payments';
import { createProcessorSimulator, type ProcessorSimulator } from '@pcp/processor-simulator';
import {
  applyJetStreamTopology,
  createDatabase,
  jetStreamTopology,
  loadConfig,
  type Logger,
  type ServiceDeps,
  type ServiceMetrics,
  type ServiceInstance,
} from '@pcp/service-kit';
import { createStoresService, STORES_SCHEMA, type StoresDatabase } from '@pcp/stores';
import { GATEWAY_SCHEMA } from '@pcp/gateway';
import type { NatsUser, PartnerMode } from '@pcp/contracts';
import type { Kysely } from 'kysely';
import type { NatsConnection } from 'nats';
import type { TestEnvironment } from './environment.js';

export interface TestPlatform {
  readonly baseUrl: string;
  readonly gateway: GatewayService;
  /**
   * Another replica of the gateway (not started; the test stops it): the same database,
   * subjects and configuration, with `env` overriding it.
   */
  newGateway(env?: Record<string, string>): GatewayService;
  readonly gatewayDb: Kysely<GatewayDatabase>;
  readonly storesDb: Kysely<StoresDatabase>;
  readonly catalogDb: Kysely<CatalogDatabase>;
  readonly paymentsDb: Kysely<PaymentsDatabase>;
  readonly orderingDb: Kysely<OrderingDatabase>;
  /** The card processor simulator the payments service talks to (faults, charges). */
  readonly processor: ProcessorSimulator;
  /** Where it listens (for a payments process of the test's own). */
  readonly processorUrl: string;
  readonly payments: ReturnType<typeof createPaymentsService>;
  /** The running catalog service; tests stop and replace it (worker crash, scale-out). */
  catalog: ReturnType<typeof createCatalogService>;
  newCatalogService(env?: Record<string, string>): ReturnType<typeof createCatalogService>;
  /** The running stores service; tests stop and replace it to see the platform heal. */
  stores: ServiceInstance;
  /** The in-process ordering service; tests stop it to run ordering as its own process. */
  readonly ordering: ReturnType<typeof createOrderingService>;
  serviceDeps(service: string): ServiceDeps;
  /** Each in-process service's metrics (the latest instance's), by service name. */
  readonly metrics: ReadonlyMap<string, ServiceMetrics>;
  /**
   * A new partner with a working API key (distribution partners take both payment types); a
   * `test` key authenticates as the partner's test tenant, `testPartnerId`.
   */
  newPartner(
    kind: 'commerce' | 'distribution',
    options?: { paymentTypes?: string[]; mode?: PartnerMode },
  ): Promise<{ partnerId: string; testPartnerId: string; apiKey: string; keyId: string }>;
  stop(): Promise<void>;
}

/**
 * Every service and the gateway in this process, on the real servers, isolated by the
 * environment's database and prefixes. The gateway listens on a free port.
 */
export async function startPlatform(
  env: TestEnvironment,
  options: {
    gatewayEnv?: Record<string, string>;
    catalogEnv?: Record<string, string>;
    /** `PAYMENT_PROCESSOR_URL: undefined`: a deployment with no live processor. */
    paymentsEnv?: Record<string, string | undefined>;
    orderingEnv?: Record<string, string>;
    /** Every service's and the gateway's logger (default: the environment's). */
    logger?: Logger;
    /**
     * A connection per service (or the gateway), each as its own NATS user (default: the
     * environment's connection for all).
     */
    connections?: Partial<Record<NatsUser, NatsConnection>>;
    /**
     * The connection that applies the JetStream topology, as the migration step does (default:
     * the environment's); services only check it.
     */
    migrator?: NatsConnection;
    /**
     * The stores' and ordering's clock (default: the real one): tests of opening hours, local
     * midnights and acceptance deadlines move it.
     */
    clock?: () => Date;
  } = {},
): Promise<TestPlatform> {
  const { gatewayEnv = {}, catalogEnv = {}, paymentsEnv = {}, orderingEnv = {} } = options;
  const logger = options.logger ?? env.logger;
  const metrics = new Map<string, ServiceMetrics>();
  const serviceDeps = (service: string): ServiceDeps => {
    const serviceMetrics = env.newMetrics(service);
    metrics.set(service, serviceMetrics);
    return {
      nc: options.connections?.[service as NatsUser] ?? env.nc,
      logger,
      metrics: serviceMetrics,
      subjectPrefix: env.prefix,
      requestTimeoutMs: 2_000,
    };
  };
  const storesDb = createDatabase<StoresDatabase>({
    url: env.databaseUrl,
    schema: STORES_SCHEMA,
    applicationName: 'test-stores',
  });
  const gatewayDb = createDatabase<GatewayDatabase>({
    url: env.databaseUrl,
    schema: GATEWAY_SCHEMA,
    applicationName: 'test-gateway',
  });
  const catalogDb = createDatabase<CatalogDatabase>({
    url: env.databaseUrl,
    schema: CATALOG_SCHEMA,
    applicationName: 'test-catalog',
  });
  const orderingDb = createDatabase<OrderingDatabase>({
    url: env.databaseUrl,
    schema: ORDERING_SCHEMA,
    applicationName: 'test-ordering',
  });
  const paymentsDb = createDatabase<PaymentsDatabase>({
    url: env.databaseUrl,
    schema: PAYMENTS_SCHEMA,
    applicationName: 'test-payments',
  });
  // In memory (no dataDir): its ledger lasts as long as the test file's platform.
  const processor = createProcessorSimulator();
  const processorUrl = await processor.listen();
  const migrator = options.migrator ?? env.nc;
  // Tests host CatalogSets on local HTTP servers: plain http to loopback is admitted.
  const newCatalogService = (overrides: Record<string, string> = {}) => {
    const config = loadConfig(catalogEnvSchema, {
      CATALOG_FETCH_ALLOW_HTTP: 'true',
      CATALOG_FETCH_ALLOWLIST: '127.0.0.1/32',
      // Tests hold downloads open while they look; the rate floor is tested where it is set.
      CATALOG_INGEST_MIN_BYTES_PER_SEC: '0',
      ...catalogEnv,
      ...overrides,
    });
    const service = createCatalogService({ ...serviceDeps('catalog'), db: catalogDb, config });
    return {
      ...service,
      // Its consumer's ack wait is its lease: the migration step would declare it so.
      async start() {
        const topology = jetStreamTopology(env.prefix, {
          ingestLeaseMs: config.CATALOG_INGEST_LEASE_MS,
        });
        await applyJetStreamTopology(await migrator.jetstreamManager(), topology);
        await service.start();
      },
    };
  };
  let catalog = newCatalogService();
  const workers = {
    ordering: createOrderingService({
      ...serviceDeps('ordering'),
      db: orderingDb,
      config: loadConfig(orderingEnvSchema, orderingEnv),
      ...(options.clock ? { clock: options.clock } : {}),
    }),
    payments: createPaymentsService({
      ...serviceDeps('payments'),
      db: paymentsDb,
      config: loadConfig(paymentsEnvSchema, {
        // The simulator is both processors: live mode's (local runs have no real one) and
        // the sandbox of test mode.
        PAYMENT_PROCESSOR_URL: processorUrl,
        SANDBOX_PROCESSOR_URL: processorUrl,
        ...paymentsEnv,
      }),
    }),
  };
  let stores = createStoresService({
    ...serviceDeps('stores'),
    db: storesDb,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  await applyJetStreamTopology(await migrator.jetstreamManager(), jetStreamTopology(env.prefix));
  for (const worker of [...Object.values(workers), stores, catalog]) await worker.start();

  const newGateway = (overrides: Record<string, string> = {}) =>
    createGatewayService({
      nc: options.connections?.gateway ?? env.nc,
      db: gatewayDb,
      redis: env.redis,
      logger,
      metrics: env.newMetrics('gateway'),
      config: loadConfig(gatewayEnvSchema, {
        PORT: '0',
        HOST: '127.0.0.1',
        OPS_PORT: '0',
        OPS_HOST: '127.0.0.1',
        NATS_SUBJECT_PREFIX: env.prefix,
        REDIS_KEY_PREFIX: env.redisKeyPrefix,
        NATS_REQUEST_TIMEOUT_MS: '2000',
        ...gatewayEnv,
        ...overrides,
      }),
    });
  const gateway = newGateway();
  await gateway.start();

  return {
    baseUrl: gateway.url(),
    gateway,
    newGateway,
    gatewayDb,
    storesDb,
    get stores() {
      return stores;
    },
    set stores(replacement) {
      stores = replacement;
    },
    catalogDb,
    paymentsDb,
    orderingDb,
    processor,
    processorUrl,
    payments: workers.payments,
    ordering: workers.ordering,
    get catalog() {
      return catalog;
    },
    set catalog(replacement) {
      catalog = replacement;
    },
    newCatalogService,
    serviceDeps,
    metrics,
    newPartner: (kind, partner) =>
      createPartner(gatewayDb, { kind, name: `test ${kind} partner`, ...partner }),
    async stop() {
      await gateway.stop();
      for (const worker of [...Object.values(workers), stores, catalog]) await worker.stop();
      await processor.close();
      await Promise.all([
        storesDb.destroy(),
        gatewayDb.destroy(),
        catalogDb.destroy(),
        paymentsDb.destroy(),
        orderingDb.destroy(),
      ]);
    },
  };
}
