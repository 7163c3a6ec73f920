import {
  MAX_STORES_PER_DELETION_NOTICE,
  storeDeletionNotices,
  type StoreDeletionNotice,
} from '@pcp/contracts';
import type { NatsConnection } from 'nats';

/**
 * Tell every gateway replica these stores are gone (a core publish, at most once): each ends
 * the stores' live streams at once; a lost notice is caught by the streams' re-check.
 */
export function announceStoreDeletions(
  nc: NatsConnection,
  prefix: string,
  storeIds: readonly string[],
): void {
  const subject = `${prefix}.${storeDeletionNotices.subject}`;
  for (let start = 0; start < storeIds.length; start += MAX_STORES_PER_DELETION_NOTICE) {
    const notice: StoreDeletionNotice = {
      storeIds: storeIds.slice(start, start + MAX_STORES_PER_DELETION_NOTICE),
    };
    nc.publish(subject, JSON.stringify(notice));
  }
}
