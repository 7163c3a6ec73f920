// Each process's memory limit as the Kubernetes manifests give it: the base Deployment's, and
// the production overlay's as kustomize renders it (kubectl kustomize, when kubectl is here).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '@pcp/setup';
import { parseAllDocuments } from 'yaml';

const K8S = join(root, 'deploy', 'k8s');
export const PRODUCTION_OVERLAY = 'deploy/k8s/overlays/production';

/** A process's container as a manifest gives it. */
export interface ManifestMemory {
  /** resources.limits.memory in bytes. */
  limitBytes: number;
  requestBytes?: number;
  /** The container's NODE_OPTIONS, when its manifest sets one. */
  nodeOptions?: string;
}

export interface ManifestLimits {
  base: Map<string, ManifestMemory>;
  /** The production overlay's, rendered; undefined without kubectl. */
  production?: Map<string, ManifestMemory>;
}

const UNITS: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
};

/** A Kubernetes memory quantity ("384Mi", "1Gi", "512M", "268435456") in bytes. */
export function memoryBytes(quantity: string | number): number {
  const match = /^(\d+(?:\.\d+)?)([kMG]i?|Ki)?$/.exec(String(quantity).trim());
  const unit = UNITS[match?.[2] ?? ''];
  if (!match || unit === undefined) throw new Error(`not a memory quantity: ${quantity}`);
  return Number(match[1]) * unit;
}

// Parsed YAML is untyped; only the fields read below are described.
interface Container {
  name?: string;
  env?: { name: string; value?: string }[];
  resources?: { limits?: { memory?: string }; requests?: { memory?: string } };
}
interface Manifest {
  kind?: string;
  metadata?: { name?: string };
  spec?: { template?: { spec?: { containers?: Container[] } } };
}

/** The memory of each Deployment's first container in `docs`, by Deployment name. */
export function deploymentMemory(docs: readonly Manifest[]): Map<string, ManifestMemory> {
  const memory = new Map<string, ManifestMemory>();
  for (const doc of docs) {
    const container = doc.spec?.template?.spec?.containers?.[0];
    const limit = container?.resources?.limits?.memory;
    if (doc.kind !== 'Deployment' || !doc.metadata?.name || limit === undefined) continue;
    const request = container?.resources?.requests?.memory;
    const nodeOptions = container?.env?.find((env) => env.name === 'NODE_OPTIONS')?.value;
    memory.set(doc.metadata.name, {
      limitBytes: memoryBytes(limit),
      ...(request === undefined ? {} : { requestBytes: memoryBytes(request) }),
      ...(nodeOptions === undefined ? {} : { nodeOptions }),
    });
  }
  return memory;
}

const parse = (text: string): Manifest[] =>
  parseAllDocuments(text).flatMap((doc) => {
    const value = doc.toJS() as Manifest | null;
    return value ? [value] : [];
  });

/** The base manifests of `processes` (deploy/k8s/base/<name>.yaml) and the production overlay's. */
export function manifestLimits(processes: readonly string[]): ManifestLimits {
  const base = deploymentMemory(
    processes.flatMap((name) => {
      const file = join(K8S, 'base', `${name}.yaml`);
      return existsSync(file) ? parse(readFileSync(file, 'utf8')) : [];
    }),
  );
  let production: Map<string, ManifestMemory> | undefined;
  try {
    const rendered = execFileSync('kubectl', ['kustomize', join(root, PRODUCTION_OVERLAY)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    production = deploymentMemory(parse(rendered));
  } catch {
    // No kubectl: the base limits alone.
  }
  return { base, ...(production ? { production } : {}) };
}
