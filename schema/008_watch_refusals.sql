-- 008_watch_refusals: since when each worker cluster has refused gantry a
-- list of the objects it watches (a 403 on Workloads or the jobs' kind:
-- RBAC drift), so that credentialsRefusedTimeoutSeconds, which such a
-- refusal's jobs wait before their onClusterLoss, is measured from the
-- first refusal across daemon restarts, as cluster_outages does for an
-- outage. A row exists only while the refusal lasts. `cluster` is the
-- cluster's name for its Workloads or Jobs, or "<cluster>/<resource>" for
-- one optional kind there (e.g. "c1/jobsets": its JobSet jobs only).
CREATE TABLE cluster_watch_refusals (
  cluster  TEXT PRIMARY KEY NOT NULL,
  since_ms INTEGER NOT NULL
) STRICT;
