/**
 * The Postgres connection budget of a rendered overlay: for each role, the most connections its
 * pods can hold at once (pool size × the most pods its Deployment can run, plus its migration
 * step), against the Cluster's max_connections less the superuser reserve. deploy/k8s/README.md
 * shows the same table; manifests.test.ts checks both.
 */
import { containersOf, envValue, type Doc } from './kustomize.js';

/** DB_POOL_MAX when neither the container nor pcp-config sets it (service-kit's default). */
export const DEFAULT_POOL_MAX = 10;
/** PostgreSQL's default superuser_reserved_connections. */
const DEFAULT_SUPERUSER_RESERVED = 3;

export interface BudgetLine {
  /** The Postgres role, found through the Secret its DATABASE_URL comes from. */
  readonly role: string;
  readonly secret: string;
  readonly poolSize: number;
  /** The Deployment's most pods: HPA maxReplicas (or replicas) plus the rollout's maxSurge. */
  readonly maxPods: number;
  /** Connections of its step in the migration Job. */
  readonly migration: number;
  readonly total: number;
  /** The role's connectionLimit in the Cluster (-1: none). */
  readonly connectionLimit: number;
}

export interface Budget {
  readonly lines: readonly BudgetLine[];
  readonly total: number;
  readonly maxConnections: number;
  readonly superuserReserved: number;
  /** max_connections - superuser_reserved_connections: what roles without SUPERUSER share. */
  readonly available: number;
}

function databaseSecret(container: Doc): string | undefined {
  const variable = ((container.env as Doc[] | undefined) ?? []).find(
    (e) => e.name === 'DATABASE_URL',
  );
  return variable?.valueFrom?.secretKeyRef?.name as string | undefined;
}

function poolSize(docs: readonly Doc[], container: Doc): number {
  return Number(envValue(docs, container, 'DB_POOL_MAX') ?? DEFAULT_POOL_MAX);
}

/** maxSurge as pods: an integer, or a percentage of replicas rounded up (default 25 %). */
function surge(deployment: Doc, replicas: number): number {
  if (deployment.spec.strategy?.type === 'Recreate') return 0;
  const value = (deployment.spec.strategy?.rollingUpdate?.maxSurge as number | string) ?? '25%';
  return typeof value === 'number' ? value : Math.ceil((Number.parseFloat(value) / 100) * replicas);
}

export function connectionBudget(docs: readonly Doc[], cluster: Doc): Budget {
  const roles = (cluster.spec.managed?.roles as Doc[] | undefined) ?? [];
  const roleOf = (secret: string) => {
    const role = roles.find((r) => r.passwordSecret?.name === secret);
    if (!role) throw new Error(`no role of the Cluster takes its password from Secret ${secret}`);
    return role;
  };
  const lines = new Map<
    string,
    { secret: string; pool: number; pods: number; migration: number }
  >();
  const line = (secret: string) => {
    let entry = lines.get(secret);
    if (!entry) lines.set(secret, (entry = { secret, pool: 0, pods: 0, migration: 0 }));
    return entry;
  };

  for (const doc of docs) {
    if (doc.kind === 'Deployment') {
      for (const container of containersOf(doc)) {
        const secret = databaseSecret(container);
        if (!secret) continue;
        const hpa = docs.find(
          (d) =>
            d.kind === 'HorizontalPodAutoscaler' &&
            d.spec.scaleTargetRef.kind === 'Deployment' &&
            d.spec.scaleTargetRef.name === doc.metadata.name,
        );
        const replicas = Number(hpa?.spec.maxReplicas ?? doc.spec.replicas ?? 1);
        const entry = line(secret);
        entry.pool = poolSize(docs, container);
        entry.pods += replicas + surge(doc, replicas);
      }
    } else if (doc.kind === 'Job') {
      for (const container of containersOf(doc)) {
        const secret = databaseSecret(container);
        if (secret) line(secret).migration += poolSize(docs, container);
      }
    }
  }

  const budgetLines = [...lines.values()].map(({ secret, pool, pods, migration }) => {
    const role = roleOf(secret);
    return {
      role: role.name as string,
      secret,
      poolSize: pool,
      maxPods: pods,
      migration,
      total: pool * pods + migration,
      connectionLimit: Number(role.connectionLimit ?? -1),
    };
  });
  const parameters = (cluster.spec.postgresql?.parameters as Record<string, string>) ?? {};
  const maxConnections = Number(parameters.max_connections ?? 100);
  const superuserReserved = Number(
    parameters.superuser_reserved_connections ?? DEFAULT_SUPERUSER_RESERVED,
  );
  return {
    lines: budgetLines,
    total: budgetLines.reduce((sum, l) => sum + l.total, 0),
    maxConnections,
    superuserReserved,
    available: maxConnections - superuserReserved,
  };
}

/** What is wrong with a budget; empty when every role fits and the roles fit together. */
export function budgetProblems(budget: Budget): string[] {
  const problems: string[] = [];
  if (budget.total > budget.available) {
    problems.push(
      `the services can open ${budget.total} connections, over the ${budget.available} that ` +
        `max_connections ${budget.maxConnections} less ${budget.superuserReserved} reserved allows`,
    );
  }
  for (const l of budget.lines) {
    if (l.connectionLimit !== -1 && l.connectionLimit < l.total) {
      problems.push(`role ${l.role}: connectionLimit ${l.connectionLimit} < its ${l.total}`);
    }
  }
  const limits = budget.lines.reduce((sum, l) => sum + Math.max(l.connectionLimit, 0), 0);
  if (budget.lines.some((l) => l.connectionLimit === -1) || limits > budget.available) {
    problems.push(
      `the roles' connection limits (${limits}) must each be set and add up to at most ${budget.available}`,
    );
  }
  return problems;
}
