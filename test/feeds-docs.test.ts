// docs/feeds.md is generated from the feed schemas; these tests keep the file on disk in step with
// the schemas and check that what it shows a producer (examples, fields, feeds.json) is true.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleLine, FEED_EXAMPLES, renderFeedDocs, unusedFieldNotes, writeFeedDocs } from '../src/feeds/docs.js';
import { FEED_KINDS, FEED_SCHEMAS, FeedIndex, parseFeedLine } from '../src/feeds/schema.js';

const DOCS_FILE = fileURLToPath(new URL('../docs/feeds.md', import.meta.url));
const rendered = renderFeedDocs();

/** The bodies of all fenced blocks with the given info string. */
function fencedBlocks(md: string, info: string): string[] {
  const re = new RegExp('^```' + info + '\\n([\\s\\S]*?)^```$', 'gm');
  return [...md.matchAll(re)].map((m) => m[1]!);
}

/** The text of the `### \`kind\`` section, up to the next heading of level 2 or 3. */
function kindSection(md: string, kind: string): string | null {
  const start = md.indexOf(`\n### \`${kind}\`\n`);
  if (start < 0) return null;
  const rest = md.slice(start + 1);
  const bodyStart = rest.indexOf('\n') + 1;
  const next = rest.slice(bodyStart).search(/^#{2,3} /m);
  return next < 0 ? rest : rest.slice(0, bodyStart + next);
}

describe('docs/feeds.md', () => {
  it('is up to date with the schemas (run `npm run docs:feeds` to regenerate)', () => {
    let onDisk: string;
    try {
      onDisk = readFileSync(DOCS_FILE, 'utf8');
    } catch {
      expect.fail('docs/feeds.md is missing: run `npm run docs:feeds` to generate it from src/feeds/schema.ts');
    }
    if (onDisk !== rendered) {
      const a = onDisk.split('\n');
      const b = rendered.split('\n');
      let i = 0;
      while (i < Math.max(a.length, b.length) && a[i] === b[i]) i++;
      expect.fail(
        `docs/feeds.md is out of date with src/feeds/schema.ts: run \`npm run docs:feeds\` and commit the result.\n` +
          `First difference at line ${i + 1}:\n  on disk:  ${a[i] ?? '(end of file)'}\n  expected: ${b[i] ?? '(end of file)'}`,
      );
    }
  });

  it('has no stale field notes in src/feeds/docs.ts', () => {
    expect(unusedFieldNotes(), 'remove these FIELD_NOTES entries: the field is gone or the schema now describes it').toEqual([]);
  });

  it('is deterministic', () => {
    expect(renderFeedDocs()).toBe(rendered);
  });

  it('every example line parses with parseFeedLine', () => {
    const lines = fencedBlocks(rendered, 'ndjson').flatMap((b) => b.split('\n').filter((l) => l.trim() !== ''));
    expect(lines.length).toBeGreaterThanOrEqual(FEED_KINDS.length);
    const kinds = new Set<string>();
    for (const line of lines) {
      const r = parseFeedLine(line);
      expect(r.ok ? 'ok' : r.error, line).toBe('ok');
      if (r.ok) kinds.add(r.record.kind);
    }
    expect([...kinds].sort()).toEqual([...FEED_KINDS].sort());
  });

  it('every example line on disk parses too', () => {
    const onDisk = readFileSync(DOCS_FILE, 'utf8');
    for (const line of fencedBlocks(onDisk, 'ndjson').flatMap((b) => b.split('\n').filter((l) => l.trim() !== ''))) {
      const r = parseFeedLine(line);
      expect(r.ok ? 'ok' : r.error, line).toBe('ok');
    }
  });

  it('the examples are valid as written by a producer (FEED_EXAMPLES)', () => {
    for (const kind of FEED_KINDS) {
      const r = parseFeedLine(JSON.stringify(FEED_EXAMPLES[kind]));
      expect(r.ok ? r.record.kind : r.error).toBe(kind);
    }
  });

  for (const kind of FEED_KINDS) {
    it(`has a section for ${kind}: description, every field in its table, its example`, () => {
      const section = kindSection(rendered, kind);
      expect(section, `no "### \`${kind}\`" section`).not.toBeNull();
      const text = section!;
      const schema = FEED_SCHEMAS[kind];
      if (schema.description) expect(text).toContain(schema.description);
      for (const field of Object.keys(schema.shape)) {
        expect(text, `field ${field} of ${kind}`).toMatch(new RegExp(`^\\| \`${field}\` \\|`, 'm'));
      }
      expect(text).toContain('| `kind` | string | required |');
      expect(fencedBlocks(text, 'ndjson')).toEqual([`${exampleLine(kind)}\n`]);
      expect(rendered).toContain(`[\`${kind}\`](#${kind})`);
    });
  }

  it('documents nested fields with dotted paths, nullable types, formats, defaults and optional fields', () => {
    const probe = kindSection(rendered, 'probe')!;
    expect(probe).toMatch(/^\| `at` \| string \(date-time\) \| required \|/m);
    expect(probe).toMatch(/^\| `phases\.dns` \| number\\\|null \| required \|/m);
    expect(probe).toMatch(/^\| `cert` \| object\\\|null \| required \|/m);
    expect(probe).toMatch(/^\| `cert\.not_after` \| string \(date-time\) \| required \|/m);
    expect(probe).toMatch(/^\| `ips` \| array of string \(ipv4\\\|ipv6\) \| required \|/m);
    expect(probe).toMatch(/^\| `hostname` \| string \(hostname\) \| required \|/m);
    expect(probe).toMatch(/^\| `error` \| string\\\|null \| optional \|/m);
    expect(probe).toMatch(/^\| `role` \|.*one of `SMP`, `AP`/m);
    const smp = kindSection(rendered, 'smp')!;
    expect(smp).toMatch(/^\| `endpoints` \| array of object \| required \|/m);
    expect(smp).toMatch(/^\| `endpoints\[\]\.cert\.fingerprint` \| string \| required \|/m);
    const member = kindSection(rendered, 'member')!;
    expect(member).toMatch(/^\| `active` \| boolean \| optional \| `true` \|/m);
    expect(member).toMatch(/^\| `hostnames` \| array of string \(hostname\) \| optional \|/m);
    const curation = kindSection(rendered, 'curation')!;
    expect(curation).toMatch(/^\| `seats` \| array of string \| required \|.*`\^P\[A-Z\]\{2\}\[0-9\]\{6\}\$`/m);
    const directory = kindSection(rendered, 'directory')!;
    expect(directory).toMatch(/^\| `card\.registrationDate` \| string \(date\)\\\|null \| required \|/m);
    const zone = kindSection(rendered, 'zone')!;
    expect(zone).toMatch(/^\| `soa_serial` \| integer\\\|null \|.*0–4294967295/m);
    expect(zone).toContain('`existing_ok` must not exceed `existing_total`');
  });

  it('explains sources, rejects and conventions', () => {
    for (const phrase of [
      'feeds.json',
      '`.gz`',
      'as stored',
      'in the order listed, each exactly once',
      '`rejects` table',
      'never aborts the segment',
      'Unknown fields are ignored',
      'iso6523-actorid-upis::0208:0123456789AB',
      '`0208::0123456789ab`',
      'normalised to lower case',
    ]) {
      expect(rendered).toContain(phrase);
    }
  });

  it('ends with the feeds.json JSON Schema, and its example index is valid', () => {
    const jsonBlocks = fencedBlocks(rendered, 'json');
    expect(jsonBlocks.length).toBeGreaterThanOrEqual(2);
    const last = JSON.parse(jsonBlocks[jsonBlocks.length - 1]!) as unknown;
    expect(last).toEqual(z.toJSONSchema(FeedIndex, { io: 'input', unrepresentable: 'any' }));
    const example = JSON.parse(jsonBlocks[0]!) as unknown;
    expect(FeedIndex.safeParse(example).success).toBe(true);
  });

  it('writeFeedDocs writes exactly renderFeedDocs(), creating the directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'feeds-docs-'));
    try {
      const file = join(dir, 'nested', 'feeds.md');
      writeFeedDocs(file);
      expect(readFileSync(file, 'utf8')).toBe(rendered);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
