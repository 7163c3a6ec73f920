import type { z } from 'zod';
import type { OpenApiObject } from './api-document.js';
import type { ProblemDetail } from './common.js';

/** A JSON body as it travels: parsed, untyped (a change module checks what it touches). */
export type JsonValue = unknown;

/**
 * How one change reads a request of the older version (docs/guide/versioning.md#translation).
 * `schema` is the body as the older version accepted it: a body it refuses is answered with the
 * ProblemDetail that version gave (the newer schema may accept more). `up` then rewrites an
 * accepted body into the newer version's.
 */
export interface RequestUp {
  readonly schema?: z.ZodType;
  readonly up?: (body: JsonValue) => JsonValue;
}

/** A webhook event as delivered: the envelope of docs/guide/webhooks.md. */
export interface VersionedEvent {
  readonly type: string;
  readonly [field: string]: unknown;
}

/**
 * One change of a dated version against the version before it (Stripe's "version change"):
 * what the older version lacked, as transforms from the newer shape to the older one (and,
 * for requests, back up). Each transform sees one operation's body and returns a new value; it
 * never mutates its input. Pure: the gateway applies them at the edge, and ordering can render
 * webhooks with the same functions.
 */
export interface ApiVersionChange {
  /** kebab-case, unique across every version: the changelog's anchor. */
  readonly name: string;
  /** One line: what changed for a partner. */
  readonly description: string;
  /** A 2xx JSON answer of the operation (by operationId), newer → older. */
  readonly responseDown?: Readonly<Record<string, (body: JsonValue) => JsonValue>>;
  /** Any ProblemDetail answer, of any operation (or none: an unknown route), newer → older. */
  readonly problemDown?: (problem: ProblemDetail, operationId: string | undefined) => ProblemDetail;
  /** A request body of the operation (by operationId), older → newer. */
  readonly requestUp?: Readonly<Record<string, RequestUp>>;
  /** An event, newer → older; undefined when the older version does not know it (not delivered). */
  readonly eventDown?: (event: VersionedEvent) => VersionedEvent | undefined;
  /**
   * Operations the change added: under an older version they answer 404 as an unknown route,
   * and its OpenAPI document lacks them.
   */
  readonly addedOperations?: readonly string[];
  /**
   * The OpenAPI document, newer → older, edited in place (api-document.ts): what the change
   * added to schemas, enums and webhooks. The operations of `addedOperations` go without it,
   * and the examples of each `responseDown` operation are brought down by that function.
   */
  readonly documentDown?: (document: OpenApiObject) => void;
}
