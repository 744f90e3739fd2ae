-- 001_init: job records and their event history.
--
-- Rules for every file in schema/ (see src/store/migrator.cc):
--   * named NNN_name.sql; NNN is the version, applied in ascending order;
--   * the store runs each file inside its own transaction and records it in
--     schema_version, so a file must not contain BEGIN/COMMIT;
--   * once released, a migration is never edited: add NNN+1 instead.
--
-- Tables are STRICT so a wrongly typed value fails at write time instead of
-- surfacing as bad data on read. The dispatch engine adds leases and remote
-- objects in 002+; they key on jobs.uid (UNIQUE, so usable as a foreign key).

CREATE TABLE jobs (
  -- AUTOINCREMENT: a seq is never reused, even after a purge, so it is a
  -- stable pagination cursor (List's after_seq).
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  uid             TEXT    NOT NULL UNIQUE,
  namespace       TEXT    NOT NULL,
  name            TEXT    NOT NULL,
  queue           TEXT    NOT NULL,
  priority        INTEGER NOT NULL DEFAULT 0,
  spec_json       TEXT    NOT NULL,
  labels_json     TEXT    NOT NULL DEFAULT '{}',
  phase           TEXT    NOT NULL,
  cluster         TEXT    NOT NULL DEFAULT '',
  epoch           INTEGER NOT NULL DEFAULT 0,
  conditions_json TEXT    NOT NULL DEFAULT '[]',
  message         TEXT    NOT NULL DEFAULT '',
  created_ms      INTEGER NOT NULL,
  updated_ms      INTEGER NOT NULL,
  UNIQUE (namespace, name)
) STRICT;

-- List filters, each ordered by seq so "seq > ? ORDER BY seq LIMIT ?" is a range scan.
CREATE INDEX jobs_by_namespace ON jobs (namespace, seq);
CREATE INDEX jobs_by_queue     ON jobs (queue, seq);
CREATE INDEX jobs_by_phase     ON jobs (phase, seq);

CREATE TABLE job_events (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  job_uid  TEXT    NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
  time_ms  INTEGER NOT NULL,
  type     TEXT    NOT NULL DEFAULT 'Normal',
  reason   TEXT    NOT NULL,
  message  TEXT    NOT NULL DEFAULT '',
  cluster  TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX job_events_by_job ON job_events (job_uid, id);
