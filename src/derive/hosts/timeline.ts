// A host's state validity intervals with their network and certificate resolved, newest first: what
// the snapshot stores so that the edge can answer `/v1/hosts/{hostname}?at=` without a database
// (src/render/routes/hosts.ts). Same tables and values as hostView() (read.ts): the interval holding an
// instant T is the one with the latest valid_from <= T, unless its valid_to <= T.
import type { Db } from '../../db/index.js';
import type { Verdict } from './quorum.js';
import type { HostCert, HostNetwork } from './read.js';
import { isoTime } from './time.js';

export interface StateInterval {
  valid_from: number;
  valid_to: number | null;
  verdict: Verdict | null;
  network: HostNetwork | null;
  cert: HostCert | null;
}

/** The intervals of one host (by hosts.id), valid_from descending; streamed from the primary key. */
export function* hostStateIntervals(db: Db, hostId: number): Generator<StateInterval> {
  const certStmt = db.prepare('SELECT fingerprint, subject, issuer, not_before, not_after FROM certs WHERE id = ?');
  const netStmt = db.prepare('SELECT ips, ptr FROM networks WHERE id = ?');
  const certs = new Map<number, HostCert | null>();
  const nets = new Map<number, HostNetwork | null>();
  const certOf = (id: number | null): HostCert | null => {
    if (id === null) return null;
    let c = certs.get(id);
    if (c === undefined) {
      const r = certStmt.get(id) as { fingerprint: string; subject: string; issuer: string; not_before: number; not_after: number } | undefined;
      c = r ? { fingerprint: r.fingerprint, subject: r.subject, issuer: r.issuer, not_before: isoTime(r.not_before), not_after: isoTime(r.not_after) } : null;
      certs.set(id, c);
    }
    return c;
  };
  const netOf = (id: number | null): HostNetwork | null => {
    if (id === null) return null;
    let n = nets.get(id);
    if (n === undefined) {
      const r = netStmt.get(id) as { ips: string; ptr: string | null } | undefined;
      n = r ? { ips: JSON.parse(r.ips) as string[], ptr: r.ptr } : null;
      nets.set(id, n);
    }
    return n;
  };
  type Row = { valid_from: number; valid_to: number | null; verdict: Verdict | null; network_id: number | null; cert_id: number | null };
  const rows = db.prepare('SELECT valid_from, valid_to, verdict, network_id, cert_id FROM host_state WHERE host_id = ? ORDER BY valid_from DESC').iterate(hostId) as IterableIterator<Row>;
  for (const r of rows) {
    yield { valid_from: r.valid_from, valid_to: r.valid_to, verdict: r.verdict, network: netOf(r.network_id), cert: certOf(r.cert_id) };
  }
}
