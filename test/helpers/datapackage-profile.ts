// The rules of the Frictionless Data Package v2 and Table Schema v2 profiles a descriptor must meet,
// written from the standard (https://datapackage.org/standard/data-package/,
// .../data-resource/, .../table-schema/) as plain checks: no JSON Schema validator, no network.
// Returns one message per violation (empty: valid).

const TABLE_SCHEMA_TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'list', 'datetime', 'date', 'time', 'year', 'yearmonth', 'duration', 'geopoint', 'geojson', 'any']);
const CONSTRAINTS = new Set(['required', 'unique', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'jsonSchema', 'pattern', 'enum']);
/** Names SHOULD be lower-case alphanumerics with `.`, `-`, `_` (checked as MUST here). */
const NAME = /^[a-z0-9._-]+$/;
/** `algorithm:hex`, or an MD5 hex digest without a prefix. */
const HASH = /^([a-z0-9]+:[a-fA-F0-9]+|[a-fA-F0-9]{32})$/;
const MEDIATYPE = /^[a-z]+\/[a-z0-9.+-]+$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isUrl = (s: string): boolean => /^https?:\/\//.test(s);

/** A data path: a URL, or a relative POSIX path without `..` segments and not absolute. */
function pathProblem(p: unknown): string | null {
  if (typeof p !== 'string' || p === '') return 'is not a non-empty string';
  if (isUrl(p)) return null;
  if (p.startsWith('/') || p.includes('\\')) return 'is not a relative POSIX path';
  if (p.split('/').includes('..')) return 'contains a ".." segment';
  return null;
}

function licensesProblems(v: unknown, at: string, out: string[]): void {
  if (v === undefined) return;
  if (!Array.isArray(v)) return void out.push(`${at}: not an array`);
  v.forEach((l, i) => {
    if (!isObject(l)) return void out.push(`${at}[${i}]: not an object`);
    if (l.name === undefined && l.path === undefined) out.push(`${at}[${i}]: needs a name or a path`);
    if (l.name !== undefined && typeof l.name !== 'string') out.push(`${at}[${i}].name: not a string`);
    if (l.path !== undefined && pathProblem(l.path) !== null) out.push(`${at}[${i}].path ${pathProblem(l.path)}`);
    if (l.title !== undefined && typeof l.title !== 'string') out.push(`${at}[${i}].title: not a string`);
  });
}

function sourcesProblems(v: unknown, at: string, out: string[]): void {
  if (v === undefined) return;
  if (!Array.isArray(v)) return void out.push(`${at}: not an array`);
  v.forEach((s, i) => {
    if (!isObject(s)) return void out.push(`${at}[${i}]: not an object`);
    if (typeof s.title !== 'string' || s.title === '') out.push(`${at}[${i}].title: required`);
    if (s.path !== undefined && pathProblem(s.path) !== null) out.push(`${at}[${i}].path ${pathProblem(s.path)}`);
  });
}

/** Table Schema v2. */
export function tableSchemaProblems(schema: unknown, at = 'schema'): string[] {
  const out: string[] = [];
  if (!isObject(schema)) return [`${at}: not an object`];
  if (!Array.isArray(schema.fields) || schema.fields.length === 0) return [`${at}.fields: required, a non-empty array`];
  const names = new Set<string>();
  schema.fields.forEach((f, i) => {
    const fa = `${at}.fields[${i}]`;
    if (!isObject(f)) return void out.push(`${fa}: not an object`);
    if (typeof f.name !== 'string' || f.name === '') out.push(`${fa}.name: required`);
    else if (names.has(f.name)) out.push(`${fa}.name: ${f.name} is not unique`);
    else names.add(f.name);
    if (f.type !== undefined && (typeof f.type !== 'string' || !TABLE_SCHEMA_TYPES.has(f.type))) out.push(`${fa}.type: ${String(f.type)} is not a Table Schema type`);
    for (const k of ['format', 'title', 'description'] as const) if (f[k] !== undefined && typeof f[k] !== 'string') out.push(`${fa}.${k}: not a string`);
    if (f.constraints !== undefined) {
      if (!isObject(f.constraints)) out.push(`${fa}.constraints: not an object`);
      else
        for (const [k, v] of Object.entries(f.constraints)) {
          if (!CONSTRAINTS.has(k)) out.push(`${fa}.constraints.${k}: not a constraint`);
          if ((k === 'required' || k === 'unique') && typeof v !== 'boolean') out.push(`${fa}.constraints.${k}: not a boolean`);
          if (k === 'enum' && (!Array.isArray(v) || v.length === 0)) out.push(`${fa}.constraints.enum: not a non-empty array`);
        }
    }
  });
  if (schema.missingValues !== undefined && !(Array.isArray(schema.missingValues) && schema.missingValues.every((m) => typeof m === 'string'))) out.push(`${at}.missingValues: not an array of strings`);
  if (schema.primaryKey !== undefined) {
    const pk = Array.isArray(schema.primaryKey) ? schema.primaryKey : [schema.primaryKey];
    for (const k of pk) if (typeof k !== 'string' || !names.has(k)) out.push(`${at}.primaryKey: ${String(k)} is not a field`);
  }
  return out;
}

/** Data Resource v2. */
export function dataResourceProblems(r: unknown, at: string): string[] {
  const out: string[] = [];
  if (!isObject(r)) return [`${at}: not an object`];
  if (typeof r.name !== 'string' || !NAME.test(r.name)) out.push(`${at}.name: required, lower-case alphanumerics with . - _`);
  if ((r.path === undefined) === (r.data === undefined)) out.push(`${at}: exactly one of path and data`);
  if (r.path !== undefined) {
    const paths = Array.isArray(r.path) ? r.path : [r.path];
    for (const p of paths) if (pathProblem(p) !== null) out.push(`${at}.path ${pathProblem(p)}`);
  }
  if (r.type !== undefined && r.type !== 'table') out.push(`${at}.type: only "table" is defined`);
  for (const k of ['title', 'description', 'format', 'encoding'] as const) if (r[k] !== undefined && typeof r[k] !== 'string') out.push(`${at}.${k}: not a string`);
  if (r.mediatype !== undefined && (typeof r.mediatype !== 'string' || !MEDIATYPE.test(r.mediatype))) out.push(`${at}.mediatype: not a media type`);
  if (r.bytes !== undefined && !(Number.isInteger(r.bytes) && (r.bytes as number) >= 0)) out.push(`${at}.bytes: not a non-negative integer`);
  if (r.hash !== undefined && (typeof r.hash !== 'string' || !HASH.test(r.hash))) out.push(`${at}.hash: not algorithm:hex`);
  if (r.schema !== undefined && typeof r.schema !== 'string') out.push(...tableSchemaProblems(r.schema, `${at}.schema`));
  if (r.type === 'table' && r.schema === undefined) out.push(`${at}.schema: a table resource has a schema`);
  licensesProblems(r.licenses, `${at}.licenses`, out);
  sourcesProblems(r.sources, `${at}.sources`, out);
  return out;
}

/** Data Package v2. */
export function dataPackageProblems(pkg: unknown): string[] {
  const out: string[] = [];
  if (!isObject(pkg)) return ['descriptor: not an object'];
  if (pkg.$schema !== undefined && pkg.$schema !== 'https://datapackage.org/profiles/2.0/datapackage.json') out.push('$schema: not the Data Package v2 profile');
  if (pkg.name !== undefined && (typeof pkg.name !== 'string' || !NAME.test(pkg.name))) out.push('name: lower-case alphanumerics with . - _');
  for (const k of ['title', 'description', 'version'] as const) if (pkg[k] !== undefined && typeof pkg[k] !== 'string') out.push(`${k}: not a string`);
  if (pkg.homepage !== undefined && (typeof pkg.homepage !== 'string' || !isUrl(pkg.homepage))) out.push('homepage: not a URL');
  if (pkg.created !== undefined && (typeof pkg.created !== 'string' || Number.isNaN(Date.parse(pkg.created)))) out.push('created: not an RFC 3339 date-time');
  licensesProblems(pkg.licenses, 'licenses', out);
  sourcesProblems(pkg.sources, 'sources', out);
  if (!Array.isArray(pkg.resources) || pkg.resources.length === 0) return [...out, 'resources: required, a non-empty array'];
  const names = new Set<string>();
  pkg.resources.forEach((r, i) => {
    out.push(...dataResourceProblems(r, `resources[${i}]`));
    if (isObject(r) && typeof r.name === 'string') {
      if (names.has(r.name)) out.push(`resources[${i}].name: ${r.name} is not unique`);
      names.add(r.name);
    }
  });
  return out;
}
