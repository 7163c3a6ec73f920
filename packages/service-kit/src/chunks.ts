/**
 * Chunks `0 … count − 1` in order, fetching the next one while the caller uses the current
 * one: a reader of a large document holds at most two chunks, whatever its size.
 */
export async function* readChunks(
  count: number,
  fetchChunk: (index: number) => Promise<Buffer>,
): AsyncGenerator<Buffer, void, undefined> {
  // Settled into a value at once: a prefetch that fails while the caller is busy (waiting
  // for a slow HTTP client to drain) must not surface as an unhandled rejection.
  const fetchSettled = (index: number) =>
    fetchChunk(index).then(
      (chunk) => ({ chunk }),
      (error: unknown) => ({ error }),
    );
  let next = count > 0 ? fetchSettled(0) : undefined;
  for (let index = 0; next; index++) {
    const fetched = await next;
    next = index + 1 < count ? fetchSettled(index + 1) : undefined;
    if ('error' in fetched) throw fetched.error;
    yield fetched.chunk;
  }
}
