import { AppError } from '@pcp/service-kit';
import type { ListKey } from './list-key.js';

/** A cursor's text: the key's microsecond UTC instant and id (lowercase, as issued). */
const cursorText =
  /^([1-9]\d{3}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z)\|([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

/** Opaque to partners: base64url of `<created_at>|<id>`. */
export function encodeCursor(key: ListKey): string {
  return Buffer.from(`${key.createdAt}|${key.id}`).toString('base64url');
}

/** The key a cursor of a list names, or 400 REQUEST_INVALID at /cursor. */
export function decodeCursor(cursor: string): ListKey {
  const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : '';
  const match = cursorText.exec(text);
  const createdAt = match?.[1];
  const id = match?.[2];
  // The instant must be a real one (no 30 February), or Postgres would refuse it.
  const millis = createdAt === undefined ? NaN : Date.parse(`${createdAt.slice(0, 23)}Z`);
  if (
    createdAt === undefined ||
    id === undefined ||
    Number.isNaN(millis) ||
    new Date(millis).toISOString().slice(0, 23) !== createdAt.slice(0, 23)
  ) {
    const message = 'Not a cursor of this list; send the nextCursor of the previous page';
    throw new AppError('REQUEST_INVALID', `/cursor: ${message}`, {
      errors: [{ code: 'INVALID_VALUE', message, pointer: '/cursor' }],
    });
  }
  return { createdAt, id };
}
