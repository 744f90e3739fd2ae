-- 003_dispatch: what the dispatch engine needs to survive a crash.
--
-- remote_intents holds the desired state of every object gantry keeps in a
-- worker cluster (DESIGN.md, "Crash anywhere"): a row is written, in the same
-- transaction as the job change that calls for it, BEFORE the object is
-- created or deleted remotely. present = 1: the object should exist at this
-- epoch; present = 0: it should be gone, and the row is dropped once the
-- cluster shows it gone. After a restart the engine compares these rows with
-- what each cluster lists and converges.
CREATE TABLE remote_intents (
  job_uid    TEXT    NOT NULL REFERENCES jobs (uid) ON DELETE CASCADE,
  cluster    TEXT    NOT NULL,
  kind       TEXT    NOT NULL,           -- 'Workload' | 'Job'
  namespace  TEXT    NOT NULL,
  name       TEXT    NOT NULL,
  epoch      INTEGER NOT NULL,
  present    INTEGER NOT NULL,           -- 1 = should exist, 0 = should be deleted
  updated_ms INTEGER NOT NULL,
  PRIMARY KEY (job_uid, cluster, kind)
) STRICT;

CREATE INDEX remote_intents_by_cluster ON remote_intents (cluster);

-- nominated_ms: when the current epoch's nomination began (Incremental rounds
-- and dispatch.timeoutSeconds are measured from it).
-- lease_ms: when the owner's lease was taken (0 = no lease).
-- remote_status: the owner's view of the running job, for `gantry status`.
ALTER TABLE jobs ADD COLUMN nominated_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN lease_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN remote_status TEXT NOT NULL DEFAULT '';
