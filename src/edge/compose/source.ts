// One request's access to the snapshot, for every composer (as the PMTiles Worker reaches everything
// through one `Source`). Edge-safe. It reads each path once, decodes what is stored gzip-encoded
// (docs/snapshot-format.md "Stored encoding"), counts every file and byte it reads
// (the cost budget of an answer: docs/snapshot-format.md), opens lists and adds their chunk reads when
// the answer is done. Composers read nothing any other way and import no other family's composer.
import { exactFilePath, listRootPath } from '../../api/paths.js';
import { ListReader, SnapshotFormatError, type ReadFile, type ReadStats } from '../list-reader.js';
import { inflateStream, isGzip, type Inflate } from '../stored.js';

const dec = new TextDecoder();

export class Source {
  private readonly cache = new Map<string, Promise<Uint8Array | null>>();
  private readonly lists = new Map<string, Promise<ListReader | null>>();

  /**
   * `nowMs`: the snapshot's clock (manifest.generated_at in ms). `stats` receives the files and bytes
   * read as they are read, and the chunks of the lists opened at `finish`. `inflate` decodes a file
   * stored gzip-encoded (src/edge/stored.ts).
   */
  constructor(
    private readonly file: ReadFile,
    readonly nowMs: number,
    readonly stats: ReadStats = { files: 0, bytes: 0, decoded: 0, chunks: 0 },
    private readonly inflate: Inflate = inflateStream,
  ) {}

  /** A file's content (decoded; null when absent), read once per request. */
  readonly read: ReadFile = (path) => {
    let p = this.cache.get(path);
    if (p === undefined) {
      p = this.file(path).then(async (b) => {
        if (b === null) return null;
        this.stats.files++;
        this.stats.bytes += b.length;
        const content = isGzip(b) ? await this.inflate(b) : b;
        this.stats.decoded += content.length;
        return content;
      });
      this.cache.set(path, p);
    }
    return p;
  };

  /** A file parsed as JSON; null when absent. The caller names the type it expects of the file. */
  async json<T>(path: string): Promise<T | null> {
    const b = await this.read(path);
    // The snapshot's files are written by the renderer from the same types (src/render).
    return b === null ? null : (JSON.parse(dec.decode(b)) as T);
  }

  /** The exact file of a canonical URL path's segments (src/api/paths.ts); null when absent. */
  exact<T = unknown>(segments: readonly string[]): Promise<T | null> {
    return this.json<T>(exactFilePath(segments));
  }

  /** An exact file the renderer always writes: its absence is a broken snapshot. */
  async requireExact<T = unknown>(segments: readonly string[]): Promise<T> {
    const body = await this.exact<T>(segments);
    if (body === null) throw new SnapshotFormatError(`missing snapshot file ${exactFilePath(segments)}`);
    return body;
  }

  /**
   * A stored list of a route (its root by partition), or null when the snapshot has no such list. A
   * list opened twice is the same reader, so its recently read chunks are not read again.
   */
  list(routeId: string, partition: readonly string[]): Promise<ListReader | null> {
    const root = listRootPath(routeId, partition);
    let r = this.lists.get(root);
    if (r === undefined) this.lists.set(root, (r = ListReader.open(this.read, root)));
    return r;
  }

  /** Adds the chunk reads of every list opened to `stats` (files and bytes are counted as read). */
  async finish(): Promise<ReadStats> {
    // A list that failed to open read no chunk (its error reaches the composer).
    for (const r of await Promise.allSettled(this.lists.values())) if (r.status === 'fulfilled' && r.value !== null) this.stats.chunks += r.value.stats.chunks;
    this.lists.clear();
    return this.stats;
  }
}
