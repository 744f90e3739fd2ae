-- 005_intents_by_key: remote_intents as one b-tree on its key.
--
-- A dispatch write upserts a job's intents (nine at an AllAtOnce nomination
-- over ten clusters) and drops them once the objects are gone. With a rowid
-- table, each row lived in three b-trees: the rows, the primary key's index
-- and remote_intents_by_cluster. That last one put a job's intents on one
-- page per cluster, so every commit rewrote about ten of its pages into the
-- WAL. WITHOUT ROWID keeps the rows in the primary key's order (a job's
-- intents together, jobs in uid order, which is time order), and the index
-- by cluster is gone: its one reader, the scan for a cluster whose
-- readiness changed, is rare and reads the small table whole.
CREATE TABLE remote_intents_by_key (
  job_uid    TEXT    NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
  cluster    TEXT    NOT NULL,
  kind       TEXT    NOT NULL,           -- 'Workload' | 'Job'
  namespace  TEXT    NOT NULL,
  name       TEXT    NOT NULL,
  epoch      INTEGER NOT NULL,
  present    INTEGER NOT NULL,           -- 1 = should exist, 0 = should be deleted
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (job_uid, cluster, kind)
) STRICT, WITHOUT ROWID;

INSERT INTO remote_intents_by_key (job_uid, cluster, kind, namespace, name, epoch, present, updated_ms)
  SELECT job_uid, cluster, kind, namespace, name, epoch, present, updated_ms FROM remote_intents;

DROP TABLE remote_intents;
ALTER TABLE remote_intents_by_key RENAME TO remote_intents;
