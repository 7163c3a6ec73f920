/**
 * Checks of the Kubernetes manifests (deploy/k8s, deploy/postgres) as the real kustomize
 * renders them (`kubectl kustomize`), and of docker-compose.yml. Every rendered object is
 * validated strictly against the Kubernetes 1.30 schemas (and the CloudNativePG Cluster CRD):
 * a field the API does not define is an error. Network policies: network-policies.test.ts.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, relative, resolve } from 'node:path';
import { gatewayDefaultPort, platformOpsPorts, platformServices } from '@pcp/contracts';
import { platformProcesses, processDefinition } from '@pcp/platform';
import { productionDatabaseUrlProblem } from '@pcp/service-kit';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { budgetProblems, connectionBudget } from './connection-budget.js';
import { schemaErrors } from './kubernetes-schema.js';
import {
  containersOf,
  cpuMillis,
  DEPLOY_DIR,
  envValue,
  find,
  K8S_DIR,
  KUBECTL,
  KUSTOMIZATIONS,
  memoryBytes,
  podSpecOf,
  POSTGRES_DIR,
  render,
  SERVICES,
  type Doc,
} from './kustomize.js';

const REPO_ROOT = resolve(DEPLOY_DIR, '..');
/** The platform's list of processes (tools/platform) is what the manifests and compose run. */
const OPS_PORTS: Record<string, number> = platformOpsPorts;
/** The Deployment every overlay runs besides the services: the sandbox card processor. */
const SIMULATOR = 'processor-simulator';
const EXTRA: readonly string[] = [SIMULATOR];
const SIMULATOR_PORT = processDefinition('processor-simulator').opsPort;
/** Where the simulator keeps its state: its volume in a pod, a named volume in compose. */
const SIMULATOR_DATA_DIR = '/var/lib/processor-simulator';
/** Only payments may read the card processor's endpoint and key. */
const PROCESSOR_SECRET = 'pcp-payment-processor';
const IMAGE = 'ghcr.io/example/pcp';
/** The Postgres server's CA (a copy of CloudNativePG's pcp-db-ca) and where workloads mount it. */
const POSTGRES_CA_SECRET = 'pcp-db-ca';
const POSTGRES_CA_DIR = '/etc/pcp/postgres-ca';
const WORKLOAD_KINDS = new Set(['Deployment', 'Job']);

const RENDERED: Record<keyof typeof KUSTOMIZATIONS, Doc[]> = KUBECTL
  ? {
      base: render(KUSTOMIZATIONS.base),
      local: render(KUSTOMIZATIONS.local),
      production: render(KUSTOMIZATIONS.production),
    }
  : { base: [], local: [], production: [] };
const POSTGRES: Doc[] = KUBECTL ? render(POSTGRES_DIR) : [];

function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry) ? [path] : [];
  });
}

function loadDocs(file: string): Doc[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).flatMap((doc) => {
    if (doc.errors.length > 0)
      throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as Doc | null;
    return value ? [value] : [];
  });
}

/** Secret name → the keys workloads read from it (envFrom reads every key: '*'). */
function secretReads(docs: readonly Doc[]): Map<string, Set<string>> {
  const reads = new Map<string, Set<string>>();
  const add = (name: string, key: string) => {
    if (!reads.has(name)) reads.set(name, new Set());
    reads.get(name)!.add(key);
  };
  for (const doc of docs) {
    for (const volume of (podSpecOf(doc)?.volumes as Doc[] | undefined) ?? []) {
      const secret = volume.secret as Doc | undefined;
      if (!secret) continue;
      const items = (secret.items as Doc[] | undefined) ?? [{ key: '*' }];
      for (const item of items) add(secret.secretName as string, item.key as string);
    }
  }
  for (const container of docs.flatMap(containersOf)) {
    for (const source of (container.envFrom as Doc[] | undefined) ?? [])
      if (source.secretRef) add(source.secretRef.name as string, '*');
    for (const variable of (container.env as Doc[] | undefined) ?? []) {
      const ref = variable.valueFrom?.secretKeyRef as Doc | undefined;
      if (ref) add(ref.name as string, ref.key as string);
    }
  }
  return reads;
}

const envOf = (container: Doc) =>
  Object.fromEntries(
    ((container.env as Doc[] | undefined) ?? []).map((e) => [e.name, e.value ?? e.valueFrom]),
  );

describe.runIf(KUBECTL)('files and kustomizations', () => {
  const kustomizationDirs = [
    KUSTOMIZATIONS.base,
    KUSTOMIZATIONS.local,
    KUSTOMIZATIONS.production,
    POSTGRES_DIR,
  ];
  const files = [...yamlFiles(K8S_DIR), ...yamlFiles(POSTGRES_DIR)];

  it('every YAML file is used by a kustomization, except the Secret examples which must not be', () => {
    const used = new Set<string>();
    for (const dir of kustomizationDirs) {
      used.add(join(dir, 'kustomization.yaml'));
      const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Doc;
      for (const entry of (k.resources as string[] | undefined) ?? [])
        used.add(resolve(dir, entry));
      for (const patch of (k.patches as Doc[] | undefined) ?? [])
        if (patch.path) used.add(resolve(dir, patch.path as string));
    }
    const unused = files.filter((file) => !used.has(file)).map((f) => relative(DEPLOY_DIR, f));
    expect(unused.sort()).toEqual(['k8s/base/secret.example.yaml', 'postgres/secret.example.yaml']);
  });

  it('the example DATABASE_URLs verify the server (verify-full) against the mounted CA, as production requires', () => {
    const urls = loadDocs(join(K8S_DIR, 'base/secret.example.yaml')).flatMap((secret) =>
      secret.stringData?.DATABASE_URL ? [secret.stringData.DATABASE_URL as string] : [],
    );
    expect(urls).toHaveLength(SERVICES.length);
    for (const url of urls) {
      const parameters = new URL(url).searchParams;
      expect(parameters.get('sslmode'), url).toBe('verify-full');
      expect(parameters.get('sslrootcert'), url).toBe(`${POSTGRES_CA_DIR}/ca.crt`);
      expect(productionDatabaseUrlProblem(url), url).toBeUndefined();
    }
  });

  it('the Secret examples name every Secret and key the workloads and the Cluster read', () => {
    const examples = [
      ...loadDocs(join(K8S_DIR, 'base/secret.example.yaml')),
      ...loadDocs(join(POSTGRES_DIR, 'secret.example.yaml')),
    ];
    for (const secret of examples) expect(schemaErrors(secret), secret.metadata.name).toEqual([]);
    const keys = new Map(
      examples
        .filter((s) => s.metadata.namespace === 'pcp')
        .map((s) => [s.metadata.name as string, Object.keys(s.stringData as Doc)]),
    );
    const reads = secretReads(Object.values(RENDERED).flat());
    expect([...reads.keys()].sort()).toEqual([...keys.keys()].sort());
    for (const [name, read] of reads) {
      for (const key of read) if (key !== '*') expect(keys.get(name), name).toContain(key);
    }
    // The role Secrets CloudNativePG reads: basic-auth, username = the role's name.
    const [roleSecret] = examples.filter((s) => s.metadata.namespace === 'pcp-postgres');
    const cluster = find(POSTGRES, 'Cluster', 'pcp-db');
    const role = (cluster.spec.managed.roles as Doc[]).find(
      (r) => r.passwordSecret.name === roleSecret!.metadata.name,
    );
    expect(roleSecret).toMatchObject({
      type: 'kubernetes.io/basic-auth',
      stringData: { username: role!.name },
    });
  });
});

describe.runIf(KUBECTL).each(Object.keys(RENDERED) as (keyof typeof RENDERED)[])(
  'rendered %s',
  (name) => {
    const docs = RENDERED[name];
    const deployments = docs.filter((d) => d.kind === 'Deployment');
    const workloads = docs.filter((d) => WORKLOAD_KINDS.has(d.kind as string));
    const extra = EXTRA;
    const serviceDeployments = deployments.filter((d) =>
      (SERVICES as readonly string[]).includes(d.metadata.name as string),
    );

    it('has one Deployment, Service and ServiceAccount per service, the Job, ConfigMap, Namespace and policies', () => {
      expect(deployments.map((d) => d.metadata.name).sort()).toEqual(
        [...SERVICES, ...extra].sort(),
      );
      for (const service of [...SERVICES, ...extra]) {
        find(docs, 'Service', service);
        find(docs, 'ServiceAccount', service);
      }
      find(docs, 'Job', 'pcp-migrate');
      find(docs, 'ConfigMap', 'pcp-config');
      find(docs, 'Namespace', 'pcp');
      find(docs, 'NetworkPolicy', 'default-deny');
      expect(docs.filter((d) => d.kind === 'Secret')).toEqual([]);
      for (const doc of docs)
        if (doc.kind !== 'Namespace') expect(doc.metadata.namespace).toBe('pcp');
    });

    it('every object validates strictly against the Kubernetes 1.30 schema (no unknown field)', () => {
      for (const doc of docs) {
        expect(schemaErrors(doc), `${doc.kind}/${doc.metadata.name}`).toEqual([]);
      }
    });

    it('every container has resource requests and limits and runs non-root on a read-only filesystem', () => {
      for (const doc of workloads) {
        const pod = podSpecOf(doc)!;
        expect(pod.automountServiceAccountToken, doc.metadata.name).toBe(false);
        expect(pod.securityContext).toMatchObject({
          runAsNonRoot: true,
          runAsUser: 10001,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        for (const container of containersOf(doc)) {
          const where = `${doc.metadata.name}/${container.name}`;
          expect(container.image, where).toMatch(new RegExp(`^${IMAGE}:`));
          for (const kind of ['requests', 'limits']) {
            expect(container.resources?.[kind]?.cpu, `${where} ${kind}.cpu`).toBeDefined();
            expect(container.resources?.[kind]?.memory, `${where} ${kind}.memory`).toBeDefined();
          }
          expect(cpuMillis(container.resources.requests.cpu)).toBeLessThanOrEqual(
            cpuMillis(container.resources.limits.cpu),
          );
          expect(memoryBytes(container.resources.requests.memory)).toBeLessThanOrEqual(
            memoryBytes(container.resources.limits.memory),
          );
          expect(container.securityContext, where).toMatchObject({
            runAsNonRoot: true,
            runAsUser: 10001,
            readOnlyRootFilesystem: true,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            seccompProfile: { type: 'RuntimeDefault' },
          });
          if (extra.includes(doc.metadata.name as string)) {
            // The simulator needs neither the shared configuration nor any credential.
            expect(container.envFrom, where).toBeUndefined();
            continue;
          }
          expect(container.envFrom, where).toEqual([
            { configMapRef: { name: 'pcp-config' } },
            // The database migration steps need neither NATS nor Redis; the migrator, NATS.
            ...(doc.kind === 'Deployment' || container.name === 'migrator'
              ? [{ secretRef: { name: 'pcp-connections' } }]
              : []),
            ...(doc.kind === 'Deployment' && doc.metadata.name === 'payments'
              ? [{ secretRef: { name: PROCESSOR_SECRET } }]
              : []),
          ]);
        }
      }
    });

    it('each service connects to NATS as its own user and to Postgres as its own role', () => {
      for (const doc of serviceDeployments) {
        const service = doc.metadata.name as string;
        const [container] = podSpecOf(doc)!.containers as Doc[];
        expect(envOf(container!)).toMatchObject({
          NATS_USER: service,
          NATS_PASSWORD: { secretKeyRef: { name: `pcp-nats-${service}`, key: 'password' } },
          DATABASE_URL: { secretKeyRef: { name: `pcp-db-${service}`, key: 'DATABASE_URL' } },
        });
      }
      // No container reads another service's credentials: a Deployment's container is named
      // after its service, a migration step `migrate-<service>`.
      for (const container of workloads.flatMap(containersOf)) {
        const owner = (container.name as string).replace(/^migrate-/, '');
        const refs = ((container.env as Doc[] | undefined) ?? []).flatMap((e) =>
          e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name as string] : [],
        );
        for (const secret of refs.filter((s) => /^pcp-(db|nats)-/.test(s)))
          expect(secret, container.name as string).toMatch(new RegExp(`^pcp-(db|nats)-${owner}$`));
      }
    });

    it("every container that reads a DATABASE_URL mounts the Postgres server's CA, its sslrootcert", () => {
      const databaseContainers = workloads
        .flatMap((doc) => containersOf(doc).map((container) => ({ doc, container })))
        .filter(({ container }) => envOf(container).DATABASE_URL !== undefined);
      // Five Deployments and five migration steps.
      expect(databaseContainers).toHaveLength(SERVICES.length * 2);
      for (const { doc, container } of databaseContainers) {
        const mount = ((container.volumeMounts as Doc[] | undefined) ?? []).find(
          (m) => m.mountPath === POSTGRES_CA_DIR,
        );
        expect(mount, container.name as string).toMatchObject({ readOnly: true });
        const volume = ((podSpecOf(doc)!.volumes as Doc[] | undefined) ?? []).find(
          (v) => v.name === mount!.name,
        );
        expect(volume, container.name as string).toEqual({
          name: mount!.name,
          secret: { secretName: POSTGRES_CA_SECRET, items: [{ key: 'ca.crt', path: 'ca.crt' }] },
        });
      }
    });

    it("the gateway believes X-Forwarded-For from narrow ranges only (its ingress's), never all private ones", () => {
      const [container] = podSpecOf(find(docs, 'Deployment', 'gateway'))!.containers as Doc[];
      const trusted = envValue(docs, container!, 'TRUST_PROXY');
      expect(trusted).toBeDefined();
      if (trusted === 'false') return;
      expect(trusted).not.toBe('true');
      for (const entry of trusted!.split(',').map((part) => part.trim())) {
        const [address = '', bits] = entry.split('/');
        const version = isIP(address);
        expect(version, entry).not.toBe(0);
        const prefix = bits === undefined ? (version === 4 ? 32 : 128) : Number(bits);
        expect(prefix, entry).toBeGreaterThanOrEqual(version === 4 ? 24 : 64);
      }
    });

    it('only the payments Deployment references the card processor Secret', () => {
      const references = (doc: Doc) => JSON.stringify(doc).includes(PROCESSOR_SECRET);
      expect(docs.filter(references).map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
        'Deployment/payments',
      ]);
    });

    it('every Deployment runs its service with probes, MIGRATE_ON_START=false and a grace period', () => {
      expect(serviceDeployments).toHaveLength(SERVICES.length);
      for (const doc of serviceDeployments) {
        const service = doc.metadata.name as string;
        const pod = podSpecOf(doc)!;
        expect(pod.initContainers).toBeUndefined();
        expect(pod.containers).toHaveLength(1);
        const [container] = pod.containers as Doc[];
        expect(container!.command).toEqual(['node', `services/${service}/dist/main.js`]);
        const env = envOf(container!);
        expect(env.MIGRATE_ON_START).toBe('false');
        // Readiness and metrics on the ops port; the gateway's liveness on its public port.
        const opsPort = OPS_PORTS[service]!;
        expect(env.OPS_PORT).toBe(String(opsPort));
        const livePort = service === 'gateway' ? gatewayDefaultPort : opsPort;
        if (service === 'gateway') expect(env.PORT).toBe(String(gatewayDefaultPort));
        const portName = (port: number) => {
          const names = (container!.ports as Doc[])
            .filter((p) => p.containerPort === port)
            .map((p) => p.name as string);
          expect(names).toHaveLength(1);
          return names[0];
        };
        expect(container!.readinessProbe?.httpGet).toEqual({
          path: '/health/ready',
          port: portName(opsPort),
        });
        expect(container!.livenessProbe?.httpGet).toEqual({
          path: '/health/live',
          port: portName(livePort),
        });
        expect(container!.startupProbe?.httpGet?.port).toBe(portName(livePort));
        expect(portName(opsPort)).toBe('ops');
        expect(doc.spec.template.metadata.annotations).toMatchObject({
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': String(opsPort),
          'prometheus.io/path': '/metrics',
        });
        // The gateway's unready delay, then shutdown (10 s), must finish inside the grace period.
        expect(container!.lifecycle).toBeUndefined();
        const unreadyDelayMs = Number(env.SHUTDOWN_UNREADY_DELAY_MS ?? 0);
        if (service === 'gateway') expect(unreadyDelayMs).toBeGreaterThanOrEqual(5_000);
        expect(pod.terminationGracePeriodSeconds).toBe(30);
        expect(unreadyDelayMs + 10_000).toBeLessThan(
          (pod.terminationGracePeriodSeconds as number) * 1000,
        );
        expect(pod.serviceAccountName).toBe(service);
        expect(find(docs, 'ServiceAccount', service).automountServiceAccountToken).toBe(false);
      }
    });

    it("the gateway's Service exposes only its public port, not readiness and metrics", () => {
      const service = find(docs, 'Service', 'gateway');
      expect((service.spec.ports as Doc[]).map((port) => port.targetPort)).toEqual(['http']);
    });

    it("every Deployment's selector and its Service's selector match the pod template labels", () => {
      for (const doc of deployments) {
        const labels = doc.spec.template.metadata.labels as Record<string, string>;
        expect(labels).toMatchObject(doc.spec.selector.matchLabels as Doc);
        const service = find(docs, 'Service', doc.metadata.name as string);
        expect(Object.keys(service.spec.selector as Doc).length).toBeGreaterThan(0);
        expect(labels).toMatchObject(service.spec.selector as Doc);
        const others = deployments.filter(
          (other) =>
            other !== doc &&
            Object.entries(service.spec.selector as Doc).every(
              ([k, v]) => other.spec.template.metadata.labels[k] === v,
            ),
        );
        expect(others, `Service ${doc.metadata.name} selects other Deployments`).toEqual([]);
        const portNames = (doc.spec.template.spec.containers[0].ports as Doc[]).map((p) => p.name);
        for (const port of service.spec.ports as Doc[])
          expect(portNames).toContain(port.targetPort);
      }
    });

    it('gateway and stores have a PodDisruptionBudget and a CPU autoscaler', () => {
      for (const service of ['gateway', 'stores']) {
        const labels = find(docs, 'Deployment', service).spec.template.metadata.labels as Doc;
        expect(labels).toMatchObject(
          find(docs, 'PodDisruptionBudget', service).spec.selector.matchLabels as Doc,
        );
        const hpa = find(docs, 'HorizontalPodAutoscaler', service);
        expect(hpa.spec.scaleTargetRef).toEqual({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          name: service,
        });
        expect(hpa.spec.metrics).toEqual([
          {
            type: 'Resource',
            resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } },
          },
        ]);
        expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas as number);
        // The autoscaler never holds fewer pods than the overlay asks for, nor more at rest.
        expect(hpa.spec.minReplicas).toBe(find(docs, 'Deployment', service).spec.replicas);
      }
    });

    it('runs the processor simulator (the sandbox processor), on all interfaces, with probes on its /health', () => {
      const doc = find(docs, 'Deployment', SIMULATOR);
      const pod = podSpecOf(doc)!;
      expect(doc.spec.replicas).toBe(1);
      expect(doc.spec.strategy).toEqual({ type: 'Recreate' });
      expect(pod.initContainers).toBeUndefined();
      expect(pod.containers).toHaveLength(1);
      const [container] = pod.containers as Doc[];
      expect(container!.command).toEqual(['node', 'services/processor-simulator/dist/main.js']);
      // No database, no MIGRATE_ON_START, no ops port: only its own settings.
      expect(envOf(container!)).toEqual({
        HOST: '0.0.0.0',
        PORT: String(SIMULATOR_PORT),
        PROCESSOR_API_KEY: 'sk_test_simulator',
        PROCESSOR_DATA_DIR: SIMULATOR_DATA_DIR,
        // From a Secret, never its volume: the saved fingerprints cannot be searched without it.
        PROCESSOR_FINGERPRINT_KEY: {
          secretKeyRef: { name: 'pcp-processor-simulator', key: 'PROCESSOR_FINGERPRINT_KEY' },
        },
      });
      expect(container!.ports).toEqual([
        { name: 'http', containerPort: SIMULATOR_PORT, protocol: 'TCP' },
      ]);
      for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
        expect(container![probe]?.httpGet, probe).toEqual({ path: '/health', port: 'http' });
      }
      expect(pod.terminationGracePeriodSeconds).toBe(30);
      expect(pod.serviceAccountName).toBe(SIMULATOR);
      expect(find(docs, 'ServiceAccount', SIMULATOR).automountServiceAccountToken).toBe(false);
      // payments reaches it as http://processor-simulator:4010 (deploy/k8s/README.md).
      const service = find(docs, 'Service', SIMULATOR);
      expect(service.spec.type).toBe('ClusterIP');
      expect(service.spec.ports).toEqual([
        { name: 'http', port: SIMULATOR_PORT, targetPort: 'http', protocol: 'TCP' },
      ]);
    });

    it("keeps the processor simulator's state on its own volume, which only its one pod mounts and may write", () => {
      const doc = find(docs, 'Deployment', SIMULATOR);
      const pod = podSpecOf(doc)!;
      const [container] = pod.containers as Doc[];
      const mounts = (container!.volumeMounts as Doc[]).filter(
        (m) => m.mountPath === SIMULATOR_DATA_DIR,
      );
      expect(mounts).toHaveLength(1);
      expect(mounts[0]!.readOnly ?? false).toBe(false);
      const volume = (pod.volumes as Doc[]).find((v) => v.name === mounts[0]!.name);
      expect(volume).toEqual({
        name: mounts[0]!.name,
        persistentVolumeClaim: { claimName: SIMULATOR },
      });
      const claim = find(docs, 'PersistentVolumeClaim', SIMULATOR);
      expect(claim.spec.accessModes).toEqual(['ReadWriteOnce']);
      expect(memoryBytes(claim.spec.resources.requests.storage as string)).toBeGreaterThanOrEqual(
        1024 ** 3,
      );
      // Its files belong to the pod's group, so the non-root process may write them.
      expect(pod.securityContext.fsGroup).toBe(pod.securityContext.runAsGroup);
      // No other workload mounts it, and it is the only claim.
      const claims = docs.filter((d) => d.kind === 'PersistentVolumeClaim');
      expect(claims).toEqual([claim]);
      const mounting = docs.filter((d) =>
        ((podSpecOf(d)?.volumes as Doc[] | undefined) ?? []).some((v) => v.persistentVolumeClaim),
      );
      expect(mounting).toEqual([doc]);
    });

    it("the migration Job runs each service's migrations once, in order, as that service's role, then the JetStream topology as the migrator", () => {
      const job = find(docs, 'Job', 'pcp-migrate');
      const pod = podSpecOf(job)!;
      expect(pod.restartPolicy).toBe('Never');
      const [migrator, ...reversed] = containersOf(job).reverse();
      const steps = reversed.reverse();
      expect(steps.map((c) => c.command)).toEqual(
        SERVICES.map((service) => ['node', `services/${service}/dist/main.js`, 'migrate']),
      );
      expect(migrator!.command).toEqual([
        'node',
        'services/catalog/dist/main.js',
        'jetstream-topology',
      ]);
      expect(envOf(migrator!)).toMatchObject({
        NATS_USER: 'migrator',
        NATS_PASSWORD: { secretKeyRef: { name: 'pcp-nats-migrator', key: 'password' } },
      });
      expect(envOf(migrator!)).not.toHaveProperty('DATABASE_URL');
      for (const [i, step] of steps.entries()) {
        expect(envOf(step).DATABASE_URL, step.name as string).toEqual({
          secretKeyRef: { name: `pcp-db-${SERVICES[i]!}`, key: 'DATABASE_URL' },
        });
        expect(envValue(docs, step, 'DB_POOL_MAX')).toBe('1');
      }
      // Init containers run one at a time; the last one is the Job's container.
      expect((pod.containers as Doc[]).map((c) => c.name)).toEqual(['migrator']);
      expect(job.spec.backoffLimit).toBeGreaterThanOrEqual(0);
      expect(job.spec.activeDeadlineSeconds).toBeGreaterThan(0);
    });
  },
);

describe.runIf(KUBECTL)('overlays', () => {
  const replicas = (docs: Doc[]) =>
    Object.fromEntries(
      docs.filter((d) => d.kind === 'Deployment').map((d) => [d.metadata.name, d.spec.replicas]),
    );
  const images = (docs: Doc[]) => new Set(docs.flatMap(containersOf).map((c) => c.image));
  const config = (docs: Doc[]) => find(docs, 'ConfigMap', 'pcp-config').data as Doc;

  it('production: every workload that connects to NATS does so over TLS, trusting the mounted CA', () => {
    const docs = RENDERED.production;
    // The simulator connects to nothing (no NATS, no Postgres): the overlay leaves it alone.
    const simulator = find(docs, 'Deployment', SIMULATOR);
    expect(Object.keys(envOf(containersOf(simulator)[0]!))).not.toContain('NATS_URL');
    expect(podSpecOf(simulator)!.volumes).toEqual([
      { name: 'tmp', emptyDir: { sizeLimit: '64Mi' } },
      { name: 'data', persistentVolumeClaim: { claimName: SIMULATOR } },
    ]);
    const clients = docs.flatMap((doc) =>
      (doc.kind === 'Deployment' && doc !== simulator) || doc.kind === 'Job'
        ? (podSpecOf(doc)!.containers as Doc[]).map((container) => ({ doc, container }))
        : [],
    );
    expect(clients.map(({ container }) => container.name).sort()).toEqual(
      [...SERVICES, 'migrator'].sort(),
    );
    for (const { doc, container } of clients) {
      const where = `${doc.kind}/${doc.metadata.name}`;
      const env = envOf(container);
      expect(env.NATS_URL, where).toMatch(/^tls:\/\//);
      const mount = (container.volumeMounts as Doc[]).find((m) =>
        String(env.NATS_TLS_CA).startsWith(`${m.mountPath}/`),
      );
      expect(mount, where).toBeDefined();
      const volume = (podSpecOf(doc)!.volumes as Doc[]).find((v) => v.name === mount!.name);
      expect(volume!.secret, where).toMatchObject({ secretName: 'pcp-nats-ca' });
    }
    // The chart's values turn TLS on, with the certificate cert-manager issues.
    const values = parse(readFileSync(join(REPO_ROOT, 'deploy', 'nats', 'values.yaml'), 'utf8'));
    expect(values.config.nats.tls).toMatchObject({ enabled: true, secretName: 'pcp-nats-tls' });
    const certificates = parseAllDocuments(
      readFileSync(join(REPO_ROOT, 'deploy', 'nats', 'certificate.yaml'), 'utf8'),
    ).map((d) => d.toJS() as Doc);
    expect(
      certificates.find((c) => c.kind === 'Certificate' && c.metadata.name === 'pcp-nats-tls')!
        .spec,
    ).toMatchObject({
      secretName: 'pcp-nats-tls',
      dnsNames: expect.arrayContaining(['nats.nats.svc']),
    });
  });

  it("base and production keep the image's NODE_ENV=production and its requirements", () => {
    for (const name of ['base', 'production'] as const) {
      for (const container of RENDERED[name].flatMap(containersOf)) {
        expect(envValue(RENDERED[name], container, 'NODE_ENV'), name).toBeUndefined();
      }
    }
    expect(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')).toMatch(
      /^ENV NODE_ENV=production$/m,
    );
  });

  it('base uses the latest image, one JetStream replica', () => {
    expect(images(RENDERED.base)).toEqual(new Set([`${IMAGE}:latest`]));
    expect(config(RENDERED.base).JETSTREAM_REPLICAS).toBe('1');
  });

  it('local: one replica each, debug logs, the dev image', () => {
    expect(replicas(RENDERED.local)).toEqual({
      gateway: 1,
      stores: 1,
      catalog: 1,
      ordering: 1,
      payments: 1,
      'processor-simulator': 1,
    });
    expect(config(RENDERED.local).LOG_LEVEL).toBe('debug');
    // The simulator's http URL and test key would stop payments under the image's production.
    expect(config(RENDERED.local).NODE_ENV).toBe('development');
    expect(config(RENDERED.local).JETSTREAM_REPLICAS).toBe('1');
    expect(images(RENDERED.local)).toEqual(new Set([`${IMAGE}:dev`]));
  });

  it('production: the live processor is never the simulator, the sandbox processor always is', () => {
    const secret = loadDocs(join(K8S_DIR, 'base/secret.example.yaml')).find(
      (doc) => doc.metadata.name === PROCESSOR_SECRET,
    )!.stringData as Record<string, string>;
    // The Secret names the sandbox by the simulator's Service, on its port.
    const service = find(RENDERED.production, 'Service', SIMULATOR);
    expect(new URL(secret.SANDBOX_PROCESSOR_URL!)).toMatchObject({
      protocol: 'http:',
      hostname: service.metadata.name,
      port: String((service.spec.ports as Doc[])[0]!.port),
    });
    expect(secret.SANDBOX_PROCESSOR_API_KEY).toBe('sk_test_simulator');
    // The live processor: https elsewhere, with a key that is not the simulator's.
    const live = new URL(secret.PAYMENT_PROCESSOR_URL!);
    expect(live.protocol).toBe('https:');
    expect(live.hostname).not.toContain(SIMULATOR);
    expect(secret.PAYMENT_PROCESSOR_API_KEY).not.toMatch(/^sk_test_simulator/);
    // Only the Secret sets either processor: no manifest points payments anywhere.
    for (const container of RENDERED.production.flatMap(containersOf)) {
      const env = envOf(container);
      for (const variable of Object.keys(env))
        expect(variable, container.name as string).not.toMatch(/_PROCESSOR_(URL|API_KEY)$/);
    }
  });

  it('production: one simulator pod, replaced rather than rolled, its memory requested in full', () => {
    const doc = find(RENDERED.production, 'Deployment', SIMULATOR);
    expect(doc.spec.replicas).toBe(1);
    expect(doc.spec.strategy).toEqual({ type: 'Recreate' });
    const scaled = RENDERED.production.filter(
      (d) => d.kind === 'HorizontalPodAutoscaler' && d.spec.scaleTargetRef.name === SIMULATOR,
    );
    expect(scaled).toEqual([]);
    const [container] = podSpecOf(doc)!.containers as Doc[];
    expect(memoryBytes(container!.resources.requests.memory)).toBe(
      memoryBytes(container!.resources.limits.memory),
    );
  });

  it('catalog and ordering: memory limits cover the budgets their configuration sets', () => {
    const MiB = 1024 ** 2;
    for (const rendered of [RENDERED.base, RENDERED.production]) {
      /** A container's setting, or the service's default when the manifest leaves it out. */
      const setting = (container: Doc, name: string, fallback: number) =>
        Number(envValue(rendered, container, name) ?? fallback);
      const catalog = find(rendered, 'Deployment', 'catalog').spec.template.spec
        .containers[0] as Doc;
      // Baseline RSS 150 MiB (npm run bench -- ingest), the chunk cache, and per ingest in
      // flight: its thread's heap cap plus ~30 MiB of thread, the downloaded bytes and the
      // serialized document (50 MiB each at most).
      const catalogNeeds =
        160 * MiB +
        setting(catalog, 'CATALOG_DOCUMENT_CACHE_BYTES', 64 * MiB) +
        setting(catalog, 'CATALOG_INGEST_CONCURRENCY', 2) *
          (setting(catalog, 'CATALOG_INGEST_THREAD_HEAP_MB', 384) * MiB + 130 * MiB) +
        // Dry runs (catalogset-validation) share those threads; each holds its downloaded
        // bytes (50 MiB at most) while it waits for one.
        setting(catalog, 'CATALOG_VALIDATION_MAX_IN_PROGRESS', 4) * 50 * MiB;
      expect(memoryBytes(catalog.resources.limits.memory as string)).toBeGreaterThanOrEqual(
        catalogNeeds,
      );

      const ordering = find(rendered, 'Deployment', 'ordering').spec.template.spec
        .containers[0] as Doc;
      // Baseline RSS 120 MiB, the compiled-catalog cache, the item availability overrides'
      // cache, and a compile per compile thread (a 100k-item catalog took 250 MiB above the
      // baseline in the ingest bench).
      const orderingNeeds =
        120 * MiB +
        setting(ordering, 'ORDERING_CATALOG_CACHE_BYTES', 256 * MiB) +
        setting(ordering, 'ORDERING_ITEM_AVAILABILITY_CACHE_BYTES', 64 * MiB) +
        setting(ordering, 'ORDERING_CATALOG_COMPILE_THREADS', 2) * 250 * MiB;
      expect(memoryBytes(ordering.resources.limits.memory as string)).toBeGreaterThanOrEqual(
        orderingNeeds,
      );
    }
  });

  it("gateway, stores, payments: V8's heap sized within half the memory limit, the instrumentation kept", () => {
    const MiB = 1024 ** 2;
    for (const rendered of [RENDERED.base, RENDERED.production]) {
      for (const service of ['gateway', 'stores', 'payments']) {
        const container = find(rendered, 'Deployment', service).spec.template.spec
          .containers[0] as Doc;
        // Set in the manifest, it replaces the image's NODE_OPTIONS: the preload must stay.
        const options = envValue(rendered, container, 'NODE_OPTIONS') ?? '';
        expect(options.split(' '), service).toContain('--import');
        expect(options, service).toContain('@pcp/service-kit/instrument');
        const flag = (name: string) => Number(new RegExp(`--${name}=(\\d+)`).exec(options)?.[1]);
        // V8's heap at most: the old space and three semi-spaces (two, and the new large
        // objects'); the other half of the limit is Node's own (binary, instrumentation, malloc).
        const heapBytes = (flag('max-old-space-size') + 3 * flag('max-semi-space-size')) * MiB;
        expect(heapBytes, service).toBeGreaterThan(0);
        expect(heapBytes, service).toBeLessThanOrEqual(
          memoryBytes(container.resources.limits.memory as string) / 2,
        );
      }
    }
  });

  it('production: gateway 3, every other service 2, the simulator 1, a pinned image, larger resources, 3 JetStream replicas', () => {
    expect(replicas(RENDERED.production)).toEqual({
      gateway: 3,
      stores: 2,
      catalog: 2,
      ordering: 2,
      payments: 2,
      [SIMULATOR]: 1,
    });
    expect(config(RENDERED.production).LOG_LEVEL).toBe('info');
    expect(config(RENDERED.production).JETSTREAM_REPLICAS).toBe('3');
    const [image] = [...images(RENDERED.production)];
    expect(images(RENDERED.production).size).toBe(1);
    expect(image).toMatch(new RegExp(`^${IMAGE}:\\d+\\.\\d+\\.\\d+$`));
    for (const service of SERVICES) {
      const base = find(RENDERED.base, 'Deployment', service).spec.template.spec.containers[0]
        .resources as Doc;
      const prod = find(RENDERED.production, 'Deployment', service).spec.template.spec.containers[0]
        .resources as Doc;
      expect(cpuMillis(prod.limits.cpu as string), service).toBeGreaterThan(
        cpuMillis(base.limits.cpu as string),
      );
      expect(memoryBytes(prod.limits.memory as string), service).toBeGreaterThan(
        memoryBytes(base.limits.memory as string),
      );
    }
  });
});

describe.runIf(KUBECTL)('deploy/postgres: the CloudNativePG Cluster', () => {
  const cluster = () => find(POSTGRES, 'Cluster', 'pcp-db');
  const bootstrapSql = readFileSync(join(POSTGRES_DIR, 'bootstrap.sql'), 'utf8');

  it('renders the namespace, the bootstrap SQL and the Cluster, each valid against its schema', () => {
    expect(POSTGRES.map((d) => `${d.kind}/${d.metadata.name}`).sort()).toEqual([
      'Cluster/pcp-db',
      'ConfigMap/pcp-db-bootstrap',
      'Namespace/pcp-postgres',
    ]);
    // The Cluster against the CloudNativePG 1.30.0 CRD, the others against Kubernetes 1.30.
    for (const doc of POSTGRES) expect(schemaErrors(doc), doc.kind as string).toEqual([]);
    expect(find(POSTGRES, 'ConfigMap', 'pcp-db-bootstrap').data).toEqual({
      'bootstrap.sql': bootstrapSql,
    });
  });

  it('has three instances on different nodes, runs bootstrap.sql after initdb, sets max_connections', () => {
    const { spec } = cluster();
    expect(spec.instances).toBe(3);
    expect(spec.affinity).toMatchObject({
      enablePodAntiAffinity: true,
      podAntiAffinityType: 'required',
      topologyKey: 'kubernetes.io/hostname',
    });
    expect(spec.storage.size).toMatch(/^\d+Gi$/);
    expect(spec.bootstrap.initdb).toMatchObject({
      database: 'pcp',
      postInitApplicationSQLRefs: {
        configMapRefs: [{ name: 'pcp-db-bootstrap', key: 'bootstrap.sql' }],
      },
    });
    expect(Number(spec.postgresql.parameters.max_connections)).toBeGreaterThan(100);
  });

  it('one LOGIN role per service, with its password Secret; bootstrap.sql gives each its schema', () => {
    const roles = cluster().spec.managed.roles as Doc[];
    expect(roles.map((r) => r.name)).toEqual(SERVICES.map((s) => `pcp_${s}`));
    for (const [i, role] of roles.entries()) {
      expect(role).toMatchObject({
        ensure: 'present',
        login: true,
        passwordSecret: { name: `pcp-db-${SERVICES[i]!}` },
      });
      // Never more than its own: no superuser, role creation or database creation.
      for (const right of ['superuser', 'createdb', 'createrole', 'replication', 'bypassrls'])
        expect(role[right] ?? false, `${role.name as string}.${right}`).toBe(false);
    }
    const created = [...bootstrapSql.matchAll(/CREATE ROLE (\w+) NOLOGIN/g)].map((m) => m[1]);
    expect(created).toEqual(roles.map((r) => r.name));
    const schemas = [
      ...bootstrapSql.matchAll(/CREATE SCHEMA IF NOT EXISTS (\w+) AUTHORIZATION (\w+);/g),
    ];
    expect(schemas.map((m) => [m[1], m[2]])).toEqual(SERVICES.map((s) => [s, `pcp_${s}`]));
  });
});

describe.runIf(KUBECTL)('connection budget (production overlay + deploy/postgres)', () => {
  const budget = () => connectionBudget(RENDERED.production, find(POSTGRES, 'Cluster', 'pcp-db'));

  it('pool size x the most pods + migrations stays within max_connections less the reserve', () => {
    const result = budget();
    expect(result.lines.map((l) => l.role).sort()).toEqual(SERVICES.map((s) => `pcp_${s}`).sort());
    for (const line of result.lines) {
      expect(line.poolSize, line.role).toBeGreaterThan(0);
      expect(line.maxPods, line.role).toBeGreaterThanOrEqual(2);
      expect(line.migration, line.role).toBe(1);
    }
    expect(budgetProblems(result)).toEqual([]);
    expect(result.total).toBeLessThanOrEqual(result.available);
  });

  it('deploy/k8s/README.md shows the same table', () => {
    const readme = readFileSync(join(K8S_DIR, 'README.md'), 'utf8');
    // Table rows as trimmed cells, whatever padding prettier gives them.
    const rows = readme
      .split('\n')
      .filter((line) => line.startsWith('|'))
      .map((line) =>
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    const result = budget();
    for (const l of result.lines) {
      expect(rows).toContainEqual([
        `\`${l.role}\``,
        String(l.poolSize),
        String(l.maxPods),
        String(l.migration),
        String(l.total),
        String(l.connectionLimit),
      ]);
    }
    const limits = result.lines.reduce((sum, l) => sum + l.connectionLimit, 0);
    expect(rows).toContainEqual(['**Total**', '', '', '', `**${result.total}**`, `**${limits}**`]);
    expect(readme.replace(/\s+/g, ' ')).toContain(
      `\`max_connections\` ${result.maxConnections} − \`superuser_reserved_connections\` ${result.superuserReserved} = **${result.available}**`,
    );
  });

  it('fails when an autoscaler or a pool grows past what Postgres allows', () => {
    const grown = structuredClone(RENDERED.production);
    find(grown, 'HorizontalPodAutoscaler', 'gateway').spec.maxReplicas = 40;
    const problems = budgetProblems(connectionBudget(grown, find(POSTGRES, 'Cluster', 'pcp-db')));
    expect(problems.join('\n')).toMatch(/over the 390/);
    expect(problems.join('\n')).toMatch(/role pcp_gateway: connectionLimit 131 < its 411/);

    const bigPool = structuredClone(RENDERED.production);
    find(bigPool, 'ConfigMap', 'pcp-config').data.DB_POOL_MAX = '20';
    expect(
      budgetProblems(connectionBudget(bigPool, find(POSTGRES, 'Cluster', 'pcp-db'))).length,
    ).toBeGreaterThan(0);
  });
});

describe('checks that must fail', () => {
  const deployment = (container: Doc): Doc => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'broken' },
    spec: {
      selector: { matchLabels: { app: 'broken' } },
      template: {
        metadata: { labels: { app: 'broken' } },
        spec: { containers: [{ name: 'app', image: 'x', ...container }] },
      },
    },
  });

  it('the schema check rejects a misspelled field, at any depth, and wrong types', () => {
    expect(schemaErrors(deployment({}))).toEqual([]);
    expect(
      schemaErrors(deployment({ livenesProbe: { httpGet: { path: '/health/live', port: 8080 } } })),
    ).toEqual(['/spec/template/spec/containers/0: unknown field "livenesProbe"']);
    const doc = deployment({
      securityContext: { readOnlyRootFileSystem: true },
      readinessProbe: { httpGet: { paht: '/', port: 'ops' } },
      ports: [{ containerPort: '8080' }],
    });
    doc.spec.template.spec.terminationGracePeriod = 30;
    expect(schemaErrors(doc).sort()).toEqual([
      '/spec/template/spec/containers/0/ports/0/containerPort: must be integer',
      '/spec/template/spec/containers/0/readinessProbe/httpGet: unknown field "paht"',
      '/spec/template/spec/containers/0/securityContext: unknown field "readOnlyRootFileSystem"',
      '/spec/template/spec: unknown field "terminationGracePeriod"',
    ]);
  });

  it('the schema check requires required fields and knows only vendored kinds', () => {
    const doc = deployment({});
    delete doc.spec.selector;
    expect(schemaErrors(doc)).toEqual(["/spec: must have required property 'selector'"]);
    expect(schemaErrors({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'x' } })).toEqual([
      'no schema for v1/Pod: add it to deploy/test/schemas/vendor-schemas.mjs',
    ]);
  });

  it('the Cluster is checked against the CloudNativePG CRD, unknown fields included', () => {
    expect(
      schemaErrors({
        apiVersion: 'postgresql.cnpg.io/v1',
        kind: 'Cluster',
        metadata: { name: 'x' },
        spec: {
          instances: '3',
          storage: { size: '1Gi', sise: '2Gi' },
          managed: { roles: [{ name: 'a', loginn: true }] },
        },
      }).sort(),
    ).toEqual([
      '/spec/instances: must be integer',
      '/spec/managed/roles/0: unknown field "loginn"',
      '/spec/storage: unknown field "sise"',
    ]);
  });
});

/** Each process's port variable (`OPS_PORT`, the simulator's `PORT`) as its env sets it. */
const listedPorts = (env: (name: string, variable: string) => unknown) =>
  Object.fromEntries(
    platformProcesses.map(({ name, opsPortVariable }) => [name, env(name, opsPortVariable)]),
  );
const expectedPorts = Object.fromEntries(
  platformProcesses.map(({ name, opsPort }) => [name, String(opsPort)]),
);

describe('the list of processes (tools/platform)', () => {
  it('is what deploy/test knows as the services', () => {
    expect([...SERVICES].sort()).toEqual([...platformServices].sort());
  });

  it.runIf(KUBECTL)('is what the local overlay deploys, each on its port', () => {
    const docs = RENDERED.local;
    const deployed = docs
      .filter((d) => d.kind === 'Deployment')
      .map((d) => d.metadata.name as string)
      .sort();
    expect(deployed).toEqual(platformProcesses.map(({ name }) => name).sort());
    const envOfDeployment = (name: string, variable: string) =>
      envOf(containersOf(find(docs, 'Deployment', name))[0]!)[variable];
    expect(listedPorts(envOfDeployment)).toEqual(expectedPorts);
  });

  it('is what docker-compose.yml runs, each on its port', () => {
    const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as Doc;
    const services = compose.services as Record<string, Doc>;
    // The long-running processes: those whose command is a service's main.js alone.
    const running = Object.entries(services)
      .filter(([name, service]) =>
        Array.isArray(service.command)
          ? (service.command as string[]).join(' ') === `node services/${name}/dist/main.js`
          : false,
      )
      .map(([name]) => name)
      .sort();
    expect(running).toEqual(platformProcesses.map(({ name }) => name).sort());
    const envOfService = (name: string, variable: string) =>
      (services[name]!.environment as Record<string, unknown>)[variable];
    expect(listedPorts(envOfService)).toEqual(expectedPorts);
  });
});

describe('docker-compose.yml', () => {
  // Compose files use YAML merge keys (`<<: *anchor`), which YAML 1.2 leaves off by default.
  const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), {
    merge: true,
  }) as Doc;
  const services = compose.services as Record<string, Doc>;

  it('depends only on services it defines, and waits for migrations', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const dependency of Object.keys(service.depends_on ?? {}))
        expect(services, name).toHaveProperty(dependency);
    }
    for (const name of SERVICES) {
      expect(services[name]!.depends_on.migrate).toEqual({
        condition: 'service_completed_successfully',
      });
    }
    expect(services.migrate!.command.join(' ')).toMatch(
      /services\/gateway\/dist\/main\.js migrate.*services\/stores\/dist\/main\.js migrate.*services\/catalog\/dist\/main\.js migrate.*services\/ordering\/dist\/main\.js migrate.*services\/payments\/dist\/main\.js migrate/,
    );
  });

  it('runs the processor simulator for payments, and gives only payments its key', () => {
    const simulator = services['processor-simulator']!;
    expect(simulator.image).toBe(services.migrate!.image);
    expect(simulator.command).toEqual(['node', 'services/processor-simulator/dist/main.js']);
    expect(simulator.environment).toEqual({
      // Not production: a local stack's fingerprint key is made and kept with its data.
      NODE_ENV: 'development',
      HOST: '0.0.0.0',
      PORT: String(SIMULATOR_PORT),
      PROCESSOR_API_KEY: 'sk_test_simulator',
      PROCESSOR_DATA_DIR: SIMULATOR_DATA_DIR,
    });
    // Its state on a named volume, which the image's folder (owned by the service user) seeds.
    expect(simulator.volumes).toEqual([`processor-simulator-data:${SIMULATOR_DATA_DIR}`]);
    expect(compose.volumes).toHaveProperty('processor-simulator-data');
    expect(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')).toContain(
      `RUN install -d -o 10001 -g 10001 -m 0700 ${SIMULATOR_DATA_DIR}\nUSER 10001:10001`,
    );
    expect(simulator.healthcheck.test.join(' ')).toContain(
      `http://127.0.0.1:${SIMULATOR_PORT}/health`,
    );
    expect(simulator.ports).toBeUndefined();
    expect(services.payments!.environment).toMatchObject({
      PAYMENT_PROCESSOR_URL: `http://processor-simulator:${SIMULATOR_PORT}`,
      PAYMENT_PROCESSOR_API_KEY: simulator.environment.PROCESSOR_API_KEY,
      SANDBOX_PROCESSOR_URL: `http://processor-simulator:${SIMULATOR_PORT}`,
      SANDBOX_PROCESSOR_API_KEY: simulator.environment.PROCESSOR_API_KEY,
    });
    expect(services.payments!.depends_on['processor-simulator']).toEqual({
      condition: 'service_healthy',
    });
    const withKey = Object.entries(services)
      .filter(([, service]) => service.environment?.PAYMENT_PROCESSOR_API_KEY !== undefined)
      .map(([name]) => name);
    expect(withKey).toEqual(['payments']);
  });

  it('runs the local stack outside production, where plain connections and the simulator are allowed', () => {
    for (const name of [...SERVICES, 'migrate']) {
      expect(services[name]!.environment.NODE_ENV, name).toBe('development');
    }
  });

  it('runs every service from the one image with a health check on its own port', () => {
    for (const name of SERVICES) {
      const service = services[name]!;
      expect(service.image).toBe(services.migrate!.image);
      expect(service.command).toEqual(['node', `services/${name}/dist/main.js`]);
      expect(service.environment.MIGRATE_ON_START).toBe('false');
      const port = OPS_PORTS[name]!;
      expect(service.environment.OPS_PORT).toBe(String(port));
      expect(service.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${port}/health/ready`);
    }
    // Only the gateway's public port is published; readiness and metrics stay inside.
    expect(SERVICES.filter((name) => services[name]!.ports)).toEqual(['gateway']);
    expect(services.gateway!.ports).toEqual([`${gatewayDefaultPort}:${gatewayDefaultPort}`]);
  });
});
