// Reads JSON with comments and trailing commas (wrangler.jsonc), the way wrangler does.

/** Parses JSONC: `//` and `/* *\/` comments outside strings, and trailing commas, are dropped. */
export function parseJsonc(text: string): unknown {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const str = /^"(?:[^"\\]|\\.)*"/.exec(text.slice(i));
      if (!str) throw new Error(`unterminated string at offset ${i}`);
      out += str[0];
      i += str[0].length - 1;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i + 1 < text.length && text[i + 1] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) throw new Error(`unterminated comment at offset ${i}`);
      i = end + 1;
    } else if (c === ',' && /^\s*[}\]]/.test(stripComments(text.slice(i + 1, i + 4096)))) {
      // a trailing comma: dropped
    } else out += c;
  }
  return JSON.parse(out) as unknown;
}

/** The start of `s` with its leading comments and whitespace removed (to look past a comma). */
function stripComments(s: string): string {
  let rest = s;
  for (;;) {
    const t = rest.replace(/^\s+/, '');
    if (t.startsWith('//')) rest = t.slice(t.indexOf('\n') < 0 ? t.length : t.indexOf('\n'));
    else if (t.startsWith('/*')) rest = t.slice(t.indexOf('*/') < 0 ? t.length : t.indexOf('*/') + 2);
    else return t;
  }
}
