/** Why a dry run found no free slot. */
export type NoSlot = 'replica_busy' | 'partner_busy';

/**
 * Dry runs in progress on this replica, in total and per partner. Each holds a downloaded
 * document (up to 50 MB) and waits for a preparation thread, so their number is bounded here
 * rather than by whoever calls. Partners appear only while they have one in progress, so the
 * map never holds more entries than the replica's limit.
 */
export class DryRunSlots {
  private inProgress = 0;
  private readonly byPartner = new Map<string, number>();

  constructor(private readonly limits: { perReplica: number; perPartner: number }) {}

  /** A slot for `partnerId` (release it exactly once when done), or why there is none. */
  take(partnerId: string): { ok: true; release: () => void } | { ok: false; reason: NoSlot } {
    const partnerRuns = this.byPartner.get(partnerId) ?? 0;
    if (partnerRuns >= this.limits.perPartner) return { ok: false, reason: 'partner_busy' };
    if (this.inProgress >= this.limits.perReplica) return { ok: false, reason: 'replica_busy' };
    this.inProgress += 1;
    this.byPartner.set(partnerId, partnerRuns + 1);
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        this.inProgress -= 1;
        const left = (this.byPartner.get(partnerId) ?? 1) - 1;
        if (left === 0) this.byPartner.delete(partnerId);
        else this.byPartner.set(partnerId, left);
      },
    };
  }
}
