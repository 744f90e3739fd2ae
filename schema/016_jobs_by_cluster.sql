-- 016_jobs_by_cluster: the jobs leased to each cluster, in page order.
--
-- `gantry list --cluster C` (GET .../jobs?cluster=C) pages through one
-- cluster's jobs, e.g. before an operator drains it. Without this index a
-- page for a cluster that owns few jobs walks the whole jobs table, holding
-- the store's reader meanwhile. Jobs with no owner (queued, never leased)
-- are not in it; the list's query says `cluster != ''` so that SQLite may
-- use it.
CREATE INDEX jobs_by_cluster ON jobs (cluster, seq) WHERE cluster != '';
