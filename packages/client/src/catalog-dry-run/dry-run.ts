import { validateCatalogSet, type ValidatedCatalogSet } from '@pcp/catalog-validation';
import {
  findNodeAtLocation,
  parseTree,
  printParseErrorCode,
  visit,
  type Node as JsonNode,
  type ParseOptions,
} from 'jsonc-parser';

/**
 * What a document is checked against besides the rules of docs/guide/catalogs.md#validation;
 * absent: not checked.
 */
export interface DryRunOptions {
  /** The store the document is for (its storeId must equal it). */
  storeId?: string;
  /** The store's ISO 4217 currency (the document's must equal it). */
  currency?: string;
}

/** One problem of a document: where it is (RFC 6901 pointer, 1-based line and column) and why. */
export interface DryRunError {
  /** RFC 6901 pointer to the value at fault, as ingest reports it ('' for the document). */
  path: string;
  message: string;
  /** Where the value the pointer names starts (or its nearest parent, when it is missing). */
  line: number;
  column: number;
}

/** The outcome of {@link dryRunCatalogSet}. */
export type DryRunResult =
  | { valid: true; errors: []; counts: ValidatedCatalogSet['counts'] }
  | { valid: false; errors: DryRunError[]; counts: null };

/** Strict JSON: jsonc-parser's own leniencies (comments, trailing commas) are errors. */
const STRICT_JSON: ParseOptions = {
  disallowComments: true,
  allowTrailingComma: false,
  allowEmptyContent: false,
};

/**
 * Dry-run a CatalogSet's text through the validator that catalog ingest runs
 * (docs/guide/catalogs.md#validation), and place every error at a line and column of the text.
 * Invalid JSON is one error at the syntax error. The location tree is built only when there are
 * errors to place, so a valid 50 MB document costs one parse and one validation.
 */
export function dryRunCatalogSet(text: string, options: DryRunOptions = {}): DryRunResult {
  // A byte order mark is not JSON, though ingest accepts it; a space keeps every offset.
  const source = text.startsWith('\uFEFF') ? ` ${text.slice(1)}` : text;
  let document: unknown;
  try {
    document = JSON.parse(source);
  } catch (error) {
    return { valid: false, errors: [syntaxError(source, error)], counts: null };
  }
  const validation = validateCatalogSet(document, {
    ...(options.storeId === undefined ? {} : { storeId: options.storeId.toLowerCase() }),
    ...(options.currency === undefined ? {} : { currency: options.currency }),
  });
  if (validation.ok) return { valid: true, errors: [], counts: validation.catalog.counts };

  const root = parseTree(source, [], STRICT_JSON);
  const lines = new LineIndex(source);
  return {
    valid: false,
    errors: validation.errors.map(({ path, message }) => ({
      path,
      message,
      ...lines.position(root ? locate(root, path).offset : 0),
    })),
    counts: null,
  };
}

/** The first syntax error, as jsonc-parser places it (V8's message repeats the text). */
function syntaxError(source: string, error: unknown): DryRunError {
  let found: { code: string; line: number; column: number } | undefined;
  visit(
    source,
    {
      onError: (code, _offset, _length, startLine, startCharacter) => {
        found ??= {
          code: printParseErrorCode(code),
          line: startLine + 1,
          column: startCharacter + 1,
        };
      },
    },
    STRICT_JSON,
  );
  if (found) {
    const reason = found.code.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
    return {
      path: '',
      message: `Invalid JSON: ${reason}.`,
      line: found.line,
      column: found.column,
    };
  }
  // What jsonc-parser accepts and JSON.parse does not: only V8's position is told.
  const position =
    error instanceof SyntaxError ? /position (\d+)/.exec(error.message)?.[1] : undefined;
  return {
    path: '',
    message: 'Invalid JSON.',
    ...new LineIndex(source).position(position === undefined ? 0 : Number(position)),
  };
}

/**
 * The node an RFC 6901 pointer names, or its nearest existing ancestor (a missing required
 * property is reported at the object that lacks it). GUID keys compare case-insensitively,
 * as the validator compares them, so a key written in upper case is still found.
 */
function locate(root: JsonNode, pointer: string): JsonNode {
  if (pointer === '') return root;
  let node = root;
  for (const token of pointer.slice(1).split('/')) {
    const key = token.replace(/~1/g, '/').replace(/~0/g, '~');
    const child =
      node.type === 'array'
        ? /^(0|[1-9]\d*)$/.test(key)
          ? findNodeAtLocation(node, [Number(key)])
          : undefined
        : (findNodeAtLocation(node, [key]) ?? propertyIgnoringCase(node, key));
    if (!child) break;
    node = child;
  }
  return node;
}

function propertyIgnoringCase(node: JsonNode, key: string): JsonNode | undefined {
  if (node.type !== 'object') return undefined;
  const wanted = key.toLowerCase();
  for (const property of node.children ?? []) {
    const [name, value] = property.children ?? [];
    if (typeof name?.value === 'string' && name.value.toLowerCase() === wanted) return value;
  }
  return undefined;
}

/** Offsets → 1-based line and column (UTF-16 code units, as editors count them). */
class LineIndex {
  /** Offset at which each line starts. */
  private readonly starts: number[] = [0];

  constructor(text: string) {
    for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) {
      this.starts.push(at + 1);
    }
  }

  position(offset: number): { line: number; column: number } {
    let low = 0;
    let high = this.starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (this.starts[middle]! <= offset) low = middle;
      else high = middle - 1;
    }
    return { line: low + 1, column: offset - this.starts[low]! + 1 };
  }
}
