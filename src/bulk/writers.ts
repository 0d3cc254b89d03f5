// The formats a bulk table is written in (docs/bulk.md, "Formats"), each fed one row at a time:
// - NDJSON, gzip: one API object per line, as the API serialises it (jsonText);
// - CSV, gzip (flat tables): RFC 4180 with a header row and CRLF line ends; null is an empty field, an
//   empty string is `""`; lists and free-form objects as their JSON text;
// - Parquet: typed columns, snappy-compressed, one row group every `rowGroupRows` rows (written as it
//   fills, so memory holds one row group), statistics and page indexes, no timestamp in the metadata;
// - SQLite: a table of the dump (src/bulk/index.ts makes the file).
import type Database from 'better-sqlite3';
import { ByteWriter, ParquetWriter } from 'hyparquet-writer';
import type { SchemaElement } from 'hyparquet';
import { jsonText } from '../api/json.js';
import { DAY_MS } from '../api/time.js';
import { valueAt, type Column } from './columns.js';
import { GzipFile, HashedFile, type WrittenFile } from './file.js';

/**
 * Writes rows of one table in one format: `row` is the API object, `flat` its values in the order of the
 * table's flat columns (flatValues, computed once per row for every flat format).
 */
export interface TableWriter {
  add(row: unknown, flat: readonly unknown[]): void;
  close(): WrittenFile;
  abort(): void;
}

export class NdjsonWriter implements TableWriter {
  private readonly out: GzipFile;
  constructor(abs: string) {
    this.out = new GzipFile(abs);
  }
  add(row: unknown): void {
    this.out.write(jsonText(row));
  }
  close(): WrittenFile {
    return this.out.close();
  }
  abort(): void {
    this.out.abort();
  }
}

/** A row's values in the order of flat columns. */
export function flatValues(row: unknown, columns: readonly Column[]): unknown[] {
  return columns.map((c) => valueAt(row, c.path));
}

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote, CR or LF, or is empty (null is the empty field). */
function csvField(v: unknown, c: Column): string {
  if (v === null || v === undefined) return '';
  const s = c.type === 'object' || c.type === 'array' ? JSON.stringify(v) : typeof v === 'string' ? v : String(v);
  return s === '' || /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export class CsvWriter implements TableWriter {
  private readonly out: GzipFile;
  constructor(
    abs: string,
    private readonly columns: readonly Column[],
  ) {
    this.out = new GzipFile(abs);
    this.out.write(`${columns.map((c) => c.name).join(',')}\r\n`);
  }
  add(_row: unknown, flat: readonly unknown[]): void {
    this.out.write(`${this.columns.map((c, i) => csvField(flat[i], c)).join(',')}\r\n`);
  }
  close(): WrittenFile {
    return this.out.close();
  }
  abort(): void {
    this.out.abort();
  }
}

/** Bytes a Parquet writer holds before it writes them to the file. */
const PARQUET_FLUSH_BYTES = 1 << 20;

/** A hyparquet-writer Writer that writes to a HashedFile every PARQUET_FLUSH_BYTES (its fileWriter, hashed). */
class HashingWriter extends ByteWriter {
  constructor(private readonly file: HashedFile) {
    super(PARQUET_FLUSH_BYTES * 2);
  }
  override ensure(size: number): void {
    if (this.index > PARQUET_FLUSH_BYTES) this.flushBytes();
    super.ensure(size);
  }
  flushBytes(): void {
    this.file.write(new Uint8Array(this.buffer, 0, this.index));
    this.index = 0;
  }
  override finish(): void {
    this.flushBytes();
  }
}

/** The Parquet column of a Table Schema column. */
function parquetElement(c: Column): SchemaElement {
  const repetition_type = c.required ? 'REQUIRED' : 'OPTIONAL';
  switch (c.type) {
    case 'string':
      return { name: c.name, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' }, repetition_type };
    case 'integer':
      return { name: c.name, type: 'INT64', repetition_type };
    case 'number':
      return { name: c.name, type: 'DOUBLE', repetition_type };
    case 'boolean':
      return { name: c.name, type: 'BOOLEAN', repetition_type };
    case 'datetime':
      return { name: c.name, type: 'INT64', converted_type: 'TIMESTAMP_MILLIS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' }, repetition_type };
    case 'date':
      return { name: c.name, type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' }, repetition_type };
    case 'object':
    case 'array':
      return { name: c.name, type: 'BYTE_ARRAY', converted_type: 'JSON', logical_type: { type: 'JSON' }, repetition_type };
  }
}

/** A value as the Parquet writer takes it for a column type. */
function parquetValue(v: unknown, c: Column): unknown {
  if (v === null || v === undefined) return null;
  if (c.type === 'integer' && typeof v === 'number') return BigInt(v);
  if (c.type === 'datetime' && typeof v === 'string') return Date.parse(v);
  if (c.type === 'date' && typeof v === 'string') return Date.parse(`${v}T00:00:00Z`) / DAY_MS;
  if (c.type === 'integer' || c.type === 'datetime' || c.type === 'date') throw new Error(`bulk parquet: ${c.name} holds ${JSON.stringify(v)}, not a ${c.type}`);
  return v;
}

export class ParquetTableWriter implements TableWriter {
  private readonly file: HashedFile;
  private readonly sink: HashingWriter;
  private readonly writer: ParquetWriter;
  private data: unknown[][];
  private rows = 0;

  constructor(
    abs: string,
    private readonly columns: readonly Column[],
    private readonly rowGroupRows: number,
    createdBy: string,
  ) {
    this.file = new HashedFile(abs);
    this.sink = new HashingWriter(this.file);
    const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }, ...columns.map(parquetElement)];
    this.writer = new ParquetWriter({ writer: this.sink, schema, codec: 'SNAPPY', createdBy });
    this.data = columns.map(() => []);
  }

  add(_row: unknown, flat: readonly unknown[]): void {
    for (let i = 0; i < this.columns.length; i++) this.data[i]!.push(parquetValue(flat[i], this.columns[i]!));
    if (++this.rows === this.rowGroupRows) this.flushGroup();
  }

  private flushGroup(): void {
    if (this.rows === 0) return;
    // Synchronous: the sink defines no flush(), so write() returns no promise.
    // Min/max statistics let a reader skip row groups; those of JSON text skip nothing and cost time.
    void this.writer.write({ columnData: this.columns.map((c, i) => ({ name: c.name, data: this.data[i]!, statistics: c.type !== 'object' && c.type !== 'array' })), rowGroupSize: this.rows });
    this.data = this.columns.map(() => []);
    this.rows = 0;
  }

  close(): WrittenFile {
    this.flushGroup();
    void this.writer.finish();
    return this.file.close();
  }

  abort(): void {
    this.file.abort();
  }
}

/** SQLite column type of a Table Schema column (booleans 0/1, timestamps and JSON as text). */
function sqliteType(c: Column): string {
  return c.type === 'integer' || c.type === 'boolean' ? 'INTEGER' : c.type === 'number' ? 'REAL' : 'TEXT';
}

const quoteIdent = (s: string): string => `"${s.replace(/"/g, '""')}"`;

/** A table of the SQLite dump (rows inserted in the caller's transaction). */
export class SqliteTableWriter {
  private readonly insert: Database.Statement;
  constructor(
    db: Database.Database,
    name: string,
    private readonly columns: readonly Column[],
  ) {
    db.exec(`CREATE TABLE ${quoteIdent(name)} (${columns.map((c) => `${quoteIdent(c.name)} ${sqliteType(c)}${c.required ? ' NOT NULL' : ''}`).join(', ')})`);
    this.insert = db.prepare(`INSERT INTO ${quoteIdent(name)} VALUES (${columns.map(() => '?').join(', ')})`);
  }
  add(flat: readonly unknown[]): void {
    this.insert.run(
      this.columns.map((c, i) => {
        const v = flat[i];
        if (v === null || v === undefined) return null;
        if (c.type === 'boolean') return v === true ? 1 : 0;
        if (c.type === 'object' || c.type === 'array') return JSON.stringify(v);
        return v;
      }),
    );
  }
}
