import { replyLengthHeader, replyPartsHeader, replyStatusHeader } from '@pcp/contracts';
import { headers as createHeaders, type Msg } from 'nats';

/** Room for headers and protocol overhead below the server's max payload. */
const PART_HEADROOM_BYTES = 4_096;

/** Every part but the last is at least this long, whatever the server's max payload. */
export const MIN_PART_BYTES = 16_384;

export function maxPartBytes(maxPayload: number | undefined): number {
  return Math.max(MIN_PART_BYTES, (maxPayload ?? 1024 * 1024) - PART_HEADROOM_BYTES);
}

/** Send a reply in one message, or in parts when it is larger than a message may be. */
export function respondInParts(
  msg: Msg,
  status: 'ok' | 'error',
  data: Uint8Array,
  partBytes: number,
) {
  const headers = createHeaders();
  headers.set(replyStatusHeader, status);
  const parts = Math.max(1, Math.ceil(data.length / partBytes));
  if (parts > 1) {
    headers.set(replyPartsHeader, String(parts));
    headers.set(replyLengthHeader, String(data.length));
  }
  if (!msg.respond(data.subarray(0, partBytes), { headers })) return false;
  for (let offset = partBytes; offset < data.length; offset += partBytes) {
    msg.respond(data.subarray(offset, offset + partBytes));
  }
  return true;
}
