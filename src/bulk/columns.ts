// The columns of a bulk table, generated from its zod schema (docs/bulk.md, "Columns"): the schema's
// JSON Schema (zod's z.toJSONSchema, the same generator as openapi.json's components) mapped onto
// Frictionless Table Schema v2 field types.
//
// - NDJSON rows are the API's objects: one field per top-level key; a nested object is an `object`
//   field, a list an `array` field.
// - The flat forms (CSV, Parquet, the SQLite dump) flatten nested objects with fixed keys into one column
//   per leaf, named by the path joined with `_` (`phases_dns_p50`, `cert_not_after`); a leaf under a
//   null (or absent) object is null. Lists and free-form objects (payload, detail, timeline, ...) stay
//   one column holding their JSON text (Table Schema `array` / `object`, whose lexical form in CSV is
//   that JSON text).
import { z } from 'zod';

export type FieldType = 'string' | 'integer' | 'number' | 'boolean' | 'datetime' | 'date' | 'object' | 'array';

/** One column: a field of the Table Schema, and where its value is in an API object. */
export interface Column {
  name: string;
  /** Keys from the row object to the value. */
  path: readonly string[];
  type: FieldType;
  /** The value is never null (nor absent). */
  required: boolean;
  enum?: readonly string[];
  description?: string;
}

/** A Table Schema v2 field descriptor. */
export interface TableSchemaField {
  name: string;
  type: FieldType;
  format?: string;
  description?: string;
  constraints?: { required?: boolean; enum?: readonly string[] };
}

type JsonSchema = { [k: string]: unknown };

const isObj = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON Schema without its `null` alternative, and whether it had one. */
function stripNull(s: JsonSchema): { schema: JsonSchema; nullable: boolean } {
  const alts = s.anyOf ?? s.oneOf;
  if (Array.isArray(alts)) {
    const rest = alts.filter((a) => !(isObj(a) && a.type === 'null'));
    if (rest.length === 1 && isObj(rest[0])) {
      const inner = stripNull(rest[0]);
      const description = typeof s.description === 'string' ? s.description : inner.schema.description;
      return { schema: description === undefined ? inner.schema : { ...inner.schema, description }, nullable: rest.length < alts.length || inner.nullable };
    }
  }
  if (Array.isArray(s.type) && s.type.includes('null')) {
    const t = s.type.filter((x) => x !== 'null');
    return { schema: { ...s, type: t.length === 1 ? t[0] : t }, nullable: true };
  }
  return { schema: s, nullable: false };
}

/** An object with fixed keys (flattened), as opposed to a free-form record (one JSON column). */
function fixedObject(s: JsonSchema): Record<string, JsonSchema> | null {
  if (s.type !== 'object' || !isObj(s.properties) || Object.keys(s.properties).length === 0) return null;
  if (isObj(s.additionalProperties) || s.additionalProperties === true) return null;
  return s.properties as Record<string, JsonSchema>;
}

function scalarType(s: JsonSchema): FieldType {
  switch (s.type) {
    case 'string':
      return s.format === 'date-time' ? 'datetime' : s.format === 'date' ? 'date' : 'string';
    case 'integer':
      return 'integer';
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array':
      return 'array';
    case 'object':
      return 'object';
    default:
      throw new Error(`bulk columns: no Table Schema type for JSON Schema ${JSON.stringify(s).slice(0, 200)}`);
  }
}

function column(name: string, p: readonly string[], s: JsonSchema, required: boolean): Column {
  const type = scalarType(s);
  const c: Column = { name, path: p, type, required };
  if (Array.isArray(s.enum) && s.enum.every((v) => typeof v === 'string')) c.enum = s.enum;
  if (typeof s.description === 'string') c.description = s.description;
  return c;
}

/** The JSON Schema of an object schema's output. */
function objectSchema(schema: z.ZodType): JsonSchema {
  const js = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;
  if (fixedObject(js) === null) throw new Error('bulk columns: a table schema must be an object with fixed keys');
  return js;
}

/** The NDJSON fields: one per top-level key of the row object. */
export function rowColumns(schema: z.ZodType): Column[] {
  const js = objectSchema(schema);
  const required = new Set(Array.isArray(js.required) ? (js.required as string[]) : []);
  return Object.entries(fixedObject(js)!).map(([k, v]) => {
    const { schema: s, nullable } = stripNull(v);
    return column(k, [k], s, required.has(k) && !nullable);
  });
}

/** The flat columns: nested fixed objects flattened (see the file comment). */
export function flatColumns(schema: z.ZodType): Column[] {
  const out: Column[] = [];
  const walk = (props: Record<string, JsonSchema>, req: ReadonlySet<string>, prefix: readonly string[], parentRequired: boolean): void => {
    for (const [k, v] of Object.entries(props)) {
      const { schema: s, nullable } = stripNull(v);
      const required = parentRequired && req.has(k) && !nullable;
      const p = [...prefix, k];
      const inner = fixedObject(s);
      if (inner !== null) walk(inner, new Set(Array.isArray(s.required) ? (s.required as string[]) : []), p, required);
      else out.push(column(p.join('_'), p, s, required));
    }
  };
  const js = objectSchema(schema);
  walk(fixedObject(js)!, new Set(Array.isArray(js.required) ? (js.required as string[]) : []), [], true);
  return out;
}

/** Whether every flat column is a scalar (the table is written as CSV too). */
export function isFlat(columns: readonly Column[]): boolean {
  return columns.every((c) => c.type !== 'object' && c.type !== 'array');
}

/** The value of a column in a row object: null when a key on the way is absent or null. */
export function valueAt(row: unknown, p: readonly string[]): unknown {
  let v: unknown = row;
  for (const k of p) {
    if (v === null || v === undefined || typeof v !== 'object') return null;
    v = (v as Record<string, unknown>)[k];
  }
  return v === undefined ? null : v;
}

/** Table Schema v2 fields of columns. */
export function tableSchemaFields(columns: readonly Column[]): TableSchemaField[] {
  return columns.map((c) => {
    const f: TableSchemaField = { name: c.name, type: c.type };
    // Timestamps are RFC 3339 in UTC with milliseconds (the API's form), Table Schema's default format.
    if (c.description !== undefined) f.description = c.description;
    const constraints: TableSchemaField['constraints'] = {};
    if (c.required) constraints.required = true;
    if (c.enum !== undefined) constraints.enum = c.enum;
    if (Object.keys(constraints).length > 0) f.constraints = constraints;
    return f;
  });
}
