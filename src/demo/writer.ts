// Segment files: streamed to a temporary file next to the target, hashed as written, renamed into place
// when complete (a killed run never leaves a partial segment under its final name). Gzip output is
// deterministic: zlib writes no timestamp (mtime 0) and the deflate stream does not depend on how the
// input is chunked.
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

export const TMP_MARK = '.demo-tmp-';
const FLUSH_AT = 1 << 20;
/** Fast deflate: the NDJSON is very repetitive, so level 3 gets most of the ratio of level 6 at twice the speed. */
export const GZIP_LEVEL = 3;

export interface SegmentResult {
  path: string;
  sha256: string;
  bytes: number;
  lines: number;
}

export class SegmentSink {
  private parts: string[] = [];
  private size = 0;
  lines = 0;
  private fd: number | null = null;
  private readonly hash: Hash = createHash('sha256');
  private bytes = 0;
  private gz: zlib.Gzip | null = null;
  private readonly tmp: string;

  constructor(
    private readonly root: string,
    readonly relPath: string,
    private readonly gzip: boolean,
  ) {
    this.tmp = path.join(root, `${relPath}${TMP_MARK}${process.pid}`);
  }

  /** Buffers one line; returns true when the caller should `await flush()`. */
  write(line: string): boolean {
    this.parts.push(line, '\n');
    this.size += line.length + 1;
    this.lines++;
    return this.size >= FLUSH_AT;
  }

  private open(): void {
    if (this.fd !== null) return;
    fs.mkdirSync(path.dirname(this.tmp), { recursive: true });
    this.fd = fs.openSync(this.tmp, 'w');
    if (this.gzip) {
      this.gz = zlib.createGzip({ level: GZIP_LEVEL, writableHighWaterMark: 4 << 20 } as zlib.ZlibOptions);
      this.gz.on('data', (chunk: Buffer) => this.sink(chunk));
    }
  }

  private sink(buf: Buffer): void {
    this.hash.update(buf);
    this.bytes += buf.length;
    let off = 0;
    while (off < buf.length) off += fs.writeSync(this.fd!, buf, off);
  }

  async flush(): Promise<void> {
    if (this.parts.length === 0) return;
    this.open();
    // Encode the parts straight into one buffer (UTF-8 needs at most 3 bytes per UTF-16 unit).
    const buf = Buffer.allocUnsafe(this.size * 3);
    let n = 0;
    for (const part of this.parts) n += buf.write(part, n, 'utf8');
    this.parts = [];
    this.size = 0;
    const out = buf.subarray(0, n);
    if (this.gz) {
      if (!this.gz.write(out)) await new Promise<void>((resolve) => this.gz!.once('drain', resolve));
    } else this.sink(out);
  }

  /** Finishes the file and renames it into place; null when no line was written (no file). */
  async close(): Promise<SegmentResult | null> {
    if (this.lines === 0) return null;
    await this.flush();
    if (this.gz) {
      const gz = this.gz;
      await new Promise<void>((resolve, reject) => {
        gz.once('end', resolve);
        gz.once('error', reject);
        gz.end();
      });
    }
    fs.closeSync(this.fd!);
    this.fd = null;
    fs.renameSync(this.tmp, path.join(this.root, this.relPath));
    return { path: this.relPath, sha256: this.hash.digest('hex'), bytes: this.bytes, lines: this.lines };
  }

  abort(): void {
    if (this.fd !== null) {
      fs.closeSync(this.fd);
      this.fd = null;
    }
    this.gz?.destroy();
    fs.rmSync(this.tmp, { force: true });
  }
}

/** Writes a whole file atomically (temporary file + rename). */
export function writeFileAtomic(file: string, content: string | Buffer): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}${TMP_MARK}${process.pid}`;
  fs.writeFileSync(tmp, content);
  fs.renameSync(tmp, file);
}

/** Streams a large text file atomically, piece by piece. */
export class TextFileWriter {
  private readonly tmp: string;
  private fd: number;
  private parts: string[] = [];
  private size = 0;
  constructor(private readonly file: string) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.tmp = `${file}${TMP_MARK}${process.pid}`;
    this.fd = fs.openSync(this.tmp, 'w');
  }
  write(s: string): void {
    this.parts.push(s);
    this.size += s.length;
    if (this.size >= FLUSH_AT) this.flush();
  }
  private flush(): void {
    if (this.parts.length === 0) return;
    fs.writeSync(this.fd, this.parts.join(''));
    this.parts = [];
    this.size = 0;
  }
  close(): void {
    this.flush();
    fs.closeSync(this.fd);
    fs.renameSync(this.tmp, this.file);
  }
}

/** Removes temporary files left by killed runs (anything carrying TMP_MARK under `dir`). */
export function removeStaleTemps(dir: string): void {
  if (!fs.existsSync(dir)) return;
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.includes(TMP_MARK)) fs.rmSync(p, { force: true });
    }
  };
  walk(dir);
}
