// The directory target: a local directory that `serve` (or nginx in front of it) serves. Objects are
// files; each is written under a temporary name in `.publish/tmp/` and renamed into place, so a reader
// never sees part of a file and a crashed run leaves no half-written object (its temporary files are
// removed by the next run).
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ObjectMeta, PublishTarget, PutBody, TargetStats } from './target.js';

const TMP_DIR = '.publish/tmp';

export class DirectoryTarget implements PublishTarget {
  readonly stats: TargetStats = { retries: 0, requests: 0 };
  private readonly tmp: string;
  private seq = 0;

  constructor(readonly root: string) {
    this.tmp = path.join(root, TMP_DIR);
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }

  get name(): string {
    return this.root;
  }

  private abs(key: string): string {
    const abs = path.resolve(this.root, key);
    if (!abs.startsWith(this.root + path.sep)) throw new Error(`object key ${JSON.stringify(key)} leaves the target directory`);
    return abs;
  }

  async get(key: string): Promise<Uint8Array | null> {
    this.stats.requests++;
    try {
      return new Uint8Array(await fs.promises.readFile(this.abs(key)));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  /** Writes `key` whole: `write` fills a temporary file, which is then renamed into place. */
  private async place(key: string, write: (tmp: string) => Promise<void>): Promise<void> {
    this.stats.requests++;
    const abs = this.abs(key);
    await fs.promises.mkdir(this.tmp, { recursive: true });
    const tmp = path.join(this.tmp, `${process.pid}-${this.seq++}`);
    await write(tmp);
    await fs.promises.mkdir(path.dirname(abs), { recursive: true });
    await fs.promises.rename(tmp, abs);
  }

  async put(key: string, body: PutBody, _meta: ObjectMeta): Promise<void> {
    await this.place(key, (tmp) => ('bytes' in body ? fs.promises.writeFile(tmp, body.bytes) : pipeline(fs.createReadStream(body.file), fs.createWriteStream(tmp))));
  }

  async copy(from: string, key: string, _meta: ObjectMeta): Promise<boolean> {
    const source = this.abs(from);
    await this.place(key, (tmp) => fs.promises.copyFile(source, tmp));
    return true;
  }

  async delete(keys: readonly string[]): Promise<void> {
    const dirs = new Set<string>();
    for (const key of keys) {
      this.stats.requests++;
      const abs = this.abs(key);
      await fs.promises.rm(abs, { force: true });
      dirs.add(path.dirname(abs));
    }
    // Directories left empty go too (deepest first), up to the root.
    for (const start of [...dirs].sort((a, b) => b.length - a.length)) {
      for (let d = start; d !== this.root && d.startsWith(this.root + path.sep); d = path.dirname(d)) {
        try {
          await fs.promises.rmdir(d);
        } catch {
          break; // not empty (or gone): its parents are not empty either
        }
      }
    }
  }

  async close(): Promise<void> {
    await fs.promises.rm(this.tmp, { recursive: true, force: true });
  }
}
