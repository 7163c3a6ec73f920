import { catalogLimits, toJsonPointer, type CatalogIngestError } from '@pcp/contracts';

/** Collects errors up to the cap and counts the rest. */
export class ErrorSink {
  readonly errors: CatalogIngestError[] = [];
  private omitted = 0;

  add(path: readonly (string | number)[], message: string): void {
    if (this.errors.length < catalogLimits.maxErrors) {
      this.errors.push({ message, path: toJsonPointer(path) });
    } else {
      this.omitted += 1;
    }
  }

  get empty(): boolean {
    return this.errors.length === 0;
  }

  /** The errors; past the cap the last entry (path '') says how many more were omitted. */
  result(): CatalogIngestError[] {
    if (this.omitted === 0) return this.errors;
    const capped = this.errors.slice(0, catalogLimits.maxErrors - 1);
    const more = this.omitted + 1;
    capped.push({
      message: `${more} more error${more === 1 ? ' was' : 's were'} omitted (at most ${catalogLimits.maxErrors} errors are reported).`,
      path: '',
    });
    return capped;
  }
}
