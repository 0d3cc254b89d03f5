// A feed source over real HTTP on 127.0.0.1, serving a directory, with scripted failures.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';

export interface FeedServerOptions {
  /** Fail the first request for each file with this status (e.g. 503), then serve normally. */
  failFirstWith?: number;
  /** Answer every request with this status. */
  alwaysStatus?: number;
  /** Serve only the first `bytes` of this path, then keep the connection open without finishing. */
  stall?: { path: string; bytes: number };
  /** Answer each request only after this many milliseconds (requests then overlap). */
  delayMs?: number;
}

export interface FeedServer {
  url: string;
  /** Requests per path, in the order of their first request. */
  requests: Map<string, number>;
  /** The most requests that waited for their answer (status and headers) at once. */
  maxWaiting: number;
  options: FeedServerOptions;
  close(): Promise<void>;
}

export async function startFeedServer(dir: string, options: FeedServerOptions = {}): Promise<FeedServer> {
  const requests = new Map<string, number>();
  const open = new Set<ServerResponse>();
  let waiting = 0;
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, '');
    const n = (requests.get(path) ?? 0) + 1;
    requests.set(path, n);
    waiting++;
    server.maxWaiting = Math.max(server.maxWaiting, waiting);
    const delay = server.options.delayMs ?? 0;
    if (delay > 0) setTimeout(() => answer(path, n, res), delay);
    else answer(path, n, res);
  };
  const answer = (path: string, n: number, res: ServerResponse) => {
    waiting--;
    const o = server.options;
    if (o.alwaysStatus) return void res.writeHead(o.alwaysStatus).end('unavailable');
    if (o.failFirstWith && n === 1) return void res.writeHead(o.failFirstWith).end('try again');
    let body: Buffer;
    try {
      body = readFileSync(join(dir, normalize(path)));
    } catch {
      return void res.writeHead(404).end('not found');
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length });
    if (o.stall && o.stall.path === path) {
      open.add(res);
      res.write(body.subarray(0, o.stall.bytes));
      return; // never ends: the client sees a connection that stops mid-segment
    }
    res.end(body);
  };
  const http: Server = createServer(handler);
  await new Promise<void>((ok) => http.listen(0, '127.0.0.1', ok));
  const port = (http.address() as AddressInfo).port;
  const server: FeedServer = {
    url: `http://127.0.0.1:${port}/`,
    requests,
    maxWaiting: 0,
    options,
    close: () =>
      new Promise<void>((ok) => {
        for (const r of open) r.destroy();
        http.closeAllConnections();
        http.close(() => ok());
      }),
  };
  return server;
}
