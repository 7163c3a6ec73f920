#!/usr/bin/env node
/**
 * Regenerates the vendored schemas in this folder from their upstream files, keeping only what
 * the manifests use (the definitions reachable from KINDS) and dropping descriptions:
 *
 *   node deploy/test/schemas/vendor-schemas.mjs <swagger.json> <postgresql.cnpg.io_clusters.yaml>
 *   npx prettier --write deploy/test/schemas
 *
 * Sources (see each output's `source`): the Kubernetes OpenAPI v2 document of a release (the
 * kubernetes-client/python repository keeps it as kubernetes/swagger.json.unprocessed, one
 * commit per release branch), and CloudNativePG's Cluster CRD (config/crd/bases/ at a tag).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';

// Where the files given on the command line come from (the outputs record it).
const KUBERNETES = {
  version: '1.30',
  source:
    process.env.KUBERNETES_SOURCE ??
    'https://github.com/kubernetes-client/python/blob/2aa427de83242d45215d2dab3ae6cd2224b42d08/kubernetes/swagger.json.unprocessed (Kubernetes release-1.30)',
};
const CNPG = {
  version: '1.30.0',
  source:
    process.env.CNPG_SOURCE ??
    'https://github.com/cloudnative-pg/cloudnative-pg/blob/v1.30.0/config/crd/bases/postgresql.cnpg.io_clusters.yaml',
};
/** Every built-in kind the kustomizations render (the test fails on any other). */
const KINDS = [
  ['', 'v1', 'Namespace'],
  ['', 'v1', 'ConfigMap'],
  ['', 'v1', 'Secret'],
  ['', 'v1', 'Service'],
  ['', 'v1', 'ServiceAccount'],
  ['', 'v1', 'PersistentVolumeClaim'],
  ['apps', 'v1', 'Deployment'],
  ['batch', 'v1', 'Job'],
  ['policy', 'v1', 'PodDisruptionBudget'],
  ['autoscaling', 'v2', 'HorizontalPodAutoscaler'],
  ['networking.k8s.io', 'v1', 'NetworkPolicy'],
];

function strip(value) {
  if (Array.isArray(value)) return value.map(strip);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => key !== 'description')
      .map(([key, child]) => [key, strip(child)]),
  );
}

const [swaggerPath, crdPath] = process.argv.slice(2);
if (!swaggerPath || !crdPath) {
  console.error('usage: vendor-schemas.mjs <swagger.json> <postgresql.cnpg.io_clusters.yaml>');
  process.exit(2);
}

const { definitions } = JSON.parse(readFileSync(swaggerPath, 'utf8'));
const roots = {};
for (const [name, definition] of Object.entries(definitions)) {
  for (const gvk of definition['x-kubernetes-group-version-kind'] ?? []) {
    if (KINDS.some(([g, v, k]) => g === gvk.group && v === gvk.version && k === gvk.kind)) {
      roots[`${gvk.group ? `${gvk.group}/` : ''}${gvk.version}/${gvk.kind}`] = name;
    }
  }
}
if (Object.keys(roots).length !== KINDS.length) throw new Error('a kind is missing upstream');
const kept = {};
const visit = (name) => {
  if (kept[name]) return;
  kept[name] = strip(definitions[name]);
  JSON.stringify(definitions[name]).replace(/"#\/definitions\/([^"]+)"/g, (_m, ref) => {
    visit(ref);
    return '';
  });
};
Object.values(roots).forEach(visit);
writeFileSync(
  new URL('kubernetes-1.30.json', import.meta.url),
  `${JSON.stringify({ ...KUBERNETES, roots, definitions: kept }, null, 2)}\n`,
);

const crd = parse(readFileSync(crdPath, 'utf8'));
const version = crd.spec.versions.find((v) => v.name === 'v1');
writeFileSync(
  new URL('cnpg-1.30.0-cluster.json', import.meta.url),
  `${JSON.stringify({ ...CNPG, apiVersion: `${crd.spec.group}/v1`, kind: crd.spec.names.kind, schema: strip(version.schema.openAPIV3Schema) }, null, 2)}\n`,
);
