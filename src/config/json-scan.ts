// A small JSON scanner used only to explain a config file that JSON.parse rejects: Node 20's
// JSON.parse messages carry no position, so this finds the line and column of the first syntax
// error. It also reports duplicate object keys, which JSON.parse accepts silently (last one wins).

export type JsonPath = (string | number)[];

export interface JsonLocation {
  offset: number;
  /** 1-based. */
  line: number;
  /** 1-based, in UTF-16 code units. */
  column: number;
}

export interface JsonScanResult {
  error?: JsonLocation & { message: string };
  duplicates: (JsonLocation & { path: JsonPath })[];
}

class ScanError extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

export function locate(text: string, offset: number): JsonLocation {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { offset, line, column: offset - lineStart + 1 };
}

export function scanJson(text: string): JsonScanResult {
  const duplicates: JsonScanResult['duplicates'] = [];
  let i = 0;

  const describe = (at: number): string =>
    at >= text.length ? 'unexpected end of input' : `unexpected ${JSON.stringify(text[at])}`;
  const fail = (at: number, expected: string): never => {
    throw new ScanError(at, `${describe(at)}, expected ${expected}`);
  };
  const ws = (): void => {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 9 || c === 10 || c === 13) i++;
      else break;
    }
  };

  const string = (): string => {
    i++; // opening quote
    let out = '';
    while (true) {
      if (i >= text.length) throw new ScanError(i, 'unterminated string');
      const ch = text[i]!;
      const c = ch.charCodeAt(0);
      if (ch === '"') {
        i++;
        return out;
      }
      if (c < 0x20) throw new ScanError(i, 'control character in string (line break inside a string?)');
      if (ch === '\\') {
        const e = text[i + 1];
        if (e === undefined) throw new ScanError(i + 1, 'unterminated string');
        if (e === 'u') {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new ScanError(i, 'invalid \\u escape in string');
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
          continue;
        }
        const map: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        const m = map[e];
        if (m === undefined) throw new ScanError(i, `invalid escape "\\${e}" in string`);
        out += m;
        i += 2;
        continue;
      }
      out += ch;
      i++;
    }
  };

  const number = (): void => {
    const re = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m || m[0] === '-' || m[0].length === 0) fail(i, 'a value');
    i += m![0].length;
    // "01", "1." and "1e" stop early; the caller then sees the stray character.
  };

  const literal = (word: string): void => {
    if (text.startsWith(word, i)) i += word.length;
    else fail(i, 'a value');
  };

  const value = (path: JsonPath): void => {
    ws();
    const ch = text[i];
    if (ch === '{') object(path);
    else if (ch === '[') array(path);
    else if (ch === '"') string();
    else if (ch === '-' || (ch !== undefined && ch >= '0' && ch <= '9')) number();
    else if (ch === 't') literal('true');
    else if (ch === 'f') literal('false');
    else if (ch === 'n') literal('null');
    else fail(i, 'a value');
  };

  const object = (path: JsonPath): void => {
    i++; // {
    const seen = new Set<string>();
    ws();
    if (text[i] === '}') {
      i++;
      return;
    }
    while (true) {
      ws();
      if (text[i] !== '"') {
        if (text[i] === '}' && seen.size > 0) throw new ScanError(i, 'trailing comma before "}"');
        fail(i, 'a key in double quotes');
      }
      const keyAt = i;
      const key = string();
      if (seen.has(key)) duplicates.push({ ...locate(text, keyAt), path: [...path, key] });
      seen.add(key);
      ws();
      if (text[i] !== ':') fail(i, '":"');
      i++;
      value([...path, key]);
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '}') {
        i++;
        return;
      }
      fail(i, '"," or "}"');
    }
  };

  const array = (path: JsonPath): void => {
    i++; // [
    ws();
    if (text[i] === ']') {
      i++;
      return;
    }
    let index = 0;
    while (true) {
      ws();
      if (text[i] === ']' && index > 0) throw new ScanError(i, 'trailing comma before "]"');
      value([...path, index]);
      index++;
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === ']') {
        i++;
        return;
      }
      fail(i, '"," or "]"');
    }
  };

  try {
    value([]);
    ws();
    if (i < text.length) fail(i, 'the end of the document');
    return { duplicates };
  } catch (e) {
    if (e instanceof ScanError) return { error: { ...locate(text, e.offset), message: e.message }, duplicates };
    throw e;
  }
}
