// Every file of a directory tree, for tests that compare two snapshots byte for byte.
import fs from 'node:fs';
import path from 'node:path';

/** Every file under `dir` (relative path with '/' -> bytes). */
export function tree(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const abs = path.join(d, e.name);
      if (e.isDirectory()) walk(abs);
      else out.set(path.relative(dir, abs).split(path.sep).join('/'), fs.readFileSync(abs));
    }
  };
  walk(dir);
  return out;
}
