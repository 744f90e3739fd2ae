-- 018_daemon_settings: settings of the daemon that the database's contents
-- depend on, checked at each start. 'origin': the value of the
-- kueue.x-k8s.io/multikueue-origin label on every object gantry made in the
-- worker clusters; a daemon started on this database with another origin
-- would see none of its jobs' objects (every run taken for vanished, and
-- dispatched again beside itself) and could never delete them.
CREATE TABLE daemon_settings (
  key   TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
) STRICT;
