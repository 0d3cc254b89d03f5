// The edge shim as an AWS Lambda function behind a Lambda function URL (payload format 2.0), reading
// the published snapshot from S3: the deployment "S3 + CloudFront, with the shim", CloudFront using the
// function URL as its origin (docs/edge.md, "AWS Lambda"; templates/aws/). Bundled to dist/lambda.mjs
// by `npm run build:lambda` (scripts/build.mjs); Lambda's handler setting is `lambda.handler`.
//
// Environment variables (read once per instance):
//   SNAPSHOT_BUCKET            the bucket publish writes to (publish.target.bucket; required)
//   SNAPSHOT_PREFIX            the key prefix of the snapshot (publish.target.prefix), default ""
//   SNAPSHOT_REGION            the bucket's region, default AWS_REGION (set by Lambda: the function's)
//   SNAPSHOT_ENDPOINT          optional endpoint of an S3-compatible store (MinIO, R2, s3rver in the tests)
//   SNAPSHOT_FORCE_PATH_STYLE  "true" addresses the bucket in the path (most self-hosted stores)
//   API_KEYS                   key hashes: JSON lines or a JSON array, format in src/edge/api-keys.ts
//   HEALTH_MAX_AGE_SECONDS     /health/db reports db=false when manifest.json is older (default 7200)
//   CLIENT_ADDRESS             "source-ip" (default: the function URL's requestContext.http.sourceIp) or
//                              "cloudfront-viewer-address" (the CloudFront-Viewer-Address header; only
//                              when the function URL answers CloudFront alone: AuthType AWS_IAM + OAC)
// S3 credentials come from the function's execution role (the SDK's default chain).
//
// The edge policy is the `edge` member of the served snapshot.json, exactly as in the Cloudflare Worker
// (src/edge/snapshot-policy.ts, shared). Rate limits are the in-process counters of each Lambda
// instance; a hard limit across instances belongs to AWS WAF rate-based rules in front of CloudFront.
import { GetObjectCommand, HeadObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { createSnapshotEdge, misconfigured, type EdgeLog, type SnapshotEdge } from '../edge/snapshot-policy.js';
import type { FileReader, FileStat } from '../edge/types.js';
import { inflateSync } from './inflate.js';

/** Timeouts of one S3 request (ms); the SDK retries a failed read (3 attempts in all). */
export const S3_CONNECTION_TIMEOUT_MS = 3_000;
export const S3_REQUEST_TIMEOUT_MS = 5_000;

/** The parts of a Lambda function URL request event (payload format 2.0) the adapter reads. */
export interface FunctionUrlEvent {
  version?: string;
  /** The path as the client sent it, still percent-encoded. */
  rawPath: string;
  /** The query string as sent, without "?" ("" when there is none). */
  rawQueryString?: string;
  /** Header names in lower case; a header sent more than once arrives as one comma-separated value. */
  headers?: Record<string, string | undefined>;
  /** The Cookie header's cookies (function URLs take them out of `headers`). */
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: {
    domainName?: string;
    http: { method: string; sourceIp?: string };
  };
}

/** A function URL response (payload format 2.0). */
export interface FunctionUrlResult {
  statusCode: number;
  /** One value per header; several values of one header are joined with ", " (Set-Cookie goes to `cookies`). */
  headers: Record<string, string>;
  cookies?: string[];
  /** UTF-8 text, or base64 when `isBase64Encoded` (bodies that are not valid UTF-8). */
  body: string;
  isBase64Encoded: boolean;
}

export type FunctionUrlHandler = (event: FunctionUrlEvent) => Promise<FunctionUrlResult>;

type ClientAddress = 'source-ip' | 'cloudfront-viewer-address';

interface Settings {
  bucket: string;
  prefix: string;
  region: string;
  endpoint?: string;
  forcePathStyle: boolean;
  clientAddress: ClientAddress;
}

/** The environment's settings; every problem at once (a misconfigured function answers 500 and logs them). */
export function lambdaSettings(env: Readonly<Record<string, string | undefined>>): Settings {
  const problems: string[] = [];
  const bucket = env.SNAPSHOT_BUCKET ?? '';
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) problems.push('SNAPSHOT_BUCKET: expected the bucket name publish writes to (publish.target.bucket)');
  const prefix = env.SNAPSHOT_PREFIX ?? '';
  if (prefix.startsWith('/')) problems.push('SNAPSHOT_PREFIX: expected a key prefix not starting with "/" (publish.target.prefix)');
  const region = env.SNAPSHOT_REGION || env.AWS_REGION || 'us-east-1';
  const endpoint = env.SNAPSHOT_ENDPOINT || undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^\s/]+/.test(endpoint)) problems.push('SNAPSHOT_ENDPOINT: expected an http(s) URL');
  const pathStyle = env.SNAPSHOT_FORCE_PATH_STYLE ?? 'false';
  if (pathStyle !== 'true' && pathStyle !== 'false') problems.push('SNAPSHOT_FORCE_PATH_STYLE: expected "true" or "false"');
  const clientAddress = env.CLIENT_ADDRESS ?? 'source-ip';
  if (clientAddress !== 'source-ip' && clientAddress !== 'cloudfront-viewer-address') problems.push('CLIENT_ADDRESS: expected "source-ip" or "cloudfront-viewer-address"');
  if (problems.length > 0) throw Object.assign(new Error(problems.join('; ')), { problems });
  return {
    bucket,
    prefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`,
    region,
    ...(endpoint !== undefined ? { endpoint } : {}),
    forcePathStyle: pathStyle === 'true',
    clientAddress: clientAddress as ClientAddress, // one of the two, checked just above
  };
}

interface SdkErrorShape {
  name?: unknown;
  $metadata?: { httpStatusCode?: number };
}
// The SDK's errors carry a name and the HTTP status; anything else thrown has neither.
const statusOf = (e: unknown): number | undefined => (e as SdkErrorShape | null)?.$metadata?.httpStatusCode; // optional chaining reads any value safely
const nameOf = (e: unknown): unknown => (e as SdkErrorShape | null)?.name; // likewise

/**
 * A FileReader over the objects under `prefix` of an S3 bucket: GetObject, with a Range for
 * readPrefix. A missing key is null. S3 answers 404 for a missing key only to a role that may list
 * the bucket, and 403 AccessDenied to others, which is an error here (500, or 503 for snapshot.json):
 * templates/aws/lambda-policy.json grants s3:ListBucket for this reason.
 */
export function s3Reader(client: S3Client, bucket: string, prefix: string): FileReader {
  async function get(path: string, range?: string): Promise<Uint8Array | null> {
    try {
      const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: prefix + path, ...(range !== undefined ? { Range: range } : {}) }));
      return res.Body ? await res.Body.transformToByteArray() : new Uint8Array(0);
    } catch (e) {
      if (nameOf(e) === 'NoSuchKey' || nameOf(e) === 'NotFound' || statusOf(e) === 404) return null;
      // A range starting past the end: the object is there, and empty.
      if (range !== undefined && (nameOf(e) === 'InvalidRange' || statusOf(e) === 416)) return new Uint8Array(0);
      throw e;
    }
  }
  const missing = (e: unknown): boolean => nameOf(e) === 'NoSuchKey' || nameOf(e) === 'NotFound' || statusOf(e) === 404;
  return {
    read: (path) => get(path),
    readPrefix: (path, length) => get(path, `bytes=0-${Math.max(0, length - 1)}`),
    async stat(path: string): Promise<FileStat | null> {
      try {
        const res = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: prefix + path }));
        return res.ContentLength !== undefined && res.ETag !== undefined ? { size: res.ContentLength, etag: res.ETag } : null;
      } catch (e) {
        if (missing(e)) return null;
        throw e;
      }
    },
    async readRange(path: string, start: number, length: number, etag: string): Promise<ReadableStream<Uint8Array> | null> {
      try {
        const res = await client.send(new GetObjectCommand({ Bucket: bucket, Key: prefix + path, Range: `bytes=${start}-${start + length - 1}`, IfMatch: etag }));
        // Never other bytes under the headers of the range (a store that ignores part of the Range).
        if (res.ContentLength !== length) {
          await res.Body?.transformToWebStream().cancel();
          throw new Error(`${path}: asked for ${length} bytes from ${start}, the store answered ${res.ContentLength ?? 'an unknown number of'} bytes`);
        }
        return res.Body ? res.Body.transformToWebStream() : null;
      } catch (e) {
        // 412: rewritten since stat.
        if (missing(e) || statusOf(e) === 412 || nameOf(e) === 'PreconditionFailed') return null;
        throw e;
      }
    },
  };
}

export function s3Client(s: Settings): S3Client {
  const config: S3ClientConfig = {
    region: s.region,
    forcePathStyle: s.forcePathStyle,
    maxAttempts: 3,
    requestHandler: { connectionTimeout: S3_CONNECTION_TIMEOUT_MS, requestTimeout: S3_REQUEST_TIMEOUT_MS },
  };
  if (s.endpoint !== undefined) config.endpoint = s.endpoint;
  return new S3Client(config);
}

/** The client address: the function URL's source IP, or CloudFront's viewer address (its port dropped). */
export function clientAddressOf(event: FunctionUrlEvent, mode: ClientAddress): string {
  if (mode === 'cloudfront-viewer-address') {
    // "198.51.100.10:46532" or "2001:db8::1:46532": the address, a colon and the port.
    const m = /^\s*(\S+):\d{1,5}\s*$/.exec(event.headers?.['cloudfront-viewer-address'] ?? '');
    if (m) return m[1]!;
  }
  return event.requestContext.http.sourceIp ?? 'unknown';
}

/** The raw request target: the path and the query exactly as the client sent them. */
export function rawTargetOf(event: FunctionUrlEvent): string {
  const path = event.rawPath.startsWith('/') ? event.rawPath : `/${event.rawPath}`;
  return event.rawQueryString ? `${path}?${event.rawQueryString}` : path;
}

/** A Web Request for the event; the API takes no request bodies (as in serve, a body is ignored). */
export function requestOf(event: FunctionUrlEvent): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers.append(name, value);
  if (event.cookies && event.cookies.length > 0) headers.set('cookie', event.cookies.join('; '));
  const url = `https://${event.requestContext.domainName ?? 'lambda-url.invalid'}${rawTargetOf(event)}`;
  const method = event.requestContext.http.method.toUpperCase();
  try {
    return new Request(url, { method, headers });
  } catch {
    // Web Requests refuse CONNECT/TRACE/TRACK: built as GET and given their real method back, so the
    // shim answers them (405) like any other.
    const request = new Request(url, { method: 'GET', headers });
    Object.defineProperty(request, 'method', { value: method });
    return request;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Largest body the adapter returns: a function URL (BUFFERED) answers at most 6 MB, and a binary body
 * goes base64-encoded (4/3 of its bytes). A larger one (a whole bulk file: route /bulk/* to S3 in
 * CloudFront, docs/edge.md "Site files") is never read into memory.
 */
export const FUNCTION_URL_MAX_BODY = 4 * 1024 * 1024;

/** A problem answered by the adapter itself (the handler never saw the request or its answer). */
function adapterProblem(status: number, title: string, detail: string): FunctionUrlResult {
  const body = JSON.stringify({ type: 'about:blank', title, status, detail });
  return {
    statusCode: status,
    headers: { 'content-type': 'application/problem+json', 'access-control-allow-origin': '*', 'cache-control': 'no-store', 'content-length': String(Buffer.byteLength(body)) },
    body,
    isBase64Encoded: false,
  };
}

/** The answer to a body too large for a function URL: 500, the reason in the log. */
function tooLarge(bytes: number, log: EdgeLog | undefined): FunctionUrlResult {
  (log ?? console).error(`peppol-snapshot edge: an answer of ${bytes} bytes is over what a function URL returns (${FUNCTION_URL_MAX_BODY}); serve /bulk/* from S3 (docs/edge.md "Site files")`);
  return adapterProblem(500, 'Internal Server Error', 'The answer is too large for this server; ask for a byte range of at most 4 MiB (Range: bytes=a-b).');
}

/** The function URL response of a Web Response: text when the body is UTF-8, else base64; HEAD without a body. */
export async function resultOf(response: Response, method: string, log?: EdgeLog): Promise<FunctionUrlResult> {
  const length = Number(response.headers.get('content-length') ?? 0);
  if (method !== 'HEAD' && length > FUNCTION_URL_MAX_BODY) {
    await response.body?.cancel();
    return tooLarge(length, log);
  }
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== 'set-cookie') headers[name] = value; // Headers joins repeated values with ", "
  });
  const cookies = response.headers.getSetCookie();
  const bytes = method === 'HEAD' || response.body === null ? new Uint8Array(0) : new Uint8Array(await response.arrayBuffer());
  let body: string;
  let isBase64Encoded = false;
  try {
    body = utf8.decode(bytes);
  } catch {
    body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
    isBase64Encoded = true;
  }
  return { statusCode: response.status, headers, ...(cookies.length > 0 ? { cookies } : {}), body, isBase64Encoded };
}

/** What an unreadable request (a header the Web API refuses) gets: 400, as serve answers it. */
function unreadable(): FunctionUrlResult {
  return adapterProblem(400, 'Bad Request', 'The request could not be read.');
}

export interface LambdaHandlerOptions {
  log?: EdgeLog;
}

/**
 * A function URL handler over the snapshot the environment names. The S3 client, the snapshot.json
 * reader and the handler for the snapshot's policy (with its rate-limit counters) live as long as the
 * handler: one per Lambda instance.
 */
export function createLambdaHandler(env: Readonly<Record<string, string | undefined>>, opts: LambdaHandlerOptions = {}): FunctionUrlHandler {
  let edge: SnapshotEdge;
  let clientAddress: ClientAddress = 'source-ip';
  try {
    const s = lambdaSettings(env);
    clientAddress = s.clientAddress;
    edge = createSnapshotEdge({
      files: s3Reader(s3Client(s), s.bucket, s.prefix),
      prefix: s.prefix,
      apiKeys: env.API_KEYS,
      healthMaxAgeSeconds: env.HEALTH_MAX_AGE_SECONDS,
      inflate: inflateSync,
      ...(opts.log ? { log: opts.log } : {}),
    });
  } catch (e) {
    edge = async (request) => misconfigured(request, e, opts.log);
  }
  return async (event) => {
    let request: Request;
    try {
      request = requestOf(event);
    } catch {
      return unreadable();
    }
    const response = await edge(request, clientAddressOf(event, clientAddress), rawTargetOf(event));
    return resultOf(response, request.method, opts.log);
  };
}

let instance: FunctionUrlHandler | null = null;

/** The Lambda entry point (handler setting `lambda.handler`): configured from process.env on first use. */
export async function handler(event: FunctionUrlEvent): Promise<FunctionUrlResult> {
  instance ??= createLambdaHandler(process.env);
  return instance(event);
}
