import { parseArgs } from 'node:util';
import { dryRunCatalogSet, type DryRunResult } from '../catalog-dry-run/dry-run.js';
import { readCatalogSource } from '../catalog-dry-run/read-source.js';

/** Where the command writes; the bin passes the process's streams, tests collect the text. */
export interface CommandIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Exit codes: the document is valid, it is not, or it could not be checked at all. */
export const EXIT_VALID = 0;
export const EXIT_INVALID = 1;
export const EXIT_USAGE = 2;

/** A download gives up after this long, like ingest's default (CATALOG_FETCH_TIMEOUT_MS). */
const DOWNLOAD_TIMEOUT_MS = 60_000;

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const USAGE = `Usage: pcp-catalog dry-run FILE|URL [--store-id ID] [--currency CODE] [--json]

Checks a CatalogSet with the validator catalog ingest runs: its shape, keys equal to ids,
references, cycles, modifier depth, modifier-group bounds, price precision and limits.
Prints each error as FILE:LINE:COLUMN  /json/pointer message, then a summary line.

  FILE|URL          a file, or an http(s) URL to download (at most 50 MB, 60 s)
  --store-id ID     also check that storeId is this store's
  --currency CODE   also check that currency is the store's (ISO 4217, e.g. USD)
  --json            print one JSON object {source, valid, errors, summary} instead
  -h, --help        print this help

Ingest itself downloads only over https from public addresses; the dry run
POST /v1/commerce/stores/{storeId}/catalogset-validation checks that too.

Exit status: 0 valid, 1 invalid, 2 usage error or the document could not be read.
`;

/**
 * `pcp-catalog dry-run`: read a document (file or URL), dry-run it and report. Returns the exit
 * code; usage problems and unreadable documents go to stderr.
 */
export async function main(argv: readonly string[], io: CommandIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        'store-id': { type: 'string' },
        currency: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    return usageError(io, (error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout(USAGE);
    return EXIT_VALID;
  }
  const [command, location, ...extra] = positionals;
  if (command !== 'dry-run')
    return usageError(io, command ? `unknown command ${command}` : 'no command');
  if (!location || extra.length > 0) return usageError(io, 'give exactly one FILE or URL');
  const storeId = values['store-id'];
  if (storeId !== undefined && !GUID.test(storeId)) {
    return usageError(io, '--store-id must be a GUID');
  }
  const currency = values.currency?.toUpperCase();
  if (currency !== undefined && !/^[A-Z]{3}$/.test(currency)) {
    return usageError(io, '--currency must be an ISO 4217 code such as USD');
  }

  const source = await readCatalogSource(location, { timeoutMs: DOWNLOAD_TIMEOUT_MS });
  if (!source.ok && source.reason === 'unreadable') {
    io.stderr(`pcp-catalog: cannot read ${location}: ${source.message}\n`);
    return EXIT_USAGE;
  }
  const result: DryRunResult = source.ok
    ? dryRunCatalogSet(source.text, {
        ...(storeId === undefined ? {} : { storeId }),
        ...(currency === undefined ? {} : { currency }),
      })
    : {
        valid: false,
        errors: [{ path: '', message: source.message, line: 1, column: 1 }],
        counts: null,
      };

  if (values.json) {
    io.stdout(
      `${JSON.stringify({ source: location, valid: result.valid, errors: result.errors, summary: result.counts })}\n`,
    );
  } else {
    io.stdout(report(location, result, { storeId, currency }));
  }
  return result.valid ? EXIT_VALID : EXIT_INVALID;
}

function usageError(io: CommandIo, problem: string): number {
  io.stderr(`pcp-catalog: ${problem}\n\n${USAGE}`);
  return EXIT_USAGE;
}

/** The human-readable report: one line per error, then the summary line. */
function report(
  location: string,
  result: DryRunResult,
  checked: { storeId: string | undefined; currency: string | undefined },
): string {
  if (!result.valid) {
    const lines = result.errors.map(
      (error) =>
        `${location}:${error.line}:${error.column}  ${error.path ? `${error.path} ` : ''}${error.message}`,
    );
    const count = result.errors.length;
    lines.push(`${location}: invalid CatalogSet (${count} error${count === 1 ? '' : 's'})`);
    return `${lines.join('\n')}\n`;
  }
  const { items, sections, modifierGroups, catalogs } = result.counts;
  const unchecked = [
    checked.storeId === undefined ? 'storeId (--store-id)' : undefined,
    checked.currency === undefined ? 'currency (--currency)' : undefined,
  ].filter((field) => field !== undefined);
  const note = unchecked.length > 0 ? `; not checked against a store: ${unchecked.join(', ')}` : '';
  return (
    `${location}: valid CatalogSet: ${plural(items, 'item')}, ${plural(sections, 'section')}, ` +
    `${plural(modifierGroups, 'modifier group')}, ${plural(catalogs, 'catalog')}${note}\n`
  );
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
