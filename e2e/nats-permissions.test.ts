import {
  jetStreamConsumers,
  liveEventSources,
  natsCalls,
  natsPermissions,
  natsUsers,
  serviceNames,
  subjects,
} from '@pcp/contracts';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderValues, valuesPath } from '../deploy/nats/values.js';

/**
 * The NATS permissions (packages/contracts/src/nats-permissions.ts) against what the code
 * does and what is deployed: a request the permissions do not allow would be dropped by the
 * server in production, and the Helm values must be what the module renders.
 */

const root = join(import.meta.dirname, '..');

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return Promise.all(
    entries
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => readFile(join(entry.parentPath, entry.name), 'utf8')),
  );
}

/** The subjects of other services a service's source names (`subjects.<service>.<key>`). */
async function requestedSubjects(service: string): Promise<string[]> {
  const names = new Set<string>();
  for (const text of await sources(join(root, 'services', service, 'src'))) {
    for (const [, group, key] of text.matchAll(/\bsubjects\.(\w+)\.(\w+)\b/g)) {
      if (group === service) continue;
      const table = subjects[group as keyof typeof subjects] as Record<string, { name: string }>;
      const definition = table?.[key!];
      if (definition) names.add(definition.name);
    }
  }
  return [...names].sort();
}

describe('the NATS permissions', () => {
  it.each(['gateway', ...serviceNames] as const)(
    'let %s publish every request subject its code sends',
    async (user) => {
      const requested = await requestedSubjects(user);
      // The scan sees the calls it must (or it would prove nothing).
      if (user === 'gateway') expect(requested).toContain(subjects.ordering.place.name);
      if (user === 'ordering') expect(requested).toContain(subjects.payments.authorize.name);
      if (user === 'payments') expect(requested).toContain(subjects.ordering.chargeOwners.name);
      const allowed = natsCalls(user);
      expect(requested.filter((name) => !allowed.includes(name))).toEqual([]);
    },
  );

  it('name a caller for every subject, and keep internal subjects from the gateway', () => {
    const callable = new Set(natsUsers.flatMap((user) => natsCalls(user)));
    const every = Object.values(subjects).flatMap((group) =>
      Object.values(group as Record<string, { name: string }>).map((s) => s.name),
    );
    expect(every.filter((name) => !callable.has(name))).toEqual([]);
    const gateway = natsCalls('gateway');
    for (const internal of [
      subjects.payments.authorize,
      subjects.payments.release,
      subjects.payments.cardOwned,
      subjects.stores.orderContext,
      // It answers for every partner's orders: payments' reconciler alone may ask.
      subjects.ordering.chargeOwners,
    ]) {
      expect(gateway).not.toContain(internal.name);
    }
    expect(
      natsUsers.filter((user) => natsCalls(user).includes(subjects.ordering.chargeOwners.name)),
    ).toEqual(['payments']);
    // The stores' signing secrets: ordering's submitter alone may ask.
    expect(
      natsUsers.filter((user) => natsCalls(user).includes(subjects.stores.submissionSecrets.name)),
    ).toEqual(['ordering']);
  });

  it.each(serviceNames)(
    'have %s ask its own subjects in-process, never over NATS (its user may not publish them)',
    async (service) => {
      const overNats: string[] = [];
      for (const text of await sources(join(root, 'services', service, 'src'))) {
        const calls = text.matchAll(/\b(\w+)\.request(?:Raw)?\(\s*subjects\.(\w+)\.(\w+)/g);
        for (const [, receiver, group, key] of calls) {
          if (group === service && receiver !== 'local') overNats.push(`${receiver}: ${key}`);
        }
      }
      expect(overNats).toEqual([]);
    },
  );

  it('let each service subscribe only below its own name, its inbox and its events', () => {
    for (const user of serviceNames) {
      const allowed = natsPermissions('pcp', user).subscribe.allow;
      for (const subject of allowed) {
        expect(
          subject.startsWith(`pcp.${user}.`) ||
            subject.startsWith(`_INBOX_${user}.`) ||
            subject.startsWith('pcp.events.') ||
            subject.startsWith('$SRV.'),
          `${user}: ${subject}`,
        ).toBe(true);
      }
      // No wildcard reaches another service's subjects or every event.
      expect(allowed).not.toContain('pcp.>');
      expect(allowed).not.toContain('pcp.events.>');
      expect(allowed).not.toContain('_INBOX.>');
    }
  });

  it('let the gateway read only the live streams’ events, and never touch a service’s durable', () => {
    const { publish } = natsPermissions('pcp', 'gateway');
    const creates = publish.allow.filter((subject) => subject.includes('.CONSUMER.CREATE.'));
    expect(creates.sort()).toEqual(
      liveEventSources
        .map((event) => `$JS.API.CONSUMER.CREATE.pcp_events.*.pcp.${event.subject}`)
        .sort(),
    );
    expect(publish.allow.filter((subject) => subject.startsWith('$JS.ACK.'))).toEqual([]);
    for (const { stream, durable } of jetStreamConsumers.filter((c) => c.stream === 'events')) {
      for (const verb of ['MSG.NEXT', 'DELETE', 'CREATE']) {
        expect(publish.deny).toContain(`$JS.API.CONSUMER.${verb}.pcp_${stream}.${durable}`);
      }
    }
  });

  it('are what deploy/nats/values.yaml holds (npm run nats:auth renders it)', async () => {
    const checkedIn = await readFile(valuesPath, 'utf8');
    expect(await renderValues(checkedIn)).toBe(checkedIn);
  });
});
