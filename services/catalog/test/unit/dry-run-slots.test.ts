import { describe, expect, it } from 'vitest';
import { DryRunSlots } from '../../src/domain/dry-run-slots.js';

describe('DryRunSlots', () => {
  it('refuses a partner over its own limit before the replica is full', () => {
    const slots = new DryRunSlots({ perReplica: 2, perPartner: 1 });
    const first = slots.take('a');
    expect(first.ok).toBe(true);
    expect(slots.take('a')).toEqual({ ok: false, reason: 'partner_busy' });
    expect(slots.take('b').ok).toBe(true);
    expect(slots.take('c')).toEqual({ ok: false, reason: 'replica_busy' });
  });

  it('refuses everyone once the replica is full, and frees the slot on release', () => {
    const slots = new DryRunSlots({ perReplica: 2, perPartner: 2 });
    const a = slots.take('a');
    const b = slots.take('b');
    expect(slots.take('c')).toEqual({ ok: false, reason: 'replica_busy' });
    if (!a.ok || !b.ok) throw new Error('expected slots');
    a.release();
    expect(slots.take('c').ok).toBe(true);
    expect(slots.take('d')).toEqual({ ok: false, reason: 'replica_busy' });
  });

  it('counts a release once however often it is called', () => {
    const slots = new DryRunSlots({ perReplica: 2, perPartner: 1 });
    const a = slots.take('a');
    const b = slots.take('b');
    if (!a.ok || !b.ok) throw new Error('expected slots');
    a.release();
    a.release();
    expect(slots.take('b')).toEqual({ ok: false, reason: 'partner_busy' });
    expect(slots.take('a').ok).toBe(true);
    // Had the second release counted, a third slot would be free now.
    expect(slots.take('c')).toEqual({ ok: false, reason: 'replica_busy' });
  });
});
