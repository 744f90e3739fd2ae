-- 011_purged_jobs: the uid of every job purged from the store.
--
-- The engine's garbage collector deletes objects carrying gantry's origin
-- label whose job the store does not have. Before this table it deleted
-- them whatever the reason; now only those of a job this store purged (a
-- Workload or job left behind, say a copy whose create landed late). An
-- object of a job this store never had belongs to another gantry with the
-- same origin, or to the jobs of a database that was replaced: deleting it
-- would stop work gantry cannot account for, so it is left, and logged.
-- A row is a uid and a time: a million purged jobs take about 60 MB.
CREATE TABLE purged_jobs (
  uid       TEXT    PRIMARY KEY NOT NULL,
  purged_ms INTEGER NOT NULL
) STRICT;
