/**
 * Renders the kustomizations with the real kustomize (`kubectl kustomize`) and offers the
 * small helpers the deploy tests share. Under CI a missing kubectl fails the tests that need
 * it; elsewhere they are skipped with a message naming what to install.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

// Parsed YAML is untyped by nature; the assertions are what give it shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Doc = Record<string, any>;

export const DEPLOY_DIR = fileURLToPath(new URL('../', import.meta.url));
export const K8S_DIR = fileURLToPath(new URL('../k8s/', import.meta.url));
export const POSTGRES_DIR = fileURLToPath(new URL('../postgres/', import.meta.url));
export const KUSTOMIZATIONS = {
  base: `${K8S_DIR}base`,
  local: `${K8S_DIR}overlays/local`,
  production: `${K8S_DIR}overlays/production`,
} as const;

export const SERVICES = ['gateway', 'stores', 'catalog', 'ordering', 'payments'] as const;
export type ServiceName = (typeof SERVICES)[number];

const INSTALL_HINT =
  'kubectl (1.27+, which bundles kustomize) is not installed: install it to render and check ' +
  'deploy/k8s and deploy/postgres (https://kubernetes.io/docs/tasks/tools/, or ' +
  '`apt-get install -y kubectl` from the Kubernetes apt repository)';

function kubectlInstalled(): boolean {
  try {
    execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const inCi = (process.env.CI ?? '') !== '' && !['0', 'false'].includes(process.env.CI ?? '');

/** Whether kubectl can render; throws under CI, where the checks must not be skipped. */
export const KUBECTL = (() => {
  if (kubectlInstalled()) return true;
  if (inCi) throw new Error(`${INSTALL_HINT}. CI must check the manifests.`);
  console.warn(`Skipping the manifest checks: ${INSTALL_HINT}.`);
  return false;
})();

/** `kubectl kustomize <dir>`, parsed. */
export function render(dir: string): Doc[] {
  const output = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  return parseAllDocuments(output).flatMap((doc) => {
    if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('; '));
    const value = doc.toJS() as Doc | null;
    return value ? [value] : [];
  });
}

export function find(docs: readonly Doc[], kind: string, name: string): Doc {
  const doc = docs.find((d) => d.kind === kind && d.metadata.name === name);
  if (!doc) throw new Error(`${kind}/${name} not found`);
  return doc;
}

const WORKLOAD_KINDS = new Set(['Deployment', 'Job']);

export function podSpecOf(doc: Doc): Doc | undefined {
  return WORKLOAD_KINDS.has(doc.kind as string)
    ? (doc.spec?.template?.spec as Doc | undefined)
    : undefined;
}

export function containersOf(doc: Doc): Doc[] {
  const spec = podSpecOf(doc);
  return spec
    ? [...((spec.initContainers as Doc[]) ?? []), ...((spec.containers as Doc[]) ?? [])]
    : [];
}

/**
 * A variable as the container sees it: its own `env` first (literal values only), then the
 * ConfigMaps of its `envFrom`, as Kubernetes resolves them; undefined when neither sets it.
 */
export function envValue(docs: readonly Doc[], container: Doc, name: string): string | undefined {
  const own = ((container.env as Doc[] | undefined) ?? []).find((e) => e.name === name);
  if (own) return own.value as string | undefined;
  for (const source of ((container.envFrom as Doc[] | undefined) ?? []).slice().reverse()) {
    const configMap = source.configMapRef?.name as string | undefined;
    const value = configMap ? find(docs, 'ConfigMap', configMap).data?.[name] : undefined;
    if (value !== undefined) return value as string;
  }
  return undefined;
}

export function cpuMillis(quantity: string | number): number {
  const match = /^(\d+(?:\.\d+)?)(m?)$/.exec(String(quantity));
  if (!match) throw new Error(`unsupported cpu quantity ${quantity}`);
  return match[2] === 'm' ? Number(match[1]) : Number(match[1]) * 1000;
}

export function memoryBytes(quantity: string | number): number {
  const match = /^(\d+)(Ki|Mi|Gi)?$/.exec(String(quantity));
  if (!match) throw new Error(`unsupported memory quantity ${quantity}`);
  return Number(match[1]) * { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[match[2] ?? '']!;
}
