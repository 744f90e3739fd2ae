-- 010_outage_refusal: whether a cluster's current outage is, at its latest
-- probe, one of refused credentials (ClusterHealth::credentials_refused).
--
-- Such an outage has a timeout of its own (credentialsRefusedTimeoutSeconds),
-- and a failure of another kind after it starts clusterLostTimeout's clock
-- afresh. Both need the flag after a daemon restart: without it, a cluster
-- that had refused gantry for hours and then stopped answering across a
-- restart was taken as unreachable for those hours, and lost at once.
-- Existing rows get 0 (not refused), as before this column.
ALTER TABLE cluster_outages ADD COLUMN credentials_refused INTEGER NOT NULL DEFAULT 0;
