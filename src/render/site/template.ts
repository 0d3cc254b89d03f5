// The status page's templates (templates/status/, docs/status-page.md): HTML files with `{{name}}`
// (the value as escaped text) and `{{{name}}}` (a fragment of HTML the renderer built, its data escaped
// there). A name the renderer does not give, or a value it gives that the template does not use, is an
// error: a template and its renderer cannot drift apart unnoticed.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeHtml } from '../../api/problem-pages.js';

/** HTML built by the renderer (its data escaped already), as opposed to text to escape. */
export class Html {
  constructor(readonly html: string) {}
  toString(): string {
    return this.html;
  }
}

/** A fragment from a template literal: interpolated strings and numbers are escaped, Html and arrays of Html are not. */
export function html(parts: TemplateStringsArray, ...values: ReadonlyArray<string | number | Html | readonly Html[]>): Html {
  let out = parts[0]!;
  values.forEach((v, i) => {
    out += Array.isArray(v) ? v.map((x: Html) => x.html).join('') : v instanceof Html ? v.html : escapeHtml(String(v));
    out += parts[i + 1]!;
  });
  return new Html(out);
}

/** The templates folder: templates/status of the package (from src/render/site/ or from dist/). */
export function templatesDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    const t = path.join(dir, 'templates', 'status');
    if (fs.existsSync(t)) return t;
    dir = path.dirname(dir);
  }
  throw new Error(`templates/status not found above ${fileURLToPath(import.meta.url)}`);
}

const loaded = new Map<string, string>();

/** A template's text (read once per process). */
export function template(name: string): string {
  let t = loaded.get(name);
  if (t === undefined) {
    t = fs.readFileSync(path.join(templatesDir(), name), 'utf8');
    loaded.set(name, t);
  }
  return t;
}

/** The template filled with `values`: `{{name}}` escaped text, `{{{name}}}` Html. */
export function fill(name: string, values: Readonly<Record<string, string | number | Html>>): string {
  const used = new Set<string>();
  const out = template(name).replace(/\{\{(\{?)\s*([a-z_][a-z0-9_]*)\s*\}?\}\}/gi, (_m, raw: string, key: string) => {
    const v = values[key];
    if (v === undefined) throw new Error(`template ${name}: no value for ${key}`);
    used.add(key);
    if (raw === '{') {
      if (!(v instanceof Html)) throw new Error(`template ${name}: {{{${key}}}} needs HTML, got text`);
      return v.html;
    }
    if (v instanceof Html) throw new Error(`template ${name}: {{${key}}} is text, got HTML (use {{{${key}}}})`);
    return escapeHtml(String(v));
  });
  const unused = Object.keys(values).filter((k) => !used.has(k));
  if (unused.length > 0) throw new Error(`template ${name}: values not used: ${unused.join(', ')}`);
  return out;
}
