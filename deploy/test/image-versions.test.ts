/**
 * The third-party images of every place that runs them (docker-compose.yml, the Dockerfile, the
 * rendered Kubernetes manifests, the CloudNativePG Cluster, the NATS chart's values) are pinned
 * to a release, on a supported base, and the same server runs the same release everywhere.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  containersOf,
  DEPLOY_DIR,
  find,
  KUBECTL,
  KUSTOMIZATIONS,
  POSTGRES_DIR,
  render,
  type Doc,
} from './kustomize.js';

const REPO_ROOT = resolve(DEPLOY_DIR, '..');
/** The platform's own image: each release sets its tag (deploy/k8s/README.md). */
const OWN_IMAGES = new Set(['ghcr.io/example/pcp', 'pcp']);
/** Repository → the server it runs, so that two images of one server can be compared. */
const SERVERS: Record<string, string> = {
  nats: 'nats',
  postgres: 'postgres',
  'ghcr.io/cloudnative-pg/postgresql': 'postgres',
  redis: 'redis',
  node: 'node',
};
/** PostgreSQL numbers its releases major.minor; the others major.minor.patch. */
const RELEASE_PARTS: Record<string, number> = { postgres: 2 };
/** Debian releases past their regular security support. */
const UNSUPPORTED_DEBIAN = ['buster', 'bullseye', 'bookworm'];

interface ImageUse {
  /** Where it is used, for the messages. */
  readonly where: string;
  readonly image: string;
}

interface ParsedImage {
  readonly repository: string;
  readonly tag: string | undefined;
}

function parseImage(image: string): ParsedImage {
  const withoutDigest = image.split('@')[0]!;
  const colon = withoutDigest.lastIndexOf(':');
  if (colon === -1 || withoutDigest.lastIndexOf('/') > colon) {
    return { repository: withoutDigest, tag: undefined };
  }
  return { repository: withoutDigest.slice(0, colon), tag: withoutDigest.slice(colon + 1) };
}

/** The release a tag names (`17.10-trixie` → `17.10`), or undefined when it floats. */
function release(server: string, tag: string | undefined): string | undefined {
  const parts = RELEASE_PARTS[server] ?? 3;
  const match = /^(\d+(?:\.\d+)*)(?:-[a-z0-9.-]+)?$/.exec(tag ?? '');
  return match && match[1]!.split('.').length === parts ? match[1] : undefined;
}

/** What is wrong with these uses: floating tags, unsupported bases, disagreeing releases. */
function imageProblems(uses: readonly ImageUse[]): string[] {
  const problems: string[] = [];
  const releases = new Map<string, Map<string, string[]>>();
  for (const { where, image } of uses) {
    const { repository, tag } = parseImage(image);
    if (OWN_IMAGES.has(repository)) continue;
    const server = SERVERS[repository];
    if (!server) {
      problems.push(`${where}: ${image} is not a known server (add it to SERVERS)`);
      continue;
    }
    const version = release(server, tag);
    if (!version) {
      problems.push(`${where}: ${image} floats (pin a release, e.g. ${repository}:1.2.3)`);
      continue;
    }
    const base = UNSUPPORTED_DEBIAN.find((codename) => tag!.includes(codename));
    if (base) problems.push(`${where}: ${image} is built on Debian ${base}, past its support`);
    const byVersion = releases.get(server) ?? new Map<string, string[]>();
    byVersion.set(version, [...(byVersion.get(version) ?? []), where]);
    releases.set(server, byVersion);
  }
  for (const [server, byVersion] of releases) {
    if (byVersion.size > 1) {
      const list = [...byVersion].map(([version, wheres]) => `${version} (${wheres.join(', ')})`);
      problems.push(`${server} runs different releases: ${list.join(' vs ')}`);
    }
  }
  return problems;
}

function composeImages(): ImageUse[] {
  const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), {
    merge: true,
  }) as Doc;
  return Object.entries(compose.services as Record<string, Doc>).map(([name, service]) => ({
    where: `docker-compose.yml ${name}`,
    image: service.image as string,
  }));
}

function dockerfileImages(): ImageUse[] {
  const text = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8');
  return [...text.matchAll(/^FROM\s+(\S+)/gm)].map((match) => ({
    where: 'Dockerfile',
    image: match[1]!,
  }));
}

function natsChartImage(): ImageUse {
  const values = parse(readFileSync(join(DEPLOY_DIR, 'nats/values.yaml'), 'utf8')) as Doc;
  // The chart's repository unless the values name another.
  const image = values.container?.image as Doc | undefined;
  const repository = (image?.repository as string | undefined) ?? 'nats';
  const tag = image?.tag as string | undefined;
  return {
    where: 'deploy/nats/values.yaml',
    image: tag === undefined ? repository : `${repository}:${tag}`,
  };
}

function manifestImages(): ImageUse[] {
  const uses: ImageUse[] = [];
  for (const [name, dir] of Object.entries(KUSTOMIZATIONS)) {
    for (const doc of render(dir)) {
      for (const container of containersOf(doc)) {
        uses.push({
          where: `deploy/k8s ${name} ${doc.kind}/${doc.metadata.name}`,
          image: container.image as string,
        });
      }
    }
  }
  const cluster = find(render(POSTGRES_DIR), 'Cluster', 'pcp-db');
  uses.push({ where: 'deploy/postgres Cluster/pcp-db', image: cluster.spec.imageName as string });
  return uses;
}

describe('image versions', () => {
  it('finds floating tags, unsupported Debian bases and releases that disagree', () => {
    expect(
      imageProblems([
        { where: 'a', image: 'nats:2.10' },
        { where: 'b', image: 'postgres:16' },
        { where: 'c', image: 'redis:7' },
        { where: 'd', image: 'redis:latest' },
        { where: 'e', image: 'redis' },
        { where: 'f', image: 'node:20-trixie-slim' },
        { where: 'g', image: 'node:20.20.2-bookworm-slim' },
        { where: 'h', image: 'nats:2.14.2-alpine' },
        { where: 'i', image: 'nats:2.12.1' },
        { where: 'j', image: 'postgres:17.10-trixie' },
        { where: 'k', image: 'ghcr.io/cloudnative-pg/postgresql:17.10-standard-trixie' },
        { where: 'l', image: 'pcp:local' },
        { where: 'm', image: 'ghcr.io/example/pcp:latest' },
      ]),
    ).toEqual([
      'a: nats:2.10 floats (pin a release, e.g. nats:1.2.3)',
      'b: postgres:16 floats (pin a release, e.g. postgres:1.2.3)',
      'c: redis:7 floats (pin a release, e.g. redis:1.2.3)',
      'd: redis:latest floats (pin a release, e.g. redis:1.2.3)',
      'e: redis floats (pin a release, e.g. redis:1.2.3)',
      'f: node:20-trixie-slim floats (pin a release, e.g. node:1.2.3)',
      'g: node:20.20.2-bookworm-slim is built on Debian bookworm, past its support',
      'nats runs different releases: 2.14.2 (h) vs 2.12.1 (i)',
    ]);
  });

  it('the Dockerfile and docker-compose.yml pin released images on a supported base', () => {
    const uses = [...dockerfileImages(), ...composeImages(), natsChartImage()];
    expect(imageProblems(uses)).toEqual([]);
    // Every server of the local stack is checked, not skipped as unknown.
    const repositories = uses.map((use) => parseImage(use.image).repository);
    expect(new Set(repositories.filter((repository) => !OWN_IMAGES.has(repository)))).toEqual(
      new Set(['nats', 'node', 'postgres', 'redis']),
    );
  });

  it.runIf(KUBECTL)(
    'the manifests, the NATS chart and the local stack run the same pinned releases',
    () => {
      const uses = [
        ...dockerfileImages(),
        ...composeImages(),
        natsChartImage(),
        ...manifestImages(),
      ];
      expect(imageProblems(uses)).toEqual([]);
      expect(uses.filter((use) => use.where.startsWith('deploy/postgres'))).toHaveLength(1);
    },
  );
});
