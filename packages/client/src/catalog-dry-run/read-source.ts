import { readFile, stat } from 'node:fs/promises';

/** Ingest's limit on a CatalogSet (docs/guide/catalogs.md#limits): a larger document is refused. */
export const MAX_DOCUMENT_BYTES = 50 * 1024 * 1024;

/** The text of a document, or why there is none. */
export type SourceText =
  | { ok: true; text: string }
  /** `too_large`: the document breaks ingest's limit (it is invalid, not unreadable). */
  | { ok: false; reason: 'too_large' | 'unreadable'; message: string };

/** Does `location` name a URL to download rather than a file? */
export function isUrl(location: string): boolean {
  return /^https?:\/\//i.test(location);
}

/**
 * Read a CatalogSet from a file or download it from an http(s) URL, refusing more than
 * `maxBytes` (checked before reading a file, and while streaming a download, so a huge or
 * endless body is never held whole). Decoded as UTF-8, as ingest decodes it.
 */
export async function readCatalogSource(
  location: string,
  options: { timeoutMs: number; maxBytes?: number },
): Promise<SourceText> {
  const maxBytes = options.maxBytes ?? MAX_DOCUMENT_BYTES;
  return isUrl(location)
    ? download(location, maxBytes, options.timeoutMs)
    : readDocumentFile(location, maxBytes);
}

const tooLarge = (maxBytes: number): SourceText => ({
  ok: false,
  reason: 'too_large',
  message: `the document is larger than ${maxBytes / 1024 / 1024} MB; ingest refuses it`,
});

async function readDocumentFile(path: string, maxBytes: number): Promise<SourceText> {
  try {
    if ((await stat(path)).size > maxBytes) return tooLarge(maxBytes);
    return { ok: true, text: await readFile(path, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code;
    return { ok: false, reason: 'unreadable', message: reason ?? String(error) };
  }
}

async function download(url: string, maxBytes: number, timeoutMs: number): Promise<SourceText> {
  const unreadable = (message: string): SourceText => ({
    ok: false,
    reason: 'unreadable',
    message,
  });
  // One deadline for the whole exchange: connecting, redirects and the body.
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(url, { signal, headers: { accept: 'application/json' } });
    if (!response.ok || !response.body) {
      await response.body?.cancel();
      return unreadable(`the server answered HTTP ${response.status}`);
    }
    const declared = Number(response.headers.get('content-length') ?? Number.NaN);
    if (declared > maxBytes) {
      await response.body.cancel();
      return tooLarge(maxBytes);
    }
    const chunks: Uint8Array[] = [];
    let received = 0;
    const reader: ReadableStreamDefaultReader<Uint8Array> = response.body.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      received += read.value.byteLength;
      if (received > maxBytes) {
        // The rest is never read: the connection is dropped.
        await reader.cancel();
        return tooLarge(maxBytes);
      }
      chunks.push(read.value);
    }
    return { ok: true, text: Buffer.concat(chunks).toString('utf8') };
  } catch (error) {
    if (signal.aborted)
      return unreadable(`the download did not finish within ${timeoutMs / 1000} s`);
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return unreadable(cause?.code ?? cause?.message ?? (error as Error).message);
  }
}
