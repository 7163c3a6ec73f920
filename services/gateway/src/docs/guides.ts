import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Marked, type Tokens } from 'marked';

/**
 * The partner guides, `docs/guide/<name>.md` at the repository root: the partner-facing rules,
 * written once. The gateway serves them at `{DOCS_URL}/guide/<name>`; error pages and the
 * OpenAPI document link to them.
 */
export const guideNames = [
  'authentication',
  'catalogs',
  'stores',
  'carts',
  'orders',
  'payments',
  'webhooks',
  'live-events',
  'errors',
  'requests',
  'sandbox',
  'versioning',
  'changelog',
] as const;
export type GuideName = (typeof guideNames)[number];

/** A heading of a guide, where one rule lives. */
export interface GuideSection {
  readonly guide: GuideName;
  /** The heading's text, exactly as the guide writes it (`## Idempotency`). */
  readonly heading: string;
}

export function isGuideName(name: string): name is GuideName {
  return (guideNames as readonly string[]).includes(name);
}

/**
 * The folder of the guides: the repository's `docs/guide`, four levels above this module in
 * `src/docs` and in `dist/docs` alike (the image copies `docs/guide` to the same place).
 */
export const guideDirectory = fileURLToPath(new URL('../../../../docs/guide/', import.meta.url));

/** A guide's Markdown source. */
export function readGuide(name: GuideName): string {
  return readFileSync(join(guideDirectory, `${name}.md`), 'utf8');
}

/**
 * The anchor of a heading, as GitHub makes it: lower case, punctuation dropped, spaces as
 * hyphens (`Retry schedule` → `retry-schedule`), so a link works on the served page and in
 * the repository alike.
 */
export function headingAnchor(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s/g, '-');
}

/** The served URL of a guide, or of one of its sections. */
export function guideUrl(docsUrl: string, target: GuideName | GuideSection): string {
  if (typeof target === 'string') return `${docsUrl}/guide/${target}`;
  return `${docsUrl}/guide/${target.guide}#${headingAnchor(target.heading)}`;
}

/** A guide's title: its first line, `# Title`. */
export function guideTitle(markdown: string): string {
  return /^# (.+)$/m.exec(markdown)?.[1]?.trim() ?? '';
}

/** A link between guides (`orders.md#idempotency`) as the served page's (`orders#idempotency`). */
const GUIDE_LINK = /^([a-z-]+)\.md(#.*)?$/;

const markdown = new Marked({
  gfm: true,
  walkTokens(token) {
    if (token.type !== 'link') return;
    const link = token as Tokens.Link;
    const match = GUIDE_LINK.exec(link.href);
    if (match) link.href = `${match[1]}${match[2] ?? ''}`;
  },
  renderer: {
    heading({ tokens, depth, text }) {
      const id = headingAnchor(text);
      return `<h${depth} id="${id}">${this.parser.parseInline(tokens)}</h${depth}>\n`;
    },
  },
});

/** A guide's body as HTML (the guides are this repository's own text, not partner input). */
export function renderGuideHtml(source: string): string {
  return markdown.parse(source, { async: false });
}
