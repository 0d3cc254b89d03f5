// Files of the bulk downloads written streaming (docs/bulk.md): bytes go to a temporary name beside the
// target in chunks, the SHA-256 and size are computed on the way, and the caller hands the finished
// temporary file to the sink (DirectorySink.putFile), which renames it into place.
//
// GzipFile writes one gzip member whose deflate stream is made of independently compressed blocks,
// each ended by a sync flush (the way pigz cuts its input): a block of at most GZIP_BLOCK_BYTES is
// compressed when it is full, so memory stays bounded whatever the file's size, and the bytes depend
// only on the content (no name and mtime 0 in the header; the same zlib gives the same bytes).
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import zlib from 'node:zlib';
import { STORED_GZIP_LEVEL } from '../render/stored.js';

/** What a written file is: its temporary path, SHA-256 (hex) and size in bytes. */
export interface WrittenFile {
  tmp: string;
  sha256: string;
  bytes: number;
}

/** Uncompressed bytes compressed as one deflate block run (1 MiB: pigz uses 128 KiB; the loss is < 0.1%). */
export const GZIP_BLOCK_BYTES = 1 << 20;
/**
 * zlib level of the bulk files: the stored encoding's (4; src/render/stored.ts), measured there on this
 * data: level 6 is 4% smaller at 58% of the speed, which the day's largest files (gigabytes of JSON
 * at `peppol`) would pay in minutes.
 */
export const BULK_GZIP_LEVEL = STORED_GZIP_LEVEL;

/** The gzip header: no file name, mtime 0, OS unknown (RFC 1952 §2.3). */
const GZIP_HEADER = Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff]);

/** A file written through a temporary name, hashed as it is written. */
export class HashedFile {
  readonly tmp: string;
  private readonly fd: number;
  private readonly hash: Hash = createHash('sha256');
  private size = 0;

  constructor(readonly abs: string) {
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    this.tmp = `${abs}.tmp-${process.pid}-${threadId}`;
    this.fd = fs.openSync(this.tmp, 'w');
  }

  write(b: Uint8Array): void {
    if (b.length === 0) return;
    let off = 0;
    while (off < b.length) off += fs.writeSync(this.fd, b, off, b.length - off);
    this.hash.update(b);
    this.size += b.length;
  }

  /** Closes the file; the caller renames or removes `tmp`. */
  close(): WrittenFile {
    fs.closeSync(this.fd);
    return { tmp: this.tmp, sha256: this.hash.digest('hex'), bytes: this.size };
  }

  /** Closes and removes the temporary file (a failed write). */
  abort(): void {
    try {
      fs.closeSync(this.fd);
    } catch {
      // already closed
    }
    fs.rmSync(this.tmp, { force: true });
  }
}

/** A gzip file written in bounded memory (see the file comment). */
export class GzipFile {
  private readonly file: HashedFile;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private crc = 0;
  private size = 0;

  constructor(abs: string) {
    this.file = new HashedFile(abs);
    this.file.write(GZIP_HEADER);
  }

  get tmp(): string {
    return this.file.tmp;
  }

  /** Text written since the last block, joined once (a Buffer per line cost more than the deflate). */
  private text: string[] = [];
  private textLength = 0;

  write(b: Uint8Array | string): void {
    if (typeof b === 'string') {
      this.text.push(b);
      this.textLength += b.length;
      if (this.textLength >= GZIP_BLOCK_BYTES) this.flushBlock();
      return;
    }
    this.takeText();
    this.pending.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
    this.pendingBytes += b.length;
    if (this.pendingBytes >= GZIP_BLOCK_BYTES) this.flushBlock();
  }

  private takeText(): void {
    if (this.text.length === 0) return;
    const buf = Buffer.from(this.text.join(''), 'utf8');
    this.text = [];
    this.textLength = 0;
    this.pending.push(buf);
    this.pendingBytes += buf.length;
  }

  private flushBlock(): void {
    this.takeText();
    if (this.pendingBytes === 0) return;
    const input = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.crc = zlib.crc32(input, this.crc);
    this.size = (this.size + input.length) % 0x1_0000_0000;
    // A sync flush ends the block run on a byte boundary without a final block: runs concatenate.
    this.file.write(zlib.deflateRawSync(input, { level: BULK_GZIP_LEVEL, finishFlush: zlib.constants.Z_SYNC_FLUSH }));
  }

  close(): WrittenFile {
    this.flushBlock();
    // The final (empty) block, then CRC-32 and ISIZE, little-endian.
    this.file.write(zlib.deflateRawSync(Buffer.alloc(0)));
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(this.crc >>> 0, 0);
    trailer.writeUInt32LE(this.size >>> 0, 4);
    this.file.write(trailer);
    return this.file.close();
  }

  abort(): void {
    this.file.abort();
  }
}

/** Gzips a file into a GzipFile, reading it in blocks. */
export function gzipFileInto(src: string, out: GzipFile): void {
  const fd = fs.openSync(src, 'r');
  try {
    const buf = Buffer.alloc(GZIP_BLOCK_BYTES);
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      out.write(Buffer.from(buf.subarray(0, n)));
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** SHA-256 (hex) and size of a file, read in blocks (a bulk file may be larger than a Buffer). */
export function hashFile(abs: string): { sha256: string; bytes: number } {
  const fd = fs.openSync(abs, 'r');
  try {
    const h = createHash('sha256');
    const buf = Buffer.alloc(GZIP_BLOCK_BYTES);
    let bytes = 0;
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
      bytes += n;
    }
    return { sha256: h.digest('hex'), bytes };
  } finally {
    fs.closeSync(fd);
  }
}
