import { Fragment } from 'preact';

/** One problem of a CatalogSet, as ingest and the dry run report it (docs/guide/catalogs.md). */
export interface CatalogError {
  readonly message: string;
  /** An RFC 6901 pointer into the document, '' for the document as a whole (a download). */
  readonly path: string;
}

/** Some messages lead with their code ("PRECISION_EXCEEDED: basePrice …"): shown apart. */
const CODED = /^([A-Z][A-Z0-9_]{2,}): ([\s\S]*)$/;

/**
 * A pointer that wraps between its segments on a narrow screen; its text is the pointer
 * exactly as the API gave it (`/items/<id>/basePrice`), so it can be searched in the document.
 */
function Pointer({ path }: { path: string }) {
  if (path === '') return <span class="muted">The whole document</span>;
  const segments = path.split('/').slice(1);
  return (
    <code class="pointer">
      {segments.map((segment, index) => (
        <Fragment key={index}>
          {index > 0 && <wbr />}/{segment}
        </Fragment>
      ))}
    </code>
  );
}

/**
 * The errors of an ingest run or a dry run, each against the place in the document it is
 * about: one table for both, so a partner reads them the same way wherever they come from.
 */
export function CatalogErrorList({
  errors,
  caption,
}: {
  errors: readonly CatalogError[];
  caption: string;
}) {
  return (
    <div class="table-wrap">
      <table class="table catalog-errors">
        <caption>{caption}</caption>
        <thead>
          <tr>
            <th scope="col">Where (JSON pointer)</th>
            <th scope="col">Problem</th>
          </tr>
        </thead>
        <tbody>
          {errors.map((error, index) => {
            const coded = CODED.exec(error.message);
            return (
              <tr key={index}>
                <th scope="row">
                  <Pointer path={error.path} />
                </th>
                <td>
                  {coded ? (
                    <>
                      <code class="error-code">{coded[1]}</code> {coded[2]}
                    </>
                  ) : (
                    error.message
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** What an ingest changed (or a dry run would), counted against the catalog active before. */
export interface ChangeSummary {
  readonly items: number;
  readonly sections: number;
  readonly modifierGroups: number;
  readonly added: number;
  readonly removed: number;
  readonly priceChanged: number;
}

const plural = (count: number, one: string, many = `${one}s`) =>
  `${count.toLocaleString()} ${count === 1 ? one : many}`;

/** The changes in one line: "1 added · 0 removed · 2 prices changed". */
export function changeLine(summary: ChangeSummary): string {
  return `${summary.added.toLocaleString()} added · ${summary.removed.toLocaleString()} removed · ${plural(summary.priceChanged, 'price')} changed`;
}

/** The size of the catalog in one line: "9 items · 2 sections · 3 modifier groups". */
export function sizeLine(summary: ChangeSummary): string {
  return `${plural(summary.items, 'item')} · ${plural(summary.sections, 'section')} · ${plural(summary.modifierGroups, 'modifier group')}`;
}
