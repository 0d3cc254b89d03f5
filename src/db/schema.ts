// Versioned migrations. `PRAGMA user_version` holds the number of migrations applied; each migration
// runs in its own transaction. Never edit a migration that has shipped: add a new one.
//
// CHECK constraints avoid `x IN (...)`: SQLite evaluates a constant IN list through an ephemeral
// table on every row, which measured as most of the cost of a probe insert. The hottest table,
// probe_obs, has no CHECK at all (even a BETWEEN cost 0.5 µs of a 2.4 µs insert); its writer only
// ever stores the codes 0, 1, 2.
//
// Conventions: instants are INTEGER milliseconds since the Unix epoch (UTC); booleans are 0/1;
// small lists (ips, ns, seats, hostnames) are JSON text. Raw observation tables are append-only and
// carry the segment they came from; derived tables (src/derive) are added by later migrations.

export interface Migration {
  version: number;
  description: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'ingest bookkeeping and raw observations of the eight feed kinds',
    sql: `
      -- Key/value state of the pipeline (derive watermarks, last build, ...).
      CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      ) WITHOUT ROWID;

      -- One row per feed source (directory or http(s) URL).
      CREATE TABLE sources (
        id                   INTEGER PRIMARY KEY,
        url                  TEXT NOT NULL UNIQUE,
        name                 TEXT NOT NULL,
        last_attempt_at      INTEGER,
        last_success_at      INTEGER,
        last_error           TEXT,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        segments_listed      INTEGER NOT NULL DEFAULT 0
      );

      -- One row per ingested segment, written in the same transaction as the segment's records,
      -- so a segment is either wholly ingested (row present) or not at all.
      CREATE TABLE segments (
        id          INTEGER PRIMARY KEY,
        source_id   INTEGER NOT NULL REFERENCES sources(id),
        path        TEXT NOT NULL,
        sha256      TEXT NOT NULL,
        bytes       INTEGER NOT NULL,
        lines       INTEGER NOT NULL,
        records     INTEGER NOT NULL,
        duplicates  INTEGER NOT NULL,
        rejects     INTEGER NOT NULL,
        min_at      INTEGER,               -- time span of the segment's records (for incremental derive)
        max_at      INTEGER,
        ingested_at INTEGER NOT NULL,
        UNIQUE (source_id, path)
      );

      -- Lines that were not JSON or failed their schema: kept with their raw text, never fatal.
      CREATE TABLE rejects (
        id         INTEGER PRIMARY KEY,
        source_id  INTEGER NOT NULL REFERENCES sources(id),
        segment_id INTEGER NOT NULL REFERENCES segments(id) ON DELETE CASCADE,
        line       INTEGER NOT NULL,
        error      TEXT NOT NULL,
        raw        TEXT NOT NULL,
        raw_truncated INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX rejects_segment ON rejects (segment_id, line);

      -- Dimensions shared by the observation tables.
      CREATE TABLE hosts (
        id       INTEGER PRIMARY KEY,
        hostname TEXT NOT NULL UNIQUE,
        role     TEXT CHECK (role = 'SMP' OR role = 'AP')   -- from probes; null for hosts only named (e.g. by SML)
      );
      CREATE TABLE locations (
        id   INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE
      );
      -- A distinct (ips, ptr) pair; ips is the JSON array as observed.
      CREATE TABLE networks (
        id  INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,          -- ips JSON + '|' + ptr
        ips TEXT NOT NULL,
        ptr TEXT
      );
      CREATE TABLE certs (
        id          INTEGER PRIMARY KEY,
        fingerprint TEXT NOT NULL UNIQUE,  -- lower-case hex SHA-256
        subject     TEXT NOT NULL,
        issuer      TEXT NOT NULL,
        not_before  INTEGER NOT NULL,
        not_after   INTEGER NOT NULL
      );
      CREATE TABLE participants (
        id     INTEGER PRIMARY KEY,
        pid    TEXT NOT NULL UNIQUE,       -- canonical scheme::value
        scheme TEXT NOT NULL,
        value  TEXT NOT NULL
      );
      -- A distinct endpoint list of an SMP fetch, as canonical JSON (sorted), shared by participants.
      CREATE TABLE endpoint_sets (
        id        INTEGER PRIMARY KEY,
        hash      TEXT NOT NULL UNIQUE,    -- sha256 of endpoints
        endpoints TEXT NOT NULL
      );

      -- probe: one check of one host from one location. result 0 = up, 1 = degraded, 2 = down.
      -- Raw samples are pruned after retention.raw_probe_days once rolled up (src/derive).
      -- Dimension ids are not declared as foreign keys here: the writer resolves them itself and the
      -- per-row checks would cost a third of the insert rate on the largest table. The observation
      -- tables are WITHOUT ROWID, clustered on their natural key: one B-tree per row instead of two,
      -- duplicates (the same check delivered twice) are ignored, and reads by host or participant
      -- over time are range scans. New rows are found through segments.min_at/max_at.
      CREATE TABLE probe_obs (
        host_id     INTEGER NOT NULL,
        location_id INTEGER NOT NULL,
        at          INTEGER NOT NULL,
        result      INTEGER NOT NULL,       -- 0 up, 1 degraded, 2 down (no CHECK: see above)
        dns         REAL,
        tcp         REAL,
        tls         REAL,
        http        REAL,
        total       REAL,
        network_id  INTEGER,
        cert_id     INTEGER,
        error       TEXT,
        segment_id  INTEGER NOT NULL,
        PRIMARY KEY (host_id, location_id, at)
      ) WITHOUT ROWID;

      CREATE TABLE directory_obs (
        participant_id    INTEGER NOT NULL,
        at                INTEGER NOT NULL,
        present           INTEGER NOT NULL,
        has_card          INTEGER NOT NULL,
        name              TEXT,
        country           TEXT,
        registration_date TEXT,
        segment_id        INTEGER NOT NULL,
        PRIMARY KEY (participant_id, at)
      ) WITHOUT ROWID;

      CREATE TABLE sml_obs (
        participant_id INTEGER NOT NULL,
        at             INTEGER NOT NULL,
        registered     INTEGER NOT NULL,
        smp_host_id    INTEGER,
        zone           TEXT,
        segment_id     INTEGER NOT NULL,
        PRIMARY KEY (participant_id, at)
      ) WITHOUT ROWID;

      CREATE TABLE smp_obs (
        participant_id  INTEGER NOT NULL,
        at              INTEGER NOT NULL,
        smp_host_id     INTEGER NOT NULL,
        endpoint_set_id INTEGER NOT NULL,
        segment_id      INTEGER NOT NULL,
        PRIMARY KEY (participant_id, at)
      ) WITHOUT ROWID;

      CREATE TABLE member_obs (
        id               INTEGER PRIMARY KEY,
        key              TEXT NOT NULL,
        at               INTEGER NOT NULL,
        trade_name       TEXT NOT NULL,
        legal_name       TEXT,
        country          TEXT,
        url              TEXT,
        peppol_authority INTEGER NOT NULL,
        ap               INTEGER NOT NULL,
        smp              INTEGER NOT NULL,
        end_user         INTEGER NOT NULL,
        observer         INTEGER NOT NULL,
        hostnames        TEXT NOT NULL,
        active           INTEGER NOT NULL,
        segment_id       INTEGER NOT NULL REFERENCES segments(id),
        UNIQUE (key, at)
      );

      CREATE TABLE curation_obs (
        id          INTEGER PRIMARY KEY,
        slug        TEXT NOT NULL,
        at          INTEGER NOT NULL,
        name        TEXT NOT NULL,
        country     TEXT,
        natural_key TEXT,
        notes       TEXT,
        seats       TEXT NOT NULL,
        member_key  TEXT,
        segment_id  INTEGER NOT NULL REFERENCES segments(id),
        UNIQUE (slug, at)
      );

      CREATE TABLE zone_obs (
        id                 INTEGER PRIMARY KEY,
        zone               TEXT NOT NULL,
        location_id        INTEGER NOT NULL REFERENCES locations(id),
        at                 INTEGER NOT NULL,
        zone_kind          TEXT NOT NULL CHECK (zone_kind = 'SML' OR zone_kind = 'SMK'),
        env                TEXT NOT NULL,
        operator           TEXT NOT NULL,
        existing_ok        INTEGER NOT NULL,
        existing_total     INTEGER NOT NULL,
        nonexistent_ok     INTEGER NOT NULL,
        nonexistent_total  INTEGER NOT NULL,
        critical_nxdomain  INTEGER NOT NULL,
        soa_serial         INTEGER,
        ns                 TEXT NOT NULL,
        dname_target       TEXT,
        mgmt_host          TEXT,
        mgmt_tls_ok        INTEGER,
        mgmt_tls_not_after INTEGER,
        mgmt_tls_issuer    TEXT,
        segment_id         INTEGER NOT NULL REFERENCES segments(id),
        UNIQUE (zone, location_id, at)
      );
      CREATE INDEX zone_obs_at ON zone_obs (at);

      CREATE TABLE ack_obs (
        id           INTEGER PRIMARY KEY,
        anomaly_id   TEXT NOT NULL,
        at           INTEGER NOT NULL,
        acknowledged INTEGER NOT NULL,
        reason       TEXT,
        segment_id   INTEGER NOT NULL REFERENCES segments(id),
        UNIQUE (anomaly_id, at)
      );
    `,
  },
  {
    version: 2,
    description: 'segments found by their content (sha256), wherever they are served from',
    sql: `
      -- A segment whose bytes were ingested before (from any source, under any path) is not ingested
      -- again: ingest looks each listed segment up by its sha256.
      CREATE INDEX segments_sha256 ON segments (sha256);
    `,
  },
  {
    version: 3,
    description: 'participant observations found by their segment',
    sql: `
      -- An incremental derive recomputes the participants observed in its new segments: without these
      -- it scanned every participant observation (18 million rows at peppol, 3.5 s per cycle) to find
      -- them. Segment ids only grow, so ingest appends to these indexes.
      CREATE INDEX directory_obs_segment ON directory_obs (segment_id, participant_id);
      CREATE INDEX sml_obs_segment ON sml_obs (segment_id, participant_id);
      CREATE INDEX smp_obs_segment ON smp_obs (segment_id, participant_id);
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS.length;
