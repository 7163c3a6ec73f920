/**
 * A small evaluator of Kubernetes NetworkPolicy (networking.k8s.io/v1) semantics, so tests can
 * ask the rendered policies questions such as "can stores reach the internet?":
 *
 * - a pod is isolated for a direction once any policy of its namespace selects it with that
 *   policy type; an isolated pod gets only what some selecting policy's rules allow (rules add
 *   up, nothing denies);
 * - a connection between pods needs the source's egress and the destination's ingress;
 * - a peer with both selectors means pods matching `podSelector` in namespaces matching
 *   `namespaceSelector`; `podSelector` alone means the policy's own namespace;
 * - `ipBlock` peers stand for addresses outside the cluster; named ports resolve on the
 *   destination pod's containers; a rule without `to`/`from` or `ports` matches every peer or port.
 */
import { BlockList, isIP } from 'node:net';

type Labels = Readonly<Record<string, string>>;

interface LabelSelector {
  matchLabels?: Labels;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}
interface PolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string; except?: string[] };
}
interface PolicyPort {
  protocol?: string;
  port?: number | string;
  endPort?: number;
}
interface PolicyRule {
  to?: PolicyPeer[];
  from?: PolicyPeer[];
  ports?: PolicyPort[];
}
export interface NetworkPolicy {
  metadata: { name: string; namespace?: string };
  spec: {
    podSelector: LabelSelector;
    policyTypes?: string[];
    ingress?: PolicyRule[];
    egress?: PolicyRule[];
  };
}

export interface Pod {
  readonly name: string;
  readonly namespace: string;
  /** The namespace's labels; `kubernetes.io/metadata.name` is added as the API server does. */
  readonly namespaceLabels?: Labels;
  readonly labels: Labels;
  readonly ports?: readonly { name?: string; containerPort: number; protocol?: string }[];
}
/** Where a connection goes to or comes from: a pod, or an address outside the cluster. */
export type Peer = { readonly pod: Pod } | { readonly ip: string };

export interface Connection {
  readonly port: number | string;
  readonly protocol?: 'TCP' | 'UDP';
}

export function selects(selector: LabelSelector, labels: Labels): boolean {
  const exact = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    exact &&
    (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
      switch (operator) {
        case 'In':
          return key in labels && values.includes(labels[key]!);
        case 'NotIn':
          return !(key in labels) || !values.includes(labels[key]!);
        case 'Exists':
          return key in labels;
        case 'DoesNotExist':
          return !(key in labels);
        default:
          throw new Error(`unknown selector operator ${operator}`);
      }
    })
  );
}

function namespaceLabels(pod: Pod): Labels {
  return { ...pod.namespaceLabels, 'kubernetes.io/metadata.name': pod.namespace };
}

function addCidr(list: BlockList, cidr: string) {
  const [address, prefix] = cidr.split('/');
  const family = isIP(address!) === 6 ? 'ipv6' : 'ipv4';
  list.addSubnet(address!, Number(prefix), family);
}

function inBlock(ip: string, block: NonNullable<PolicyPeer['ipBlock']>): boolean {
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
  if (isIP(block.cidr.split('/')[0]!) !== isIP(ip)) return false;
  const allowed = new BlockList();
  addCidr(allowed, block.cidr);
  const excepted = new BlockList();
  for (const cidr of block.except ?? []) addCidr(excepted, cidr);
  return allowed.check(ip, family) && !excepted.check(ip, family);
}

function peerMatches(peer: PolicyPeer, policyNamespace: string, other: Peer): boolean {
  if ('ip' in other) return peer.ipBlock !== undefined && inBlock(other.ip, peer.ipBlock);
  if (peer.ipBlock) return false;
  const { pod } = other;
  const namespaceOk = peer.namespaceSelector
    ? selects(peer.namespaceSelector, namespaceLabels(pod))
    : pod.namespace === policyNamespace;
  return namespaceOk && selects(peer.podSelector ?? {}, pod.labels);
}

function portMatches(entry: PolicyPort, connection: Connection, destination?: Pod): boolean {
  const protocol = connection.protocol ?? 'TCP';
  if ((entry.protocol ?? 'TCP') !== protocol) return false;
  if (entry.port === undefined) return true;
  // A named port is the destination container's port of that name.
  const number =
    typeof connection.port === 'number'
      ? connection.port
      : destination?.ports?.find((p) => p.name === connection.port)?.containerPort;
  if (number === undefined) return false;
  if (typeof entry.port === 'string') {
    return (
      destination?.ports?.some(
        (p) =>
          p.name === entry.port && p.containerPort === number && (p.protocol ?? 'TCP') === protocol,
      ) ?? false
    );
  }
  return number >= entry.port && number <= (entry.endPort ?? entry.port);
}

function policyTypes(policy: NetworkPolicy): string[] {
  return (
    policy.spec.policyTypes ?? ['Ingress', ...(policy.spec.egress !== undefined ? ['Egress'] : [])]
  );
}

function allowed(
  policies: readonly NetworkPolicy[],
  direction: 'Ingress' | 'Egress',
  subject: Pod,
  other: Peer,
  connection: Connection,
): boolean {
  const selecting = policies.filter(
    (policy) =>
      (policy.metadata.namespace ?? 'default') === subject.namespace &&
      policyTypes(policy).includes(direction) &&
      selects(policy.spec.podSelector, subject.labels),
  );
  if (selecting.length === 0) return true;
  const destination = direction === 'Ingress' ? subject : 'pod' in other ? other.pod : undefined;
  return selecting.some((policy) =>
    ((direction === 'Ingress' ? policy.spec.ingress : policy.spec.egress) ?? []).some((rule) => {
      const peers = direction === 'Ingress' ? rule.from : rule.to;
      const peerOk =
        peers === undefined ||
        peers.length === 0 ||
        peers.some((peer) => peerMatches(peer, subject.namespace, other));
      const portOk =
        rule.ports === undefined ||
        rule.ports.length === 0 ||
        rule.ports.some((entry) => portMatches(entry, connection, destination));
      return peerOk && portOk;
    }),
  );
}

/**
 * Whether `from` may open a connection to `to` under `policies`: the source's egress (when it
 * is a pod) and the destination's ingress (when it is a pod).
 */
export function canConnect(
  policies: readonly NetworkPolicy[],
  from: Peer,
  to: Peer,
  connection: Connection,
): boolean {
  const egress = 'pod' in from ? allowed(policies, 'Egress', from.pod, to, connection) : true;
  const ingress = 'pod' in to ? allowed(policies, 'Ingress', to.pod, from, connection) : true;
  return egress && ingress;
}
