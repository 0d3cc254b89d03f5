// The API description for people (docs/status-page.md): `api.html`, generated at every build from the
// OpenAPI document `build` writes (the same object), so the page and openapi.json never disagree:
// every path with its summary, description, parameters and answers, then the response schemas.
import type { Json } from '../../api/openapi.js';
import { fill, html, Html } from './template.js';

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The anchor of a path's section, e.g. `op-v1-hosts-hostname`. */
function anchor(path: string): string {
  return `op${path.replace(/[^A-Za-z0-9]+/g, '-').replace(/-$/, '')}`;
}

/** A schema in a few words: `$ref` as a link to its section, types, enumerations, formats. */
function schemaText(s: unknown): Html {
  if (!isObj(s)) return html`any`;
  const ref = str(s.$ref);
  if (ref.startsWith('#/components/schemas/')) {
    const name = ref.slice('#/components/schemas/'.length);
    return html`<a href="#schema-${name}">${name}</a>`;
  }
  if (Array.isArray(s.enum)) return html`one of ${s.enum.map((v) => JSON.stringify(v)).join(', ')}`;
  if ('const' in s) return html`${JSON.stringify(s.const)}`;
  for (const k of ['anyOf', 'oneOf'] as const) {
    const alts = s[k];
    if (Array.isArray(alts)) return html`${alts.map((a, i) => html`${i > 0 ? ' or ' : ''}${schemaText(a)}`)}`;
  }
  const type = Array.isArray(s.type) ? s.type.join(' or ') : str(s.type) || 'any';
  if (type === 'array') return html`array of ${schemaText(s.items)}`;
  const extra = [str(s.format), s.pattern !== undefined ? `pattern ${str(s.pattern)}` : ''].filter((x) => x !== '').join(', ');
  return html`${type}${extra ? ` (${extra})` : ''}`;
}

function parameters(op: Json): Html {
  const ps = Array.isArray(op.parameters) ? op.parameters.filter(isObj) : [];
  if (ps.length === 0) return html`<p>No parameters.</p>`;
  const rows = ps.map((p) => {
    const sch = isObj(p.schema) ? p.schema : {};
    const dflt = sch.default !== undefined ? html` Default ${JSON.stringify(sch.default)}.` : html``;
    return html`<tr><th scope="row"><code>${str(p.name)}</code></th><td>${str(p.in)}${p.required === true ? ', required' : ''}</td><td>${schemaText(sch)}</td><td>${str(p.description)}${dflt}</td></tr>\n`;
  });
  return html`<div class="table"><table><caption>Parameters</caption><thead><tr><th scope="col">Name</th><th scope="col">In</th><th scope="col">Type</th><th scope="col">Meaning</th></tr></thead><tbody>
${rows}</tbody></table></div>`;
}

function responses(op: Json): Html {
  const rs = isObj(op.responses) ? Object.entries(op.responses) : [];
  const rows = rs.map(([status, r]) => {
    const o = isObj(r) ? r : {};
    const content = isObj(o.content) ? Object.entries(o.content) : [];
    const bodies = content.map(([type, c], i) => html`${i > 0 ? '; ' : ''}<code>${type}</code> ${isObj(c) ? schemaText(c.schema) : html``}`);
    return html`<tr><th scope="row">${status}</th><td>${str(o.description)}</td><td>${bodies}</td></tr>\n`;
  });
  return html`<div class="table"><table><caption>Answers</caption><thead><tr><th scope="col">Status</th><th scope="col">When</th><th scope="col">Body</th></tr></thead><tbody>
${rows}</tbody></table></div>`;
}

function schemaSection(name: string, s: unknown): Html {
  const o = isObj(s) ? s : {};
  const props = isObj(o.properties) ? Object.entries(o.properties) : [];
  const required = new Set(Array.isArray(o.required) ? o.required.map(String) : []);
  const body =
    props.length === 0
      ? html`<p>${schemaText(o)}</p>`
      : html`<div class="table"><table><caption>Fields of ${name}</caption><thead><tr><th scope="col">Field</th><th scope="col">Type</th><th scope="col">Notes</th></tr></thead><tbody>
${props.map(([k, v]) => html`<tr><th scope="row"><code>${k}</code></th><td>${schemaText(v)}</td><td>${required.has(k) ? 'required' : 'optional'}${isObj(v) && str(v.description) ? `; ${str(v.description)}` : ''}</td></tr>\n`)}</tbody></table></div>`;
  return html`<section class="op"><h3 id="schema-${name}">${name}</h3>${str(o.description) ? html`<p>${str(o.description)}</p>` : html``}${body}</section>\n`;
}

/** The `main` of api.html for an OpenAPI document (src/api/openapi.ts). */
export function apiPageMain(doc: Json): Html {
  const info = isObj(doc.info) ? doc.info : {};
  const paths = isObj(doc.paths) ? Object.entries(doc.paths) : [];
  const ops = paths.map(([path, item]) => [path, isObj(item) && isObj(item.get) ? item.get : {}] as const);
  const toc = html`<ul>${ops.map(([path, op]) => html`<li><a href="#${anchor(path)}"><code>GET ${path}</code></a>: ${str(op.summary)}</li>\n`)}</ul>`;
  const sections = ops.map(
    ([path, op]) =>
      html`<section class="op" aria-labelledby="${anchor(path)}"><h2 id="${anchor(path)}"><code>GET ${path}</code></h2>
<p><strong>${str(op.summary)}.</strong> ${str(op.description)}</p>
${parameters(op)}${responses(op)}</section>\n`,
  );
  const components = isObj(doc.components) && isObj(doc.components.schemas) ? Object.entries(doc.components.schemas) : [];
  return new Html(
    fill('api.html', {
      title: str(info.title) || 'API',
      description: str(info.description),
      version: str(doc.openapi),
      toc,
      operations: html`${sections}`,
      schemas: html`${components.map(([name, s]) => schemaSection(name, s))}`,
    }),
  );
}
