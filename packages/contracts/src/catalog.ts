import { z } from 'zod';
import { availability } from './availability.js';
import { dateTime, guid, maxListPage, moneyAmount } from './common.js';
import {
  catalogIngestStatusExamples,
  catalogIngestSummaryExample,
  catalogSetExample,
  exampleIds,
} from './examples.js';
import { currencyCode } from './stores.js';

/** Limits of one CatalogSet document (docs/guide/catalogs.md#limits). */
export const catalogLimits = {
  maxDocumentBytes: 50 * 1024 * 1024,
  maxItems: 100_000,
  maxModifierDepth: 5,
  maxErrors: 100,
} as const;

const name = z.string().trim().min(1).max(200);
const idList = z.array(guid).max(100_000);
/** Keys equal their entity's id, a GUID, so they are lower-cased like every GUID. */
const dictionaryKey = z.string().toLowerCase();

export const catalogEntry = z.object({
  catalogId: guid,
  name,
  sectionIds: idList,
  availability: availability.nullable().optional(),
});

export const catalogSection = z.object({
  sectionId: guid,
  name,
  sectionIds: idList.optional(),
  itemIds: idList.optional(),
});

export const catalogItem = z.object({
  itemId: guid,
  name,
  description: z.string().max(5_000).nullable().optional(),
  basePrice: moneyAmount,
  isAvailable: z.boolean().nullable().optional(),
  modifierGroupIds: idList.optional(),
  imageUrl: z
    .url({ protocol: /^https?$/ })
    .max(2_048)
    .nullable()
    .optional(),
});

export const modifierGroup = z.object({
  modifierGroupId: guid,
  name,
  minimumAllowed: z.number().int().min(0).max(1_000),
  maximumAllowed: z.number().int().min(0).max(1_000),
  itemIds: idList,
});

/**
 * The CatalogSet a commerce partner hosts (docs/guide/catalogs.md#the-catalogset): normalized
 * dictionaries keyed by each entity's own id. Referential rules (keys equal ids, references
 * resolve, no cycles, modifier depth, precision per currency) are checked by the catalog service.
 */
export const catalogSetDocument = z
  .object({
    catalogSetId: guid,
    storeId: guid,
    currency: currencyCode,
    catalogs: z.record(dictionaryKey, catalogEntry),
    sections: z.record(dictionaryKey, catalogSection),
    items: z.record(dictionaryKey, catalogItem),
    modifierGroups: z.record(dictionaryKey, modifierGroup),
  })
  .meta({ examples: [catalogSetExample] });
export type CatalogSetDocument = z.infer<typeof catalogSetDocument>;

/** Body of `POST /v1/commerce/catalogset-notification`. */
export const catalogSetNotification = z
  .object({
    callbackUrl: z.string().min(1).max(2_048),
  })
  .meta({
    examples: [
      { callbackUrl: `https://pos.lakeside-burgers.example/catalogs/${exampleIds.store}.json` },
    ],
  });

export const catalogIngestAccepted = z
  .object({
    catalogIngestId: guid,
    statusUrl: z.string(),
  })
  .meta({
    examples: [
      {
        catalogIngestId: exampleIds.ingest,
        statusUrl: `/v1/commerce/stores/${exampleIds.store}/catalog-ingest/${exampleIds.ingest}/status`,
      },
    ],
  });

export const catalogIngestStatusValue = z.enum([
  'queued',
  'pulling',
  'processing',
  'succeeded',
  'failed',
]);
export type CatalogIngestStatusValue = z.infer<typeof catalogIngestStatusValue>;

/** A partner-safe reason an ingest failed; `path` is an RFC 6901 pointer or ''. */
export const catalogIngestError = z.object({ message: z.string(), path: z.string() });
export type CatalogIngestError = z.infer<typeof catalogIngestError>;

export const catalogIngestSummary = z.object({
  items: z.number().int(),
  sections: z.number().int(),
  modifierGroups: z.number().int(),
  added: z.number().int(),
  removed: z.number().int(),
  priceChanged: z.number().int(),
});
export type CatalogIngestSummary = z.infer<typeof catalogIngestSummary>;

export const catalogIngestStatus = z
  .object({
    catalogIngestId: guid,
    storeId: guid,
    status: catalogIngestStatusValue,
    createdAt: dateTime,
    updatedAt: dateTime,
    errors: z.array(catalogIngestError),
    summary: catalogIngestSummary.optional(),
  })
  .meta({ examples: catalogIngestStatusExamples });
export type CatalogIngestStatus = z.infer<typeof catalogIngestStatus>;

/**
 * Answer of a CatalogSet dry run (`POST /v1/commerce/stores/{storeId}/catalogset-validation`):
 * what an ingest of the document at callbackUrl would report now, with nothing stored or
 * activated. A download failure or invalid JSON is `valid: false` with the message ingest
 * would record; `summary` (counted against the active catalog) only when valid.
 */
export const catalogSetDryRun = z
  .object({
    valid: z.boolean(),
    errors: z.array(catalogIngestError).max(catalogLimits.maxErrors),
    summary: catalogIngestSummary.nullable(),
  })
  .meta({
    examples: [
      {
        valid: true,
        errors: [],
        summary: catalogIngestSummaryExample,
      },
    ],
  });
export type CatalogSetDryRun = z.infer<typeof catalogSetDryRun>;

/** One ingest run as a store's list shows it; its errors stay on its status resource. */
export const catalogIngestRun = z
  .object({
    catalogIngestId: guid,
    state: catalogIngestStatusValue,
    createdAt: dateTime,
    /** When a worker first took it up (absent while queued, and for a run superseded in the queue). */
    startedAt: dateTime.optional(),
    /** When it succeeded or failed. */
    finishedAt: dateTime.optional(),
    /** A succeeded run's summary, counted against the catalog active before it. */
    changeSummary: catalogIngestSummary.optional(),
    /** How many errors a failed run has on its status resource (0 otherwise). */
    errorCount: z.number().int().nonnegative(),
  })
  .meta({ id: 'CatalogIngestRun' });
export type CatalogIngestRun = z.infer<typeof catalogIngestRun>;

export const catalogIngestList = z
  .object({
    ingests: z.array(catalogIngestRun).max(maxListPage),
    /** Absent on the last page; otherwise send it back as `before` for the next page. */
    nextCursor: z.string().optional(),
  })
  .meta({
    id: 'CatalogIngestList',
    examples: [
      {
        ingests: [
          {
            catalogIngestId: exampleIds.ingest,
            state: 'succeeded',
            createdAt: '2026-11-22T09:00:00Z',
            startedAt: '2026-11-22T09:00:01Z',
            finishedAt: '2026-11-22T09:00:04Z',
            changeSummary: catalogIngestSummaryExample,
            errorCount: 0,
          },
        ],
        nextCursor:
          'MjAyNi0xMS0yMlQwOTowMDowMC4wMDAwMDBafDhhN2I2YzVkLTRlM2YtNGExYi05YzJkLTBlMWYyYTNiNGM1ZA',
      },
    ],
  });
export type CatalogIngestList = z.infer<typeof catalogIngestList>;
