import {
  API_DEPRECATIONS,
  type ApiDeprecations,
  type ApiVersion,
  type DeprecationDates,
} from '@pcp/contracts';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { guideUrl } from '../docs/guides.js';

export interface ApiDeprecationOptions {
  /** Where the guides are served: the Link header points into `${docsUrl}/guide/changelog`. */
  readonly docsUrl: string;
  /** The marks; the registry's (packages/contracts/src/api-deprecations.ts) by default. */
  readonly deprecations?: ApiDeprecations;
}

/** A mark as its headers need it: dates in milliseconds, the link written once. */
interface Mark {
  readonly since: number;
  readonly sunset: number | undefined;
  readonly link: string;
}

/** An ISO 8601 date, or date-time with its offset: never a local time Date.parse would guess. */
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2}))?$/;

function instantOf(text: string, what: string): number {
  const ms = ISO_DATE.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) throw new Error(`${what}: ${JSON.stringify(text)} is not an ISO 8601 date`);
  return ms;
}

function markOf(dates: DeprecationDates, link: string, what: string): Mark {
  return {
    since: instantOf(dates.since, `${what} deprecated since`),
    sunset: dates.sunset === undefined ? undefined : instantOf(dates.sunset, `${what} sunset`),
    link: `<${link}>; rel="deprecation"`,
  };
}

/** Our Link after any the answer has: Fastify's `header()` would replace it. */
function appendLink(reply: FastifyReply, link: string): void {
  const existing = reply.getHeader('link');
  if (existing === undefined) reply.header('link', link);
  else reply.header('link', `${[existing].flat().join(', ')}, ${link}`);
}

/** `Deprecation` (RFC 9745: `@` and Unix seconds), `Sunset` (RFC 8594: IMF-fixdate), `Link`. */
function writeHeaders(reply: FastifyReply, marks: readonly Mark[]): void {
  const since = Math.min(...marks.map((mark) => mark.since));
  reply.header('deprecation', `@${Math.floor(since / 1000)}`);
  const sunsets = marks.flatMap((mark) => (mark.sunset === undefined ? [] : [mark.sunset]));
  if (sunsets.length > 0) reply.header('sunset', new Date(Math.min(...sunsets)).toUTCString());
  appendLink(reply, marks.map((mark) => mark.link).join(', '));
}

/**
 * The deprecation headers (contract §14, docs/guide/versioning.md#deprecation): every answer,
 * errors included, to a request in a deprecated version or of a deprecated operation. The
 * earliest date wins when both are; each links its changelog entry. Without marks there is no
 * hook at all; with some, an answer that is neither costs a map lookup or two.
 */
const apiDeprecation: FastifyPluginAsync<ApiDeprecationOptions> = async (app, options) => {
  const deprecations = options.deprecations ?? API_DEPRECATIONS;
  const changelog = (anchor: string) =>
    `${guideUrl(options.docsUrl, 'changelog')}#${encodeURIComponent(anchor)}`;
  const versionMarks = new Map<ApiVersion, Mark>();
  for (const [version, dates] of Object.entries(deprecations.versions)) {
    if (dates) versionMarks.set(version as ApiVersion, markOf(dates, changelog(version), version));
  }
  const operationMarks = new Map<string, { mark: Mark; versions?: ReadonlySet<ApiVersion> }>();
  for (const [operationId, deprecation] of Object.entries(deprecations.operations)) {
    operationMarks.set(operationId, {
      mark: markOf(deprecation, changelog(deprecation.changelogAnchor), operationId),
      ...(deprecation.versions ? { versions: new Set(deprecation.versions) } : {}),
    });
  }
  if (versionMarks.size === 0 && operationMarks.size === 0) return;

  const operationMark = (request: FastifyRequest): Mark | undefined => {
    const operationId = request.routeOptions.schema?.operationId;
    const marked = operationId === undefined ? undefined : operationMarks.get(operationId);
    if (!marked || (marked.versions && !marked.versions.has(request.apiVersion))) return undefined;
    return marked.mark;
  };

  app.addHook('onSend', (request, reply, payload, done) => {
    const version = versionMarks.get(request.apiVersion);
    const operation = operationMarks.size === 0 ? undefined : operationMark(request);
    if (version && operation) writeHeaders(reply, [version, operation]);
    else if (version ?? operation) writeHeaders(reply, [(version ?? operation) as Mark]);
    done(null, payload);
  });
};

export default fp(apiDeprecation, {
  name: 'api-deprecation',
  dependencies: ['api-version'],
});
