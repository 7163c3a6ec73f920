/**
 * The rendered NetworkPolicies (deploy/k8s/base/network-policies.yaml) answer the questions the
 * issue asks, through the evaluator in network-policy.ts: only the gateway is reachable from
 * outside; every service reaches DNS, NATS and Postgres; the gateway Redis; only payments the
 * card processor and the sandbox processor (the simulator); catalog and ordering the internet but no private address.
 */
import { describe, expect, it } from 'vitest';
import {
  canConnect,
  selects,
  type Connection,
  type NetworkPolicy,
  type Peer,
  type Pod,
} from './network-policy.js';
import {
  containersOf,
  find,
  KUBECTL,
  KUSTOMIZATIONS,
  render,
  SERVICES,
  type Doc,
} from './kustomize.js';

const RENDERED = KUBECTL
  ? { production: render(KUSTOMIZATIONS.production), local: render(KUSTOMIZATIONS.local) }
  : { production: [], local: [] };

function policiesOf(docs: Doc[]): NetworkPolicy[] {
  return docs.filter((d) => d.kind === 'NetworkPolicy') as NetworkPolicy[];
}

/** The pod a Deployment or Job runs, as the evaluator sees it. */
function podOf(docs: Doc[], kind: 'Deployment' | 'Job', name: string): Peer {
  const doc = find(docs, kind, name);
  const namespace = doc.metadata.namespace as string;
  return {
    pod: {
      name,
      namespace,
      namespaceLabels: find(docs, 'Namespace', namespace).metadata.labels as Record<string, string>,
      labels: doc.spec.template.metadata.labels as Record<string, string>,
      ports: containersOf(doc).flatMap((c) => (c.ports as Pod['ports']) ?? []),
    },
  };
}

const pod = (namespace: string, labels: Record<string, string>): Peer => ({
  pod: { name: `${namespace}-pod`, namespace, labels },
});
// Where the dependencies run (base/network-policies.yaml documents these).
const NATS = pod('nats', {
  'app.kubernetes.io/name': 'nats',
  'app.kubernetes.io/instance': 'nats',
});
const POSTGRES = pod('pcp-postgres', {
  'cnpg.io/cluster': 'pcp-db',
  'cnpg.io/instanceRole': 'primary',
});
const REDIS = pod('redis', { 'app.kubernetes.io/name': 'redis' });
const DNS = pod('kube-system', { 'k8s-app': 'kube-dns' });
const PROMETHEUS = pod('monitoring', { 'app.kubernetes.io/name': 'prometheus' });
const INGRESS = pod('ingress-nginx', { 'app.kubernetes.io/name': 'ingress-nginx' });
// Look-alikes in namespaces the policies do not name.
const OTHER_NATS = pod('other', { 'app.kubernetes.io/name': 'nats' });
const OTHER_POSTGRES = pod('other', { 'cnpg.io/cluster': 'pcp-db' });
const OTHER_APP = pod('other', { app: 'something' });

const INTERNET = [{ ip: '93.184.215.14' }, { ip: '2606:2800:21f:cb07:6820:80da:af6b:8b2c' }];
/** Private, loopback, link-local (cloud metadata), CGNAT and IPv6 local addresses. */
const INSIDE = [
  '10.0.0.5',
  '172.20.1.1',
  '192.168.1.10',
  '169.254.169.254',
  '127.0.0.1',
  '100.64.1.1',
  '0.0.0.0',
  'fd00::1',
  'fe80::1',
  '::1',
  '::ffff:10.0.0.5',
].map((ip) => ({ ip }));
const PROCESSOR = { ip: '192.0.2.10' };

const TCP = (port: number | string): Connection => ({ port, protocol: 'TCP' });

describe.runIf(KUBECTL)('network policies (production overlay)', () => {
  const docs = RENDERED.production;
  const policies = policiesOf(docs);
  const can = (from: Peer, to: Peer, connection: Connection) =>
    canConnect(policies, from, to, connection);
  const service = (name: string) => podOf(docs, 'Deployment', name);
  const migrate = () => podOf(docs, 'Job', 'pcp-migrate');

  it('only the gateway is reachable from outside, and only on its public port', () => {
    for (const from of [...INTERNET, INGRESS, OTHER_APP]) {
      expect(can(from, service('gateway'), TCP(8080)), JSON.stringify(from)).toBe(true);
      expect(can(from, service('gateway'), TCP(9100))).toBe(false);
      for (const name of SERVICES.filter((s) => s !== 'gateway')) {
        expect(can(from, service(name), TCP('ops')), name).toBe(false);
      }
    }
  });

  it('ops ports (readiness, metrics) only from the monitoring namespace', () => {
    for (const name of SERVICES) {
      expect(can(PROMETHEUS, service(name), TCP('ops')), name).toBe(true);
      expect(can(OTHER_APP, service(name), TCP('ops')), name).toBe(false);
    }
    // The ops port, and no other port of a worker.
    expect(can(PROMETHEUS, service('stores'), TCP(8080))).toBe(false);
  });

  it('the pods do not talk to each other: everything goes through NATS', () => {
    for (const from of SERVICES)
      for (const to of SERVICES) {
        if (from === to) continue;
        expect(can(service(from), service(to), TCP('ops')), `${from} -> ${to}`).toBe(false);
      }
  });

  it('every service reaches DNS, NATS and Postgres; only in the namespaces configured', () => {
    for (const name of SERVICES) {
      const from = service(name);
      expect(can(from, DNS, { port: 53, protocol: 'UDP' }), name).toBe(true);
      expect(can(from, DNS, TCP(53)), name).toBe(true);
      expect(can(from, NATS, TCP(4222)), name).toBe(true);
      expect(can(from, NATS, TCP(8222)), `${name}: NATS monitoring port`).toBe(false);
      expect(can(from, POSTGRES, TCP(5432)), name).toBe(true);
      expect(can(from, OTHER_NATS, TCP(4222)), name).toBe(false);
      expect(can(from, OTHER_POSTGRES, TCP(5432)), name).toBe(false);
    }
  });

  it('only the gateway reaches Redis', () => {
    expect(can(service('gateway'), REDIS, TCP(6379))).toBe(true);
    for (const name of SERVICES.filter((s) => s !== 'gateway'))
      expect(can(service(name), REDIS, TCP(6379)), name).toBe(false);
  });

  it('only payments reaches the card processor, over HTTPS', () => {
    expect(can(service('payments'), PROCESSOR, TCP(443))).toBe(true);
    expect(can(service('payments'), PROCESSOR, TCP(80))).toBe(false);
    for (const name of ['gateway', 'stores'])
      expect(can(service(name), PROCESSOR, TCP(443)), name).toBe(false);
  });

  it('catalog and ordering reach the internet on any port, but no private or local address', () => {
    for (const name of ['catalog', 'ordering']) {
      for (const to of INTERNET) {
        expect(can(service(name), to, TCP(443)), `${name} -> ${to.ip}`).toBe(true);
        expect(can(service(name), to, TCP(8443)), `${name} -> ${to.ip}:8443`).toBe(true);
      }
      for (const to of INSIDE)
        expect(can(service(name), to, TCP(80)), `${name} -> ${to.ip}`).toBe(false);
    }
  });

  it('can stores, the gateway or payments reach the internet? no', () => {
    for (const name of ['stores', 'gateway', 'payments'])
      for (const to of INTERNET) expect(can(service(name), to, TCP(443)), name).toBe(false);
  });

  it('the migration Job reaches Postgres, NATS (the JetStream topology) and DNS only', () => {
    expect(can(migrate(), POSTGRES, TCP(5432))).toBe(true);
    expect(can(migrate(), DNS, { port: 53, protocol: 'UDP' })).toBe(true);
    expect(can(migrate(), NATS, TCP(4222))).toBe(true);
    expect(can(migrate(), REDIS, TCP(6379))).toBe(false);
    for (const to of INTERNET) expect(can(migrate(), to, TCP(443))).toBe(false);
  });

  it('the migrate phase alone (-l deploy.pcp/phase=migrate) lets the Job reach Postgres', () => {
    const phase = docs.filter((d) => d.metadata.labels?.['deploy.pcp/phase'] === 'migrate');
    expect(phase.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual(
      expect.arrayContaining([
        'Job/pcp-migrate',
        'ServiceAccount/pcp-migrate',
        'ConfigMap/pcp-config',
      ]),
    );
    const phasePolicies = policiesOf(phase);
    expect(phasePolicies.map((p) => p.metadata.name)).toContain('default-deny');
    expect(canConnect(phasePolicies, migrate(), POSTGRES, TCP(5432))).toBe(true);
    expect(canConnect(phasePolicies, migrate(), DNS, { port: 53, protocol: 'UDP' })).toBe(true);
    expect(canConnect(phasePolicies, migrate(), NATS, TCP(4222))).toBe(true);
    expect(canConnect(phasePolicies, migrate(), INTERNET[0]!, TCP(443))).toBe(false);
  });

  it('with no policy selecting stores, it would reach anything (the evaluator is not vacuous)', () => {
    const stores = service('stores') as { pod: Pod };
    const open = policies.filter((p) => !selects(p.spec.podSelector, stores.pod.labels));
    expect(open.length).toBeGreaterThan(0);
    expect(canConnect(open, service('stores'), INTERNET[0]!, TCP(443))).toBe(true);
    expect(canConnect(open, OTHER_APP, service('stores'), TCP('ops'))).toBe(true);
  });
});

describe.runIf(KUBECTL).each(['production', 'local'] as const)(
  'network policies (%s overlay): the sandbox processor',
  (name) => {
    const docs = RENDERED[name];
    const policies = policiesOf(docs);
    const simulator = () => podOf(docs, 'Deployment', 'processor-simulator');

    it('payments, and only payments, reaches the processor simulator; the simulator reaches nothing', () => {
      expect(
        canConnect(policies, podOf(docs, 'Deployment', 'payments'), simulator(), TCP(4010)),
      ).toBe(true);
      for (const service of SERVICES.filter((s) => s !== 'payments'))
        expect(
          canConnect(policies, podOf(docs, 'Deployment', service), simulator(), TCP(4010)),
          service,
        ).toBe(false);
      for (const from of [OTHER_APP, PROMETHEUS, INGRESS, ...INTERNET])
        expect(canConnect(policies, from, simulator(), TCP(4010))).toBe(false);
      for (const to of INTERNET)
        expect(canConnect(policies, simulator(), to, TCP(443))).toBe(false);
      expect(canConnect(policies, simulator(), NATS, TCP(4222))).toBe(false);
      expect(canConnect(policies, simulator(), POSTGRES, TCP(5432))).toBe(false);
      expect(canConnect(policies, simulator(), PROCESSOR, TCP(443))).toBe(false);
    });
  },
);

describe('the evaluator', () => {
  const a: Peer = pod('ns', { app: 'a' });
  const b: Peer = {
    pod: {
      name: 'b',
      namespace: 'ns',
      labels: { app: 'b' },
      ports: [{ name: 'web', containerPort: 80 }],
    },
  };
  const policy = (spec: NetworkPolicy['spec']): NetworkPolicy => ({
    metadata: { name: 'p', namespace: 'ns' },
    spec,
  });

  it('allows everything without policies, and nothing a selecting policy does not allow', () => {
    expect(canConnect([], a, b, TCP(80))).toBe(true);
    const denyAll = policy({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    expect(canConnect([denyAll], a, b, TCP(80))).toBe(false);
    // A policy of another namespace selects nothing here.
    expect(
      canConnect([{ ...denyAll, metadata: { name: 'p', namespace: 'x' } }], a, b, TCP(80)),
    ).toBe(true);
  });

  it('a podSelector peer means the policy namespace; named ports resolve on the destination', () => {
    const ingress = policy({
      podSelector: { matchLabels: { app: 'b' } },
      policyTypes: ['Ingress'],
      ingress: [
        { from: [{ podSelector: { matchLabels: { app: 'a' } } }], ports: [{ port: 'web' }] },
      ],
    });
    expect(canConnect([ingress], a, b, TCP(80))).toBe(true);
    expect(canConnect([ingress], a, b, TCP(81))).toBe(false);
    expect(canConnect([ingress], a, b, { port: 80, protocol: 'UDP' })).toBe(false);
    expect(canConnect([ingress], pod('elsewhere', { app: 'a' }), b, TCP(80))).toBe(false);
  });

  it('ipBlock except carves addresses out of the block', () => {
    const egress = policy({
      podSelector: {},
      policyTypes: ['Egress'],
      egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] } }] }],
    });
    expect(canConnect([egress], a, { ip: '8.8.8.8' }, TCP(53))).toBe(true);
    expect(canConnect([egress], a, { ip: '10.1.2.3' }, TCP(53))).toBe(false);
    // An IPv4 block says nothing about IPv6 addresses.
    expect(canConnect([egress], a, { ip: '2001:db8::1' }, TCP(53))).toBe(false);
  });
});
