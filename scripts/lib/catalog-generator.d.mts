/** Types of catalog-generator.mjs (a plain-JS module used by benchmarks and tests). */

export interface GeneratedAvailabilityWindow {
  dayOfWeek: string;
  start: string;
  end: string;
}

export interface GeneratedCatalogSet {
  catalogSetId: string;
  storeId: string;
  currency: string;
  catalogs: Record<
    string,
    {
      catalogId: string;
      name: string;
      sectionIds: string[];
      availability: GeneratedAvailabilityWindow[];
    }
  >;
  sections: Record<
    string,
    { sectionId: string; name: string; sectionIds: string[]; itemIds: string[] }
  >;
  items: Record<
    string,
    {
      itemId: string;
      name: string;
      description?: string;
      basePrice: number;
      isAvailable: boolean;
      modifierGroupIds: string[];
      imageUrl?: string;
    }
  >;
  modifierGroups: Record<
    string,
    {
      modifierGroupId: string;
      name: string;
      minimumAllowed: number;
      maximumAllowed: number;
      itemIds: string[];
    }
  >;
}

export interface GenerateCatalogSetOptions {
  storeId: string;
  /** Exact number of entries of the `items` dictionary (top-level items plus options). */
  items: number;
  /** ISO 4217 code; prices get its number of fraction digits. Default USD. */
  currency?: string;
  /** PRNG seed; the same options always give the same document. Default 1. */
  seed?: number;
  /** Levels of modifier nesting (fewer on small documents). Default 2. */
  modifierDepth?: number;
}

export function generateCatalogSet(options: GenerateCatalogSetOptions): GeneratedCatalogSet;

/** A deep copy of `doc` with one item's first modifierGroupId pointing nowhere. */
export function withBrokenReference(doc: GeneratedCatalogSet): GeneratedCatalogSet;
