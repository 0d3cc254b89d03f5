// datapackage.json of a bulk copy (docs/bulk.md, "datapackage.json"): a Frictionless Data Package v2
// (https://datapackage.org/standard/data-package/) listing every file of the copy with its media type,
// size and SHA-256, each table's Table Schema v2 generated from its zod schema (src/bulk/columns.ts),
// and the licences and sources of the configuration. It holds no clock: the same files give the same
// descriptor.
import type { BulkConfig } from '../config/index.js';
import { tableSchemaFields, type Column } from './columns.js';

export const DATA_PACKAGE_PROFILE = 'https://datapackage.org/profiles/2.0/datapackage.json';
export const DATA_RESOURCE_PROFILE = 'https://datapackage.org/profiles/2.0/dataresource.json';
export const TABLE_SCHEMA_PROFILE = 'https://datapackage.org/profiles/2.0/tableschema.json';

/** The formats of a bulk file. */
export type BulkFormat = 'ndjson' | 'parquet' | 'csv' | 'sqlite';

/** A file of a bulk copy, as datapackage.json describes it. */
export interface BulkFileInfo {
  /** File name inside the copy (the resource's path). */
  file: string;
  format: BulkFormat;
  sha256: string;
  bytes: number;
  /** The table it holds, with its columns (the SQLite dump holds every table). */
  table: { name: string; title: string; description: string; columns: readonly Column[] } | null;
}

/** Media type of the data (before compression) and whether the file is gzip-compressed. */
export const FORMATS: Record<BulkFormat, { mediatype: string; compressed: boolean; text: boolean }> = {
  ndjson: { mediatype: 'application/x-ndjson', compressed: true, text: true },
  parquet: { mediatype: 'application/vnd.apache.parquet', compressed: false, text: false },
  csv: { mediatype: 'text/csv', compressed: true, text: true },
  sqlite: { mediatype: 'application/vnd.sqlite3', compressed: true, text: false },
};

/** The HTTP content type a bulk file is published with (docs/bulk.md, "Publishing"). */
export function bulkContentType(file: string): string {
  if (file.endsWith('.gz')) return 'application/gzip';
  if (file.endsWith('.parquet')) return FORMATS.parquet.mediatype;
  if (file.endsWith('.json')) return 'application/json';
  return 'text/plain; charset=utf-8';
}

export interface PackageInfo {
  day: string;
  baseUrl: string;
  config: BulkConfig;
  files: readonly BulkFileInfo[];
}

/** The datapackage.json object of a bulk copy. */
export function dataPackage(p: PackageInfo): Record<string, unknown> {
  return {
    $schema: DATA_PACKAGE_PROFILE,
    name: 'peppol-network-monitoring',
    title: `Peppol network monitoring: bulk data of ${p.day}`,
    description:
      'Every published resource of the Peppol Network Monitoring API as tables (NDJSON, Parquet, CSV for the flat tables) and one SQLite file, from the database state of the snapshot that wrote them. Rows are the API\'s objects; flat forms flatten nested objects into columns named by their path (a_b) and hold lists and free-form objects as JSON text.',
    version: p.day,
    homepage: `${p.baseUrl}/openapi.json`,
    licenses: p.config.licenses,
    sources: p.config.sources,
    resources: p.files.map((f) => resource(f)),
  };
}

function resource(f: BulkFileInfo): Record<string, unknown> {
  const fmt = FORMATS[f.format];
  const r: Record<string, unknown> = {
    name: f.file.replace(/\.gz$/, ''),
    path: f.file,
  };
  if (f.table !== null) {
    r.type = 'table';
    r.title = `${f.table.title} (${f.format === 'ndjson' ? 'NDJSON' : f.format === 'csv' ? 'CSV' : 'Parquet'})`;
    r.description = f.table.description;
  } else {
    r.title = 'Every table in one SQLite database';
    r.description = 'The tables of this package as SQLite tables of the same names and flat columns (booleans 0/1, timestamps as RFC 3339 text, lists and objects as JSON text).';
  }
  r.format = f.format;
  r.mediatype = fmt.mediatype;
  if (fmt.text) r.encoding = 'utf-8';
  if (fmt.compressed) r.compression = 'gz';
  r.bytes = f.bytes;
  r.hash = `sha256:${f.sha256}`;
  if (f.table !== null) r.schema = { $schema: TABLE_SCHEMA_PROFILE, fields: tableSchemaFields(f.table.columns), missingValues: [''] };
  return r;
}

/** SHA256SUMS of files (the `sha256sum` format: hash, two spaces, name), sorted by name. */
export function sha256sums(files: ReadonlyArray<{ file: string; sha256: string }>): string {
  return [...files]
    .sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))
    .map((f) => `${f.sha256}  ${f.file}\n`)
    .join('');
}
