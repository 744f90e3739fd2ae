// ListWatch: keeps a caller's view of one resource in step with a cluster,
// the way Kubernetes informers do: list (all pages), then watch from the
// list's resourceVersion; when the server ends the stream, watch again from
// the last resourceVersion seen; when that is too old (410) or the watch
// fails, list again (after a capped backoff on failures).
//
// Runs on the calling thread until stop() returns true. stop() is checked
// between steps and at every event or bookmark; a watch is also ended by the
// server after watch_timeout_seconds, which bounds how long a quiet stream
// can keep stop() unchecked.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/kube/kube_client.h"

namespace gantry::kube {

struct ListWatchOptions {
  // How its log lines name what is listed and watched ("cluster c1"): many
  // clusters serve the same paths. "" = the path alone.
  std::string log_name;
  std::string label_selector;
  int page_size = 500;
  // A list (all its pages) of more objects fails, as a malformed one does:
  // a cluster whose continue tokens never end must not fill the memory.
  // gantry lists its own objects alone (by label), far fewer.
  std::size_t max_list_items = 200'000;
  int watch_timeout_seconds = 60;
  std::chrono::milliseconds idle_timeout{120'000};
  std::chrono::milliseconds max_backoff{30'000};
  // Failures in a row (lists and watches, one stream after another, while
  // a cluster is out of reach) are logged once, then at most once per this
  // interval with how many were not; a list that works again after failures
  // not logged says so.
  std::chrono::milliseconds failure_log_interval{60'000};
  OnlyFields only_fields;  // for watch events (see WatchOptions) and the list's items alike
  int stop_fd = -1;        // see WatchOptions::stop_fd; stop() must say true once it is readable
  // Called when a (re)list fails: the HTTP status of the answer (0: none,
  // e.g. a connection refused) and a message free of secrets. A 401 or 403
  // means the view can no longer be brought up to date.
  std::function<void(int status, const std::string& message)> on_list_failed;
  // Called when a watch ends in an error (not its clean end, not a 410): a
  // relist follows after the backoff, and until it succeeds the view misses
  // whatever changed meanwhile.
  std::function<void(const std::string& message)> on_watch_failed;
  // Asked every 100 ms during a backoff wait, and at a watch's clean end:
  // true ends the wait at once and starts the backoff again from its first
  // step (the cluster is known to answer again, so a relist need not wait
  // out a long backoff), or relists instead of resuming the watch.
  std::function<bool()> relist_now;
};

struct ListWatchStats {
  int lists = 0;    // full relists (the first one included)
  int watches = 0;  // watch streams opened
};

// on_list gets every item of a (re)list; on_event every watch event after it.
ListWatchStats ListWatch(KubeClient& client, const std::string& path, const ListWatchOptions& options,
                         const std::function<void(const std::vector<nlohmann::json>&)>& on_list,
                         const std::function<void(const WatchEvent&)>& on_event,
                         const std::function<bool()>& stop);

}  // namespace gantry::kube
