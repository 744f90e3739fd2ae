// LoadClusterDir: reads every `*.yaml` in a clusters.d directory into the set
// of configured clusters, on start and on every reload (SIGHUP, admin API).
//
// A broken file never takes the other clusters down with it:
//   - a file that fails to parse is reported in `errors`; if `previous` holds an
//     entry loaded from the same file, that last good entry is kept (flagged in
//     the error) so a typo during a reload does not drop a running cluster;
//   - one with no last good entry (always so at start) does not drop its
//     cluster either: the cluster is reported in `placeholders`, named as
//     LenientClusterName recovers it, for the inventory to hold it (its jobs
//     wait, see Fleet) until the file loads. Not when no name can be
//     recovered, nor when the name is another file's entry's (good or kept:
//     that entry wins); two refused files of one name give one placeholder,
//     from the file that sorts first;
//   - two files naming the same cluster: the one that defined it before
//     (in `previous`) wins, else the one that sorts first (by file name);
//     the other is reported and skipped;
//   - a file that is gone removes its cluster.
// Hidden files (".foo.yaml", editor swap files) and non-regular files are ignored.
// Output is sorted by cluster name, so two loads of the same files are equal.
//
// Thread-safety: a pure function of the directory contents and `previous`.
#pragma once

#include <string>
#include <vector>

#include "gantry/inventory/cluster_config.h"

namespace gantry::inventory {

struct ClusterFileError {
  std::string file;     // path of the file that failed
  Status status;        // the message names file, line and field
  bool kept_last_good;  // the cluster from this file's previous load is still served
};

// A cluster whose file is refused and has no last good entry: all that is
// known of it is its name.
struct ClusterPlaceholder {
  std::string name;  // LenientClusterName(file)
  std::string file;  // path of the refused file
  Status status;     // why it was refused (as in ClusterDirLoad::errors)
};

struct ClusterDirLoad {
  std::vector<ClusterConfig> clusters;   // sorted by name, names unique
  std::vector<ClusterFileError> errors;  // sorted by file name
  // Sorted by name, names unique and none of `clusters`; each file is also in `errors`.
  std::vector<ClusterPlaceholder> placeholders;
  // The directory itself could not be listed, or holds no cluster file
  // while `previous` has some; `clusters` is then `previous` unchanged (a
  // transient mount problem, or a directory being swapped, must not empty
  // the fleet), and `placeholders` empty: the caller keeps those it holds.
  Status dir_status;
};

ClusterDirLoad LoadClusterDir(const std::string& dir, const std::vector<ClusterConfig>& previous);

}  // namespace gantry::inventory
