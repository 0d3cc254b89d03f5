// Small synthetic snapshots written by the real renderer parts (DirectorySink, ListWriter,
// writeManifest): lists with chunks, inner index nodes and roots, exact files and snapshot.json, so
// that publish tests can run many versions quickly.
import fs from 'node:fs';
import path from 'node:path';
import { ListWriter } from '../../src/render/lists.js';
import { writeManifest } from '../../src/render/manifest.js';
import { DirectorySink } from '../../src/render/sink.js';

export interface SyntheticVersion {
  /** List name -> its items (ascending numbers). */
  lists: Record<string, number[]>;
  /** Exact file name -> body text. */
  pages: Record<string, string>;
  generatedAt: string;
}

const enc = new TextEncoder();

/** Renders `v` into a fresh directory `dir` (removed first). */
export function renderSynthetic(dir: string, v: SyntheticVersion): void {
  fs.rmSync(dir, { recursive: true, force: true });
  const sink = new DirectorySink(dir);
  try {
    for (const [name, items] of Object.entries(v.lists)) {
      // 16 items a chunk: a list of more than 2,048 items gets inner index nodes.
      const w = new ListWriter(sink, { dirs: ['asc'], maxItems: 16, maxBytes: 65_536, minItems: 8 });
      for (const n of items) w.add({ n, name }, [n]);
      w.finish(`i/test.list/${name}.json`);
    }
    for (const [name, text] of Object.entries(v.pages)) sink.put(`v1/pages/${name}.json`, enc.encode(text), 'application/json', 'mutable');
    sink.put('snapshot.json', enc.encode(JSON.stringify({ generated_at: v.generatedAt, base_url: 'http://127.0.0.1:8787' })), 'application/json', 'meta');
    writeManifest(sink, v.generatedAt);
  } finally {
    sink.close();
  }
}

/** Every file under `dir`, relative, with `/` separators. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const abs = path.join(d, e.name);
      if (e.isDirectory()) walk(abs);
      else out.push(path.relative(dir, abs).split(path.sep).join('/'));
    }
  };
  if (fs.existsSync(dir)) walk(dir);
  return out.sort();
}
