-- The start of each worker cluster's current outage, so that a daemon
-- restart does not reset the clock of clusterLostTimeout (DESIGN.md, step 7).
-- A row exists only while its cluster is in an outage.
CREATE TABLE cluster_outages (
  cluster TEXT PRIMARY KEY NOT NULL,
  first_lost_ms INTEGER NOT NULL,
  last_error TEXT NOT NULL DEFAULT ''
) STRICT;
