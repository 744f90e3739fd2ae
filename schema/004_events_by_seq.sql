-- 004_events_by_seq: key a job's events by the job's seq instead of its uid.
--
-- uids are random, so an index on job_uid puts every new job's first event
-- on a random page, and each commit rewrote one such page per job into the
-- WAL. seqs grow with submission order, so new events land on the last few
-- pages of (job_seq, id). job_uid stays for readers; job_seq carries the
-- foreign key, so purging a job finds its events through the index.
CREATE TABLE job_events_by_seq (
  id       INTEGER PRIMARY KEY AUTOINCREMENT,
  job_seq  INTEGER NOT NULL REFERENCES jobs (seq) ON DELETE CASCADE,
  job_uid  TEXT    NOT NULL,
  time_ms  INTEGER NOT NULL,
  type     TEXT    NOT NULL DEFAULT 'Normal',
  reason   TEXT    NOT NULL,
  message  TEXT    NOT NULL DEFAULT '',
  cluster  TEXT    NOT NULL DEFAULT ''
) STRICT;

INSERT INTO job_events_by_seq (id, job_seq, job_uid, time_ms, type, reason, message, cluster)
  SELECT e.id, j.seq, e.job_uid, e.time_ms, e.type, e.reason, e.message, e.cluster
  FROM job_events AS e JOIN jobs AS j ON j.uid = e.job_uid
  ORDER BY e.id;

DROP TABLE job_events;
ALTER TABLE job_events_by_seq RENAME TO job_events;
CREATE INDEX job_events_by_job ON job_events (job_seq, id);
