import type {
  CatalogIngestError,
  CatalogIngestStatusValue,
  CatalogIngestSummary,
  PartnerMode,
} from '@pcp/contracts';
import type { OutboxTable } from '@pcp/service-kit';
import type { ColumnType, Generated, JSONColumnType, Selectable } from 'kysely';

export interface IngestRunTable {
  run_id: string;
  store_id: string;
  partner_id: string;
  /** The notifying request's mode, which is its store's (docs/guide/sandbox.md#modes). */
  mode: ColumnType<PartnerMode, PartnerMode | undefined, never>;
  callback_url: string;
  /** The store's currency when notified; the document must match it. */
  currency: string;
  /** Notification order per deployment; a run never replaces a later one's catalog. */
  sequence: Generated<number>;
  status: CatalogIngestStatusValue;
  errors: JSONColumnType<CatalogIngestError[], string | undefined>;
  summary: JSONColumnType<CatalogIngestSummary | null, string | null | undefined, string | null>;
  attempts: Generated<number>;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  /** Last time the run's work message was published (the reconciler re-publishes). */
  published_at: Date | null;
  /**
   * Set while the run waits in the fair queue for a slot (from its notification on, and again
   * after a lapsed or released attempt); a claim picks among waiting runs. Cleared by a claim.
   */
  parked_at: Date | null;
  /** When the run first showed `processing` (shown while its activation event is pending). */
  processing_at: Date | null;
  /** When a worker first took the run up (its first claim). */
  started_at: ColumnType<Date | null, never, Date | null>;
  version_id: string | null;
  activation_event_id: ColumnType<string | null, never, string | null>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface CatalogVersionTable {
  version_id: string;
  store_id: string;
  run_id: string;
  sequence: number;
  /** Its run's: only requests of this mode read the version as another partner. */
  mode: ColumnType<PartnerMode, PartnerMode | undefined, never>;
  catalog_set_id: string;
  currency: string;
  /** Strong ETag of the document, quoted. */
  etag: string;
  /** Size of the validated CatalogSet as served (UTF-8 JSON), stored in `chunk_count` chunks. */
  document_bytes: ColumnType<number, number, number>;
  chunk_count: number;
  /** itemId → basePrice in minor units, for the next run's change summary. */
  prices: JSONColumnType<Record<string, number>>;
  created_at: Generated<Date>;
}

/** One chunk of a version's document, in order by `chunk_index`. */
export interface CatalogDocumentChunkTable {
  version_id: string;
  chunk_index: number;
  bytes: Buffer;
}

export interface ActiveCatalogTable {
  store_id: string;
  version_id: string;
  sequence: number;
  /** The store catalog's aggregate version: 1 at its first activation, one more each time. */
  version: number;
  activated_at: Date;
}

/** When a partner's run last started: the fair queue serves the least recent partner first. */
export interface IngestPartnerTurnTable {
  partner_id: string;
  last_claimed_at: Date;
}

export type IngestRunRow = Selectable<IngestRunTable>;

export interface CatalogDatabase {
  ingest_runs: IngestRunTable;
  ingest_partner_turns: IngestPartnerTurnTable;
  catalog_versions: CatalogVersionTable;
  catalog_document_chunks: CatalogDocumentChunkTable;
  active_catalogs: ActiveCatalogTable;
  outbox: OutboxTable;
}
