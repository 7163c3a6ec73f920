/** Types of client-generation.mjs (used by the client's drift test). */

/** The checked-in document, as the gateway renders it. */
export const documentPath: string;
/** The openapi-typescript output the client is typed with. */
export const typesPath: string;
/** The document as checked in: its keys in the order the gateway rendered them. */
export function documentText(document: unknown): Promise<string>;
/** The TypeScript types of the document `text` (what documentText returned). */
export function typesText(text: string): Promise<string>;
