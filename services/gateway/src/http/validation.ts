import { maxProblemErrors, parseContract, type ContractParseResult } from '@pcp/contracts';
import { AppError, issuesToErrors } from '@pcp/service-kit';
import type { FastifySchemaCompiler } from 'fastify';
import type { z } from 'zod';

/**
 * Validate request parts with their zod schemas. Body errors point into the body
 * (RFC 6901); path, query and header errors name the parameter instead.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> =
  ({ schema, httpPart }) =>
  (data) => {
    const result = validate(schema, data, httpPart);
    if (result.success) return { value: result.data };
    const { issues } = result.error;
    const errors = issuesToErrors(issues.slice(0, maxProblemErrors)).map((error) =>
      httpPart === 'body'
        ? error
        : {
            ...error,
            message: `${httpPart === 'params' ? 'path' : (httpPart ?? 'request')} parameter '${(error.pointer ?? '').slice(1)}': ${error.message}`,
            pointer: null,
          },
    );
    const first = errors[0];
    const detail = result.firstOnly
      ? 'The request is invalid; the first problem found is listed'
      : issues.length === 1 && first
        ? first.pointer === null
          ? first.message
          : `${first.pointer || 'body'}: ${first.message}`
        : `The request has ${issues.length} invalid fields`;
    return {
      error: new AppError('REQUEST_INVALID', detail, {
        errors,
        errorsOmitted: issues.length - errors.length,
      }),
    };
  };

/**
 * Path parameters are ids, each checked by its own schema (a GUID cannot hold a NUL), and
 * the marketfront store lookup answers a malformed id itself with the spec's bodiless 404:
 * the contract-wide rules of `parseContract` are for bodies, queries and headers.
 */
function validate(
  schema: z.ZodType,
  data: unknown,
  httpPart: string | undefined,
): ContractParseResult<unknown> {
  if (httpPart !== 'params') return parseContract(schema, data);
  const parsed = schema.safeParse(data);
  return parsed.success ? parsed : { success: false, error: parsed.error, firstOnly: false };
}

/** Replies are validated by the bus against the contracts already; serialize them as they are. */
export const plainSerializerCompiler = () => (data: unknown) => JSON.stringify(data);
