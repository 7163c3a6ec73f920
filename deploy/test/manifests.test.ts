/**
 * Static checks of the Kubernetes manifests (deploy/k8s) and docker-compose.yml. Runs without
 * kubectl: a small renderer below applies the kustomize features these overlays use; when kubectl
 * is installed, one test proves that renderer matches `kubectl kustomize`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

// Parsed YAML is untyped by nature; the assertions below are what give it shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = Record<string, any>;

const K8S_DIR = fileURLToPath(new URL('../k8s/', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASE = join(K8S_DIR, 'base');
const OVERLAYS = {
  local: join(K8S_DIR, 'overlays/local'),
  production: join(K8S_DIR, 'overlays/production'),
};
const SERVICES = ['gateway', 'stores', 'catalog', 'ordering', 'payments'] as const;
const OPS_PORTS: Record<string, number> = {
  gateway: 9100,
  stores: 9101,
  catalog: 9102,
  ordering: 9103,
  payments: 9104,
};
/** Deployments an overlay adds to the services: the local card-processor simulator. */
const EXTRA: Record<string, readonly string[]> = {
  base: [],
  local: ['processor-simulator'],
  production: [],
};
const SIMULATOR_PORT = 4010;
/** Only payments may read the card processor's endpoint and key. */
const PROCESSOR_SECRET = 'pcp-payment-processor';
const IMAGE = 'ghcr.io/example/pcp';
const WORKLOAD_KINDS = new Set(['Deployment', 'Job']);

// ---------------------------------------------------------------------------------------------
// Loading

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
    const value: unknown = doc.toJS();
    return value == null ? [] : [value as Doc];
  });
}

const ALL_FILES = [...yamlFiles(BASE), ...yamlFiles(join(K8S_DIR, 'overlays'))];
const isKustomization = (file: string) => /(^|\/)kustomization\.ya?ml$/.test(file);
const KUSTOMIZATION_FILES = ALL_FILES.filter(isKustomization);
const MANIFEST_FILES = ALL_FILES.filter((file) => !isKustomization(file));
const rel = (file: string) => relative(K8S_DIR, file);

interface Patch {
  path?: string;
  patch?: string;
  target?: {
    group?: string;
    version?: string;
    kind?: string;
    name?: string;
    labelSelector?: string;
  };
}
interface Kustomization {
  apiVersion?: string;
  kind?: string;
  resources?: string[];
  patches?: Patch[];
  images?: { name: string; newName?: string; newTag?: string }[];
  replicas?: { name: string; count: number }[];
  namespace?: string;
  labels?: {
    pairs: Record<string, string>;
    includeTemplates?: boolean;
    includeSelectors?: boolean;
  }[];
}

function loadKustomization(dir: string): Kustomization {
  return parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
}

// ---------------------------------------------------------------------------------------------
// A renderer for the kustomize features used here (resources, namespace, labels, images,
// replicas, strategic-merge and JSON 6902 patches). Anything else fails loudly.

const KNOWN_KUSTOMIZATION_KEYS = new Set([
  'apiVersion',
  'kind',
  'resources',
  'patches',
  'images',
  'replicas',
  'namespace',
  'labels',
]);
const CLUSTER_SCOPED = new Set(['Namespace']);

function podSpecOf(doc: Doc): Doc | undefined {
  return WORKLOAD_KINDS.has(doc.kind) ? (doc.spec?.template?.spec as Doc | undefined) : undefined;
}

function containersOf(doc: Doc): Doc[] {
  const spec = podSpecOf(doc);
  return spec
    ? [...((spec.initContainers as Doc[]) ?? []), ...((spec.containers as Doc[]) ?? [])]
    : [];
}

const isObject = (value: unknown): value is Doc =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Strategic merge as far as these patches need it: maps merge, lists of named items merge by name. */
function strategicMerge(target: unknown, patch: unknown): unknown {
  if (isObject(target) && isObject(patch)) {
    const out: Doc = { ...target };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete out[key];
      else out[key] = key in out ? strategicMerge(out[key], value) : value;
    }
    return out;
  }
  if (
    Array.isArray(target) &&
    Array.isArray(patch) &&
    patch.every((item) => isObject(item) && 'name' in item)
  ) {
    const out = [...(target as Doc[])];
    // Patch items not already present come first, as kustomize orders them.
    const added: Doc[] = [];
    for (const item of patch as Doc[]) {
      const index = out.findIndex((existing) => existing.name === item.name);
      if (index >= 0) out[index] = strategicMerge(out[index], item) as Doc;
      else added.push(item);
    }
    return [...added, ...out];
  }
  return patch;
}

function applyJsonPatch(doc: Doc, ops: Doc[]): Doc {
  const out = structuredClone(doc);
  for (const op of ops) {
    const keys = (op.path as string)
      .split('/')
      .slice(1)
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop()!;
    let parent: Doc = out;
    for (const key of keys) {
      parent = parent[key] as Doc;
      if (parent === undefined) throw new Error(`JSON patch path ${op.path} does not exist`);
    }
    if (op.op === 'replace') {
      if (!(last in parent)) throw new Error(`JSON patch replace of missing ${op.path}`);
      parent[last] = structuredClone(op.value);
    } else if (op.op === 'add') {
      if (Array.isArray(parent))
        parent.splice(last === '-' ? parent.length : Number(last), 0, op.value);
      else parent[last] = structuredClone(op.value);
    } else if (op.op === 'remove') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else {
      throw new Error(`JSON patch op ${op.op} is not supported by this renderer`);
    }
  }
  return out;
}

function matchesTarget(doc: Doc, target: NonNullable<Patch['target']>): boolean {
  const [group, version] = (doc.apiVersion as string).includes('/')
    ? (doc.apiVersion as string).split('/')
    : ['', doc.apiVersion as string];
  if (target.kind !== undefined && target.kind !== doc.kind) return false;
  if (target.name !== undefined && target.name !== doc.metadata.name) return false;
  if (target.group !== undefined && target.group !== group) return false;
  if (target.version !== undefined && target.version !== version) return false;
  if (target.labelSelector !== undefined) {
    return target.labelSelector.split(',').every((term) => {
      const [key, value] = term.split('=');
      return doc.metadata.labels?.[key!.trim()] === value?.trim();
    });
  }
  return true;
}

function render(dir: string): Doc[] {
  const k = loadKustomization(dir);
  const unknown = Object.keys(k).filter((key) => !KNOWN_KUSTOMIZATION_KEYS.has(key));
  if (unknown.length > 0)
    throw new Error(`${dir}: renderer does not support ${unknown.join(', ')}`);

  let docs = (k.resources ?? []).flatMap((entry) => {
    const path = resolve(dir, entry);
    return statSync(path).isDirectory() ? render(path) : loadDocs(path);
  });

  for (const patch of k.patches ?? []) {
    const content = patch.path ? readFileSync(resolve(dir, patch.path), 'utf8') : patch.patch!;
    const parsed = parseAllDocuments(content).map((d) => d.toJS() as unknown);
    if (parsed.length === 1 && Array.isArray(parsed[0])) {
      if (!patch.target) throw new Error('JSON 6902 patches need a target');
      const targetCount = docs.filter((doc) => matchesTarget(doc, patch.target!)).length;
      if (targetCount === 0)
        throw new Error(`patch target matches nothing: ${JSON.stringify(patch.target)}`);
      docs = docs.map((doc) =>
        matchesTarget(doc, patch.target!) ? applyJsonPatch(doc, parsed[0] as Doc[]) : doc,
      );
      continue;
    }
    for (const smp of parsed as Doc[]) {
      const match = (doc: Doc) =>
        patch.target
          ? matchesTarget(doc, patch.target)
          : doc.kind === smp.kind && doc.metadata.name === smp.metadata.name;
      if (!docs.some(match))
        throw new Error(`patch ${smp.kind}/${smp.metadata?.name} matches nothing`);
      docs = docs.map((doc) =>
        match(doc)
          ? (strategicMerge(doc, {
              ...smp,
              metadata: { ...smp.metadata, name: doc.metadata.name },
            }) as Doc)
          : doc,
      );
    }
  }

  docs = docs.map((input) => {
    const doc = structuredClone(input);
    if (k.namespace && !CLUSTER_SCOPED.has(doc.kind)) doc.metadata.namespace = k.namespace;
    for (const { pairs, includeTemplates, includeSelectors } of k.labels ?? []) {
      if (includeSelectors) throw new Error('renderer does not support labels.includeSelectors');
      doc.metadata.labels = { ...doc.metadata.labels, ...pairs };
      if (includeTemplates && podSpecOf(doc)) {
        doc.spec.template.metadata ??= {};
        doc.spec.template.metadata.labels = { ...doc.spec.template.metadata.labels, ...pairs };
      }
    }
    for (const container of containersOf(doc)) {
      const [, name, tag] = /^(.*?)(?::([^:/@]+))?(?:@.*)?$/.exec(container.image as string)!;
      const image = k.images?.find((candidate) => candidate.name === name);
      if (image) container.image = `${image.newName ?? name}:${image.newTag ?? tag}`;
    }
    const replicas = k.replicas?.find((r) => r.name === doc.metadata.name);
    if (replicas && doc.kind === 'Deployment') doc.spec.replicas = replicas.count;
    return doc;
  });
  for (const r of k.replicas ?? []) {
    if (!docs.some((doc) => doc.kind === 'Deployment' && doc.metadata.name === r.name)) {
      throw new Error(`${dir}: replicas for unknown Deployment ${r.name}`);
    }
  }
  return docs;
}

const RENDERED: Record<string, Doc[]> = {
  base: render(BASE),
  local: render(OVERLAYS.local),
  production: render(OVERLAYS.production),
};

function find(docs: Doc[], kind: string, name: string): Doc {
  const doc = docs.find((d) => d.kind === kind && d.metadata.name === name);
  if (!doc) throw new Error(`${kind}/${name} not found`);
  return doc;
}

// ---------------------------------------------------------------------------------------------
// Unknown-field check. kubernetes-models validates types and required fields but accepts any
// extra key, so a misspelled `livenesProbe` would silently drop the probe. These allow-lists
// mirror the Kubernetes 1.33 API (and a test below keeps them equal to kubernetes-models).

type FieldSet = Record<string, string | null>;
const leaf = (...names: string[]): FieldSet => Object.fromEntries(names.map((n) => [n, null]));

const SCHEMA: Record<string, { model: string; fields: FieldSet }> = {
  DeploymentSpec: {
    model: 'apps/v1/DeploymentSpec',
    fields: {
      ...leaf(
        'minReadySeconds',
        'paused',
        'progressDeadlineSeconds',
        'replicas',
        'revisionHistoryLimit',
        'selector',
        'strategy',
      ),
      template: 'PodTemplateSpec',
    },
  },
  JobSpec: {
    model: 'batch/v1/JobSpec',
    fields: {
      ...leaf(
        'activeDeadlineSeconds',
        'backoffLimit',
        'backoffLimitPerIndex',
        'completionMode',
        'completions',
        'managedBy',
        'manualSelector',
        'maxFailedIndexes',
        'parallelism',
        'podFailurePolicy',
        'podReplacementPolicy',
        'selector',
        'successPolicy',
        'suspend',
        'ttlSecondsAfterFinished',
      ),
      template: 'PodTemplateSpec',
    },
  },
  PodTemplateSpec: { model: 'v1/PodTemplateSpec', fields: { metadata: null, spec: 'PodSpec' } },
  PodSpec: {
    model: 'v1/PodSpec',
    fields: {
      ...leaf(
        'activeDeadlineSeconds',
        'affinity',
        'automountServiceAccountToken',
        'dnsConfig',
        'dnsPolicy',
        'enableServiceLinks',
        'ephemeralContainers',
        'hostAliases',
        'hostIPC',
        'hostNetwork',
        'hostPID',
        'hostUsers',
        'hostname',
        'imagePullSecrets',
        'nodeName',
        'nodeSelector',
        'os',
        'overhead',
        'preemptionPolicy',
        'priority',
        'priorityClassName',
        'readinessGates',
        'resourceClaims',
        'restartPolicy',
        'runtimeClassName',
        'schedulerName',
        'schedulingGates',
        'serviceAccount',
        'serviceAccountName',
        'setHostnameAsFQDN',
        'shareProcessNamespace',
        'subdomain',
        'terminationGracePeriodSeconds',
        'tolerations',
      ),
      containers: 'Container',
      initContainers: 'Container',
      resources: 'ResourceRequirements',
      securityContext: 'PodSecurityContext',
      topologySpreadConstraints: 'TopologySpreadConstraint',
      volumes: 'Volume',
    },
  },
  Container: {
    model: 'v1/Container',
    fields: {
      ...leaf(
        'args',
        'command',
        'image',
        'imagePullPolicy',
        'name',
        'resizePolicy',
        'restartPolicy',
        'stdin',
        'stdinOnce',
        'terminationMessagePath',
        'terminationMessagePolicy',
        'tty',
        'volumeDevices',
        'workingDir',
      ),
      env: 'EnvVar',
      envFrom: 'EnvFromSource',
      lifecycle: 'Lifecycle',
      livenessProbe: 'Probe',
      readinessProbe: 'Probe',
      startupProbe: 'Probe',
      ports: 'ContainerPort',
      resources: 'ResourceRequirements',
      securityContext: 'SecurityContext',
      volumeMounts: 'VolumeMount',
    },
  },
  Probe: {
    model: 'v1/Probe',
    fields: {
      ...leaf(
        'exec',
        'failureThreshold',
        'grpc',
        'initialDelaySeconds',
        'periodSeconds',
        'successThreshold',
        'tcpSocket',
        'terminationGracePeriodSeconds',
        'timeoutSeconds',
      ),
      httpGet: 'HTTPGetAction',
    },
  },
  HTTPGetAction: {
    model: 'v1/HTTPGetAction',
    fields: leaf('host', 'httpHeaders', 'path', 'port', 'scheme'),
  },
  SecurityContext: {
    model: 'v1/SecurityContext',
    fields: {
      ...leaf(
        'allowPrivilegeEscalation',
        'appArmorProfile',
        'privileged',
        'procMount',
        'readOnlyRootFilesystem',
        'runAsGroup',
        'runAsNonRoot',
        'runAsUser',
        'seLinuxOptions',
        'windowsOptions',
      ),
      capabilities: 'Capabilities',
      seccompProfile: 'SeccompProfile',
    },
  },
  PodSecurityContext: {
    model: 'v1/PodSecurityContext',
    fields: {
      ...leaf(
        'appArmorProfile',
        'fsGroup',
        'fsGroupChangePolicy',
        'runAsGroup',
        'runAsNonRoot',
        'runAsUser',
        'seLinuxChangePolicy',
        'seLinuxOptions',
        'supplementalGroups',
        'supplementalGroupsPolicy',
        'sysctls',
        'windowsOptions',
      ),
      seccompProfile: 'SeccompProfile',
    },
  },
  Capabilities: { model: 'v1/Capabilities', fields: leaf('add', 'drop') },
  SeccompProfile: { model: 'v1/SeccompProfile', fields: leaf('localhostProfile', 'type') },
  ResourceRequirements: {
    model: 'v1/ResourceRequirements',
    fields: leaf('claims', 'limits', 'requests'),
  },
  Lifecycle: {
    model: 'v1/Lifecycle',
    fields: { postStart: 'LifecycleHandler', preStop: 'LifecycleHandler', stopSignal: null },
  },
  LifecycleHandler: {
    model: 'v1/LifecycleHandler',
    fields: { exec: null, httpGet: 'HTTPGetAction', sleep: 'SleepAction', tcpSocket: null },
  },
  SleepAction: { model: 'v1/SleepAction', fields: leaf('seconds') },
  ContainerPort: {
    model: 'v1/ContainerPort',
    fields: leaf('containerPort', 'hostIP', 'hostPort', 'name', 'protocol'),
  },
  EnvVar: { model: 'v1/EnvVar', fields: leaf('name', 'value', 'valueFrom') },
  EnvFromSource: {
    model: 'v1/EnvFromSource',
    fields: { configMapRef: 'ConfigMapEnvSource', prefix: null, secretRef: 'SecretEnvSource' },
  },
  ConfigMapEnvSource: { model: 'v1/ConfigMapEnvSource', fields: leaf('name', 'optional') },
  SecretEnvSource: { model: 'v1/SecretEnvSource', fields: leaf('name', 'optional') },
  VolumeMount: {
    model: 'v1/VolumeMount',
    fields: leaf(
      'mountPath',
      'mountPropagation',
      'name',
      'readOnly',
      'recursiveReadOnly',
      'subPath',
      'subPathExpr',
    ),
  },
  Volume: {
    model: 'v1/Volume',
    fields: {
      ...leaf(
        'awsElasticBlockStore',
        'azureDisk',
        'azureFile',
        'cephfs',
        'cinder',
        'configMap',
        'csi',
        'downwardAPI',
        'ephemeral',
        'fc',
        'flexVolume',
        'flocker',
        'gcePersistentDisk',
        'gitRepo',
        'glusterfs',
        'hostPath',
        'image',
        'iscsi',
        'name',
        'nfs',
        'persistentVolumeClaim',
        'photonPersistentDisk',
        'portworxVolume',
        'projected',
        'quobyte',
        'rbd',
        'scaleIO',
        'secret',
        'storageos',
        'vsphereVolume',
      ),
      emptyDir: 'EmptyDirVolumeSource',
    },
  },
  EmptyDirVolumeSource: { model: 'v1/EmptyDirVolumeSource', fields: leaf('medium', 'sizeLimit') },
  TopologySpreadConstraint: {
    model: 'v1/TopologySpreadConstraint',
    fields: leaf(
      'labelSelector',
      'matchLabelKeys',
      'maxSkew',
      'minDomains',
      'nodeAffinityPolicy',
      'nodeTaintsPolicy',
      'topologyKey',
      'whenUnsatisfiable',
    ),
  },
};

/** Paths of keys that the Kubernetes API does not define, checked recursively from `type`. */
function unknownFields(value: unknown, type: string, path = ''): string[] {
  if (Array.isArray(value))
    return value.flatMap((item, i) => unknownFields(item, type, `${path}[${i}]`));
  if (!isObject(value)) return [];
  const { fields } = SCHEMA[type]!;
  return Object.entries(value).flatMap(([key, child]) => {
    if (!Object.hasOwn(fields, key)) return [`${path}.${key}`];
    const childType = fields[key];
    return childType ? unknownFields(child, childType, `${path}.${key}`) : [];
  });
}

function workloadUnknownFields(doc: Doc): string[] {
  if (doc.kind === 'Deployment') return unknownFields(doc.spec, 'DeploymentSpec', 'spec');
  if (doc.kind === 'Job') return unknownFields(doc.spec, 'JobSpec', 'spec');
  return [];
}

// ---------------------------------------------------------------------------------------------

type Validator = new (data: Doc) => { validate(): void };
const MODELS: Record<string, Validator> = {
  'apps/v1/Deployment': Deployment,
  'batch/v1/Job': Job,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
};

function cpuMillis(quantity: string | number): number {
  const match = /^(\d+(?:\.\d+)?)(m?)$/.exec(String(quantity));
  if (!match) throw new Error(`unsupported cpu quantity ${quantity}`);
  return match[2] === 'm' ? Number(match[1]) : Number(match[1]) * 1000;
}

function memoryBytes(quantity: string | number): number {
  const match = /^(\d+)(Ki|Mi|Gi)?$/.exec(String(quantity));
  if (!match) throw new Error(`unsupported memory quantity ${quantity}`);
  return Number(match[1]) * { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[match[2] ?? '']!;
}

describe('YAML files', () => {
  it('finds the base and both overlays', () => {
    expect(KUSTOMIZATION_FILES.map(rel).sort()).toEqual([
      'base/kustomization.yaml',
      'overlays/local/kustomization.yaml',
      'overlays/production/kustomization.yaml',
    ]);
  });

  it.each(MANIFEST_FILES.map(rel))(
    '%s: every document has apiVersion, kind and metadata.name',
    (file) => {
      const docs = loadDocs(join(K8S_DIR, file));
      expect(docs.length).toBeGreaterThan(0);
      for (const doc of docs) {
        expect(doc.apiVersion, file).toEqual(expect.any(String));
        expect(doc.kind, file).toEqual(expect.any(String));
        expect(doc.metadata?.name, file).toEqual(expect.any(String));
      }
    },
  );

  it.each(MANIFEST_FILES.map(rel))(
    '%s: workloads and patches use only known pod and container fields',
    (file) => {
      for (const doc of loadDocs(join(K8S_DIR, file))) {
        expect(workloadUnknownFields(doc), `${file} ${doc.kind}/${doc.metadata.name}`).toEqual([]);
      }
    },
  );
});

describe('kustomizations', () => {
  it.each(KUSTOMIZATION_FILES.map(rel))('%s: listed resources and patches exist', (file) => {
    const dir = dirname(join(K8S_DIR, file));
    const k = loadKustomization(dir);
    expect(k.kind).toBe('Kustomization');
    expect(k.resources?.length).toBeGreaterThan(0);
    for (const entry of k.resources ?? []) {
      const path = resolve(dir, entry);
      expect(existsSync(path), `${file}: resource ${entry}`).toBe(true);
      if (statSync(path).isDirectory())
        expect(existsSync(join(path, 'kustomization.yaml')), entry).toBe(true);
    }
    for (const patch of k.patches ?? []) {
      expect(patch.path ?? patch.patch, `${file}: patch needs path or patch`).toBeDefined();
      if (patch.path)
        expect(existsSync(resolve(dir, patch.path)), `${file}: patch ${patch.path}`).toBe(true);
    }
  });

  it('every YAML file is used, except the Secret example which must not be', () => {
    const used = new Set<string>();
    for (const file of KUSTOMIZATION_FILES) {
      const dir = dirname(file);
      const k = loadKustomization(dir);
      for (const entry of k.resources ?? []) used.add(resolve(dir, entry));
      for (const patch of k.patches ?? []) if (patch.path) used.add(resolve(dir, patch.path));
    }
    const unused = MANIFEST_FILES.filter((file) => !used.has(file)).map(rel);
    expect(unused).toEqual(['base/secret.example.yaml']);
  });

  it('the Secret example names the Secrets and keys the workloads read', () => {
    const secrets = loadDocs(join(BASE, 'secret.example.yaml'));
    const keys = Object.fromEntries(
      secrets.map((secret) => {
        expect(secret).toMatchObject({ kind: 'Secret', metadata: { namespace: 'pcp' } });
        expect(() => new Secret(secret).validate()).not.toThrow();
        return [secret.metadata.name, Object.keys(secret.stringData).sort()];
      }),
    );
    expect(keys).toEqual({
      'pcp-connections': ['DATABASE_URL', 'NATS_URL', 'REDIS_URL'],
      [PROCESSOR_SECRET]: ['PAYMENT_PROCESSOR_API_KEY', 'PAYMENT_PROCESSOR_URL'],
    });
    // Every Secret a rendered workload reads is described by the example.
    const referenced = new Set(
      Object.values(RENDERED)
        .flat()
        .flatMap(containersOf)
        .flatMap((c) => (c.envFrom as Doc[] | undefined) ?? [])
        .flatMap((source) => (source.secretRef ? [source.secretRef.name as string] : [])),
    );
    expect([...referenced].sort()).toEqual(Object.keys(keys).sort());
  });
});

describe.each(Object.keys(RENDERED))('rendered %s', (name) => {
  const docs = RENDERED[name]!;
  const deployments = docs.filter((d) => d.kind === 'Deployment');
  const workloads = docs.filter((d) => WORKLOAD_KINDS.has(d.kind));
  const extra = EXTRA[name]!;
  const isService = (doc: Doc) => (SERVICES as readonly string[]).includes(doc.metadata.name);
  const serviceDeployments = deployments.filter(isService);

  it('has one Deployment, Service and ServiceAccount per service, the Job, ConfigMap and Namespace', () => {
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual([...SERVICES, ...extra].sort());
    for (const service of [...SERVICES, ...extra]) {
      find(docs, 'Service', service);
      find(docs, 'ServiceAccount', service);
    }
    find(docs, 'Job', 'pcp-migrate');
    find(docs, 'ConfigMap', 'pcp-config');
    find(docs, 'Namespace', 'pcp');
    expect(docs.filter((d) => d.kind === 'Secret')).toEqual([]);
    for (const doc of docs)
      if (doc.kind !== 'Namespace') expect(doc.metadata.namespace).toBe('pcp');
  });

  it('every object validates against the Kubernetes schema (kubernetes-models)', () => {
    for (const doc of docs) {
      const Model = MODELS[`${doc.apiVersion}/${doc.kind}`];
      expect(Model, `no model for ${doc.apiVersion} ${doc.kind}`).toBeDefined();
      expect(() => new Model!(doc).validate(), `${doc.kind}/${doc.metadata.name}`).not.toThrow();
    }
  });

  it('pod specs and containers have no unknown fields', () => {
    for (const doc of workloads) expect(workloadUnknownFields(doc), doc.metadata.name).toEqual([]);
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
        if (extra.includes(doc.metadata.name)) {
          // The simulator needs neither the shared configuration nor any credential.
          expect(container.envFrom, where).toBeUndefined();
          continue;
        }
        expect(container.envFrom, where).toEqual([
          { configMapRef: { name: 'pcp-config' } },
          { secretRef: { name: 'pcp-connections' } },
          ...(doc.kind === 'Deployment' && doc.metadata.name === 'payments'
            ? [{ secretRef: { name: PROCESSOR_SECRET } }]
            : []),
        ]);
      }
    }
  });

  it('only the payments Deployment references the card processor Secret', () => {
    const references = (doc: Doc) => JSON.stringify(doc).includes(PROCESSOR_SECRET);
    expect(docs.filter(references).map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'Deployment/payments',
    ]);
    const [payments] = find(docs, 'Deployment', 'payments').spec.template.spec.containers;
    expect(payments.envFrom).toContainEqual({ secretRef: { name: PROCESSOR_SECRET } });
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
      const env = Object.fromEntries((container!.env as Doc[]).map((e) => [e.name, e.value]));
      expect(env.MIGRATE_ON_START).toBe('false');
      // Readiness and metrics on the ops port; the gateway's liveness on its public port.
      const opsPort = OPS_PORTS[service]!;
      expect(env.OPS_PORT).toBe(String(opsPort));
      const livePort = service === 'gateway' ? 8080 : opsPort;
      if (service === 'gateway') expect(env.PORT).toBe('8080');
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
      expect(doc.spec.template.metadata.annotations).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': String(opsPort),
        'prometheus.io/path': '/metrics',
      });
      // SIGTERM arrives after any preStop sleep; shutdown (10 s) must finish inside the grace period.
      const preStop = Number(container!.lifecycle?.preStop?.sleep?.seconds ?? 0);
      expect(pod.terminationGracePeriodSeconds).toBe(30);
      expect(preStop + 10).toBeLessThan(pod.terminationGracePeriodSeconds as number);
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
      expect(labels).toMatchObject(doc.spec.selector.matchLabels);
      const service = find(docs, 'Service', doc.metadata.name);
      expect(Object.keys(service.spec.selector).length).toBeGreaterThan(0);
      expect(labels).toMatchObject(service.spec.selector);
      const others = deployments.filter(
        (other) =>
          other !== doc &&
          Object.entries(service.spec.selector).every(
            ([k, v]) => other.spec.template.metadata.labels[k] === v,
          ),
      );
      expect(others, `Service ${doc.metadata.name} selects other Deployments`).toEqual([]);
      const portNames = (doc.spec.template.spec.containers[0].ports as Doc[]).map((p) => p.name);
      for (const port of service.spec.ports as Doc[]) expect(portNames).toContain(port.targetPort);
    }
  });

  it('gateway and stores have a PodDisruptionBudget and a CPU autoscaler', () => {
    for (const service of ['gateway', 'stores']) {
      const labels = find(docs, 'Deployment', service).spec.template.metadata.labels;
      expect(labels).toMatchObject(
        find(docs, 'PodDisruptionBudget', service).spec.selector.matchLabels,
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
      expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
      // The autoscaler never holds fewer pods than the overlay asks for, nor more at rest.
      expect(hpa.spec.minReplicas).toBe(find(docs, 'Deployment', service).spec.replicas);
    }
  });

  it('the migration Job runs the gateway, stores, catalog, ordering and payments migrations once, in order', () => {
    const job = find(docs, 'Job', 'pcp-migrate');
    const pod = podSpecOf(job)!;
    expect(pod.restartPolicy).toBe('Never');
    expect(containersOf(job).map((c) => c.command)).toEqual([
      ['node', 'services/gateway/dist/main.js', 'migrate'],
      ['node', 'services/stores/dist/main.js', 'migrate'],
      ['node', 'services/catalog/dist/main.js', 'migrate'],
      ['node', 'services/ordering/dist/main.js', 'migrate'],
      ['node', 'services/payments/dist/main.js', 'migrate'],
    ]);
    // Init containers run one at a time; the last one is the Job's container.
    expect((pod.containers as Doc[]).map((c) => c.name)).toEqual(['migrate-payments']);
    expect(job.spec.backoffLimit).toBeGreaterThanOrEqual(0);
    expect(job.spec.activeDeadlineSeconds).toBeGreaterThan(0);
  });
});

describe('overlays', () => {
  const replicas = (docs: Doc[]) =>
    Object.fromEntries(
      docs.filter((d) => d.kind === 'Deployment').map((d) => [d.metadata.name, d.spec.replicas]),
    );
  const images = (docs: Doc[]) => new Set(docs.flatMap(containersOf).map((c) => c.image));

  it('base uses the latest image', () => {
    expect(images(RENDERED.base!)).toEqual(new Set([`${IMAGE}:latest`]));
  });

  it('local: one replica each, debug logs, the dev image', () => {
    expect(loadKustomization(OVERLAYS.local).replicas).toHaveLength(SERVICES.length);
    expect(replicas(RENDERED.local!)).toEqual({
      gateway: 1,
      stores: 1,
      catalog: 1,
      ordering: 1,
      payments: 1,
      'processor-simulator': 1,
    });
    expect(find(RENDERED.local!, 'ConfigMap', 'pcp-config').data.LOG_LEVEL).toBe('debug');
    expect(images(RENDERED.local!)).toEqual(new Set([`${IMAGE}:dev`]));
  });

  it('local: the processor simulator listens on all interfaces, with probes on its /health', () => {
    const docs = RENDERED.local!;
    const doc = find(docs, 'Deployment', 'processor-simulator');
    const pod = podSpecOf(doc)!;
    expect(doc.spec.replicas).toBe(1);
    expect(pod.initContainers).toBeUndefined();
    expect(pod.containers).toHaveLength(1);
    const [container] = pod.containers as Doc[];
    expect(container!.command).toEqual(['node', 'services/processor-simulator/dist/main.js']);
    const env = Object.fromEntries((container!.env as Doc[]).map((e) => [e.name, e.value]));
    // No database, no MIGRATE_ON_START, no ops port: only its own settings.
    expect(env).toEqual({
      HOST: '0.0.0.0',
      PORT: String(SIMULATOR_PORT),
      PROCESSOR_API_KEY: 'sk_test_simulator',
    });
    expect(container!.ports).toEqual([
      { name: 'http', containerPort: SIMULATOR_PORT, protocol: 'TCP' },
    ]);
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      expect(container![probe]?.httpGet, probe).toEqual({ path: '/health', port: 'http' });
    }
    expect(pod.terminationGracePeriodSeconds).toBe(30);
    expect(pod.serviceAccountName).toBe('processor-simulator');
    expect(find(docs, 'ServiceAccount', 'processor-simulator').automountServiceAccountToken).toBe(
      false,
    );
    // payments reaches it as http://processor-simulator:4010 (deploy/k8s/README.md).
    const service = find(docs, 'Service', 'processor-simulator');
    expect(service.spec.type).toBe('ClusterIP');
    expect(service.spec.ports).toEqual([
      { name: 'http', port: SIMULATOR_PORT, targetPort: 'http', protocol: 'TCP' },
    ]);
  });

  it('base and production have no processor simulator (production calls the real processor)', () => {
    for (const name of ['base', 'production']) {
      const mentions = RENDERED[name]!.filter((doc) =>
        JSON.stringify(doc).includes('processor-simulator'),
      );
      expect(
        mentions.map((d) => `${d.kind}/${d.metadata.name}`),
        name,
      ).toEqual([]);
    }
  });

  it('catalog and ordering: memory limits cover the budgets their configuration sets', () => {
    const MiB = 1024 ** 2;
    /** A container's env value, or the service's default when the manifest leaves it out. */
    const setting = (container: Doc, name: string, fallback: number) =>
      Number(
        (container.env as Doc[]).find((variable) => variable.name === name)?.value ?? fallback,
      );
    for (const rendered of [RENDERED.base!, RENDERED.production!]) {
      const catalog = find(rendered, 'Deployment', 'catalog').spec.template.spec.containers[0];
      // Baseline RSS 150 MiB (bench:ingest), the chunk cache, and per ingest in flight: its
      // thread's heap cap plus ~30 MiB of thread, the downloaded bytes and the serialized
      // document (50 MiB each at most).
      const catalogNeeds =
        160 * MiB +
        setting(catalog, 'CATALOG_DOCUMENT_CACHE_BYTES', 64 * MiB) +
        setting(catalog, 'CATALOG_INGEST_CONCURRENCY', 2) *
          (setting(catalog, 'CATALOG_INGEST_THREAD_HEAP_MB', 384) * MiB + 130 * MiB) +
        // Dry runs (catalogset-validation) share those threads; each holds its downloaded
        // bytes (50 MiB at most) while it waits for one.
        setting(catalog, 'CATALOG_VALIDATION_MAX_IN_PROGRESS', 2) * 50 * MiB;
      expect(memoryBytes(catalog.resources.limits.memory)).toBeGreaterThanOrEqual(catalogNeeds);

      const ordering = find(rendered, 'Deployment', 'ordering').spec.template.spec.containers[0];
      // Baseline RSS 120 MiB, the compiled-catalog cache, and two compiles in flight (a
      // 100k-item catalog took 250 MiB above the baseline in bench:ingest).
      const orderingNeeds =
        120 * MiB + setting(ordering, 'ORDERING_CATALOG_CACHE_BYTES', 256 * MiB) + 2 * 250 * MiB;
      expect(memoryBytes(ordering.resources.limits.memory)).toBeGreaterThanOrEqual(orderingNeeds);
    }
  });

  it('production: gateway 3, every other service 2, a pinned image, larger resources', () => {
    expect(replicas(RENDERED.production!)).toEqual({
      gateway: 3,
      stores: 2,
      catalog: 2,
      ordering: 2,
      payments: 2,
    });
    expect(find(RENDERED.production!, 'ConfigMap', 'pcp-config').data.LOG_LEVEL).toBe('info');
    const [image] = [...images(RENDERED.production!)];
    expect(images(RENDERED.production!).size).toBe(1);
    expect(image).toMatch(new RegExp(`^${IMAGE}:\\d+\\.\\d+\\.\\d+$`));
    for (const service of SERVICES) {
      const base = find(RENDERED.base!, 'Deployment', service).spec.template.spec.containers[0]
        .resources;
      const prod = find(RENDERED.production!, 'Deployment', service).spec.template.spec
        .containers[0].resources;
      expect(cpuMillis(prod.limits.cpu), service).toBeGreaterThan(cpuMillis(base.limits.cpu));
      expect(memoryBytes(prod.limits.memory), service).toBeGreaterThan(
        memoryBytes(base.limits.memory),
      );
    }
  });

  const kubectl = (() => {
    try {
      execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();

  it.runIf(kubectl).each(Object.entries({ base: BASE, ...OVERLAYS }))(
    '%s: this renderer matches `kubectl kustomize` (only when kubectl is installed)',
    (_name, dir) => {
      const key = (d: Doc) => `${d.kind}/${d.metadata.namespace ?? ''}/${d.metadata.name}`;
      const sort = (docs: Doc[]) => [...docs].sort((a, b) => key(a).localeCompare(key(b)));
      const output = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
      const expected = parseAllDocuments(output).map((d) => d.toJS() as Doc);
      expect(sort(render(dir))).toEqual(sort(expected));
    },
  );
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

  it('the unknown-field check rejects a misspelled livenessProbe that kubernetes-models accepts', () => {
    const doc = deployment({ livenesProbe: { httpGet: { path: '/health/live', port: 8080 } } });
    expect(() => new Deployment(doc).validate()).not.toThrow();
    expect(workloadUnknownFields(doc)).toEqual(['spec.template.spec.containers[0].livenesProbe']);
  });

  it('the unknown-field check looks inside nested objects and the pod spec', () => {
    const doc = deployment({
      securityContext: { readOnlyRootFileSystem: true },
      readinessProbe: { httpGet: { paht: '/' } },
    });
    doc.spec.template.spec.terminationGracePeriod = 30;
    expect(workloadUnknownFields(doc).sort()).toEqual([
      'spec.template.spec.containers[0].readinessProbe.httpGet.paht',
      'spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem',
      'spec.template.spec.terminationGracePeriod',
    ]);
  });

  it('kubernetes-models rejects a Deployment without a selector', () => {
    const doc = deployment({});
    delete doc.spec.selector;
    expect(() => new Deployment(doc).validate()).toThrow(/selector/);
  });

  it('the allow-lists match the kubernetes-models API definitions exactly', () => {
    const require = createRequire(import.meta.url);
    for (const [type, { model, fields }] of Object.entries(SCHEMA)) {
      const dts = readFileSync(
        require.resolve(`kubernetes-models/${model}`).replace(/\.js$/, '.d.ts'),
        'utf8',
      );
      const body = /export interface I\w+ \{\n([\s\S]*?)\n\}/.exec(dts)![1]!;
      const known = [...body.matchAll(/^ {4}"(\w+)"\??:/gm)].map((m) => m[1]);
      expect(Object.keys(fields).sort(), type).toEqual(known.sort());
    }
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
      HOST: '0.0.0.0',
      PORT: String(SIMULATOR_PORT),
      PROCESSOR_API_KEY: 'sk_test_simulator',
    });
    expect(simulator.healthcheck.test.join(' ')).toContain(
      `http://127.0.0.1:${SIMULATOR_PORT}/health`,
    );
    expect(simulator.ports).toBeUndefined();
    expect(services.payments!.environment).toMatchObject({
      PAYMENT_PROCESSOR_URL: `http://processor-simulator:${SIMULATOR_PORT}`,
      PAYMENT_PROCESSOR_API_KEY: simulator.environment.PROCESSOR_API_KEY,
    });
    expect(services.payments!.depends_on['processor-simulator']).toEqual({
      condition: 'service_healthy',
    });
    const withKey = Object.entries(services)
      .filter(([, service]) => service.environment?.PAYMENT_PROCESSOR_API_KEY !== undefined)
      .map(([name]) => name);
    expect(withKey).toEqual(['payments']);
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
    expect(services.gateway!.ports).toEqual(['8080:8080']);
  });
});
