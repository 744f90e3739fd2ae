-- 017_cluster_identities: the identity each worker cluster's entry reached
-- (the uid of its kube-system Namespace, read by its probes), so that an
-- entry whose kubeconfig was pointed at another cluster while the daemon
-- was stopped is held at its first probe, as one edited while it runs is,
-- instead of taking every job there for vanished. A row exists while the
-- entry is in the inventory and its identity has been read.
CREATE TABLE cluster_identities (
  cluster    TEXT PRIMARY KEY NOT NULL,
  cluster_id TEXT NOT NULL
) STRICT;
