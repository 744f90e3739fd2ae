#include "gantry/kube/list_watch.h"

#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gantry/common/json_path.h"

namespace gantry::kube {
namespace {

// A watch that ends cleanly sooner than this with no event is a failure
// (client-go's "very short watch").
constexpr auto kShortWatch = std::chrono::seconds(1);

// "cluster c1: " before a log line's text, or nothing.
std::string LogPrefix(const ListWatchOptions& options) {
  return options.log_name.empty() ? std::string() : options.log_name + ": ";
}

// The failures in a row of one list-and-watch: the first is logged, then
// one in each failure_log_interval, telling how many were not; a cluster
// out of reach for 15 minutes is a few lines per resource, not hundreds.
class FailureLog {
 public:
  FailureLog(const ListWatchOptions& options, const std::string& path)
      : prefix_(LogPrefix(options)), path_(path), interval_(options.failure_log_interval) {}

  void Failed(const std::string& text) {
    const auto now = std::chrono::steady_clock::now();
    if (!failing_) since_ = now;
    failing_ = true;
    if (logged_ && now - last_ < interval_) {
      ++held_;
      return;
    }
    if (held_ > 0) {
      spdlog::warn("{}{} ({} more failure(s) of its list and watch not logged since {} s ago)", prefix_, text, held_,
                   std::chrono::duration_cast<std::chrono::seconds>(now - last_).count());
    } else {
      spdlog::warn("{}{}", prefix_, text);
    }
    logged_ = true;
    last_ = now;
    held_ = 0;
  }

  // A watch ended cleanly: the streak is over (a list alone is not, nor a
  // stream that brought events and then failed: a proxy that cuts every
  // stream lets the lists and a few events through).
  void Followed() {
    if (!failing_) return;
    if (held_ > 0) {
      spdlog::info("{}watch {} works again, after {} s of failures ({} not logged)", prefix_, path_,
                   std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - since_).count(),
                   held_);
    }
    failing_ = false;
    logged_ = false;
    held_ = 0;
  }

 private:
  const std::string prefix_;
  const std::string path_;
  const std::chrono::milliseconds interval_;
  bool failing_ = false;
  bool logged_ = false;  // a line of this streak went out, at last_
  std::chrono::steady_clock::time_point since_, last_;
  int64_t held_ = 0;
};

// Lists every page. Returns the list's resourceVersion, or "" on failure
// or when stop() asks between pages (a large cluster's list is many).
std::string ListAll(KubeClient& client, const std::string& path, const ListWatchOptions& options,
                    std::vector<nlohmann::json>* items, const std::function<bool()>& stop, FailureLog& log) {
  ListOptions page;
  page.label_selector = options.label_selector;
  page.limit = options.page_size;
  while (!stop()) {
    auto r = client.List(path, page);
    if (!r.ok() && stop()) return "";  // given up for the stop (KubeClientOptions::stop_fd): no failure
    if (!r.ok() || !r->ok()) {
      const std::string message = r.ok() ? (r->error ? r->error->message : "HTTP " + std::to_string(r->status))
                                         : r.status().message();
      log.Failed(fmt::format("list {}: {}", path, message));
      if (options.on_list_failed) options.on_list_failed(r.ok() ? r->status : 0, message);
      return "";
    }
    // What a list must be (a cluster's answer is not trusted): an object
    // with an array of items and a string resourceVersion.
    nlohmann::json* listed = nullptr;
    std::string malformed;
    if (!r->body.is_object()) {
      malformed = "the answer is not a JSON object";
    } else if (auto it = r->body.find("items"); it != r->body.end() && !it->is_null()) {
      if (it->is_array()) {
        listed = &*it;
      } else {
        malformed = "its items is not a list";
      }
    }
    const std::string rv = JsonStringAt(r->body, {"metadata", "resourceVersion"});
    page.continue_token = JsonStringAt(r->body, {"metadata", "continue"});
    if (malformed.empty() && page.continue_token.empty() && rv.empty()) malformed = "it has no resourceVersion";
    if (malformed.empty() && listed && items->size() + listed->size() > options.max_list_items) {
      malformed = fmt::format("it holds more than {} objects (its pages may never end)", options.max_list_items);
    }
    if (!malformed.empty()) {
      const std::string message = "a malformed list: " + malformed;
      log.Failed(fmt::format("list {}: {}", path, message));
      if (options.on_list_failed) options.on_list_failed(r->status, message);
      return "";
    }
    if (listed) {
      // Kept as the watch keeps its events' objects: a large list's items
      // whole (their pod templates, managedFields) would cost ten times more.
      for (auto& item : *listed) {
        if (!options.only_fields.empty()) PruneObject(item, options.only_fields);
        items->push_back(std::move(item));
      }
    }
    if (page.continue_token.empty()) return rv;
  }
  return "";
}

// A backoff wait that a stop request or options.relist_now cuts short
// (both asked every 100 ms). True when relist_now ended it.
bool SleepUnlessStopped(std::chrono::milliseconds d, const std::function<bool()>& stop,
                        const ListWatchOptions& options) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (!stop()) {
    if (options.relist_now && options.relist_now()) return true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left <= std::chrono::milliseconds::zero()) return false;
    std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(100)));
  }
  return false;
}

}  // namespace

ListWatchStats ListWatch(KubeClient& client, const std::string& path, const ListWatchOptions& options,
                         const std::function<void(const std::vector<nlohmann::json>&)>& on_list,
                         const std::function<void(const WatchEvent&)>& on_event,
                         const std::function<bool()>& stop) {
  ListWatchStats stats;
  FailureLog log(options, path);
  std::string rv;  // "" = a (re)list is needed
  const auto first_backoff = std::chrono::milliseconds(200);
  auto backoff = first_backoff;
  // The cluster is failing: waits, then doubles the next wait, unless
  // relist_now cut this one short (the cluster answers again).
  auto back_off = [&] {
    const bool woken = SleepUnlessStopped(backoff, stop, options);
    backoff = woken ? first_backoff : std::min(backoff * 2, options.max_backoff);
  };
  while (!stop()) {
    if (rv.empty()) {
      std::vector<nlohmann::json> items;
      rv = ListAll(client, path, options, &items, stop, log);
      if (rv.empty()) {
        back_off();
        continue;
      }
      ++stats.lists;
      on_list(items);
    }
    WatchOptions w;
    w.label_selector = options.label_selector;
    w.resource_version = rv;
    w.timeout_seconds = options.watch_timeout_seconds;
    w.idle_timeout = options.idle_timeout;
    w.only_fields = options.only_fields;
    w.stop_requested = stop;
    w.stop_fd = options.stop_fd;
    ++stats.watches;
    const auto started = std::chrono::steady_clock::now();
    std::size_t events = 0;
    auto end = client.Watch(path, w, [&](const WatchEvent& e) {
      ++events;
      on_event(e);
      return !stop();
    });
    if (end.ok() && !end->expired && !end->stopped && events == 0 && !stop() &&
        std::chrono::steady_clock::now() - started < kShortWatch) {
      // A clean end at once, with nothing in it (a proxy cutting streams, a
      // conversion webhook failing): resuming at once would spin against
      // the server and leave the view as it is; a list after a backoff, as
      // for a failure.
      end = Status::Unavailable("the watch ended at once, with no event");
    }
    if (!end.ok() && stop()) break;  // given up for the stop: no failure to tell
    if (!end.ok()) {
      // (The client's own messages begin with the watch's path already.)
      const std::string& said = end.status().message();
      const std::string prefix = said.starts_with("watch " + path) ? "" : "watch " + path + ": ";
      log.Failed(fmt::format("{}{}; listing again in {} ms", prefix, said, backoff.count()));
      if (options.on_watch_failed) options.on_watch_failed(end.status().message());
      rv.clear();  // start over from a list
      back_off();
      continue;
    }
    backoff = first_backoff;
    log.Followed();
    if (end->expired || (options.relist_now && options.relist_now())) {
      rv.clear();  // 410 (the resume point is gone), or a relist was asked for
    } else {
      rv = end->last_resource_version;  // a clean end: resume
    }
    // At most one stream a second: a server that ends every watch at once
    // (a 410 each time, one event then the end) would otherwise be asked
    // thousands of times a second, a list with each 410.
    if (const auto lasted = std::chrono::steady_clock::now() - started; lasted < kShortWatch && !end->stopped) {
      if (SleepUnlessStopped(std::chrono::duration_cast<std::chrono::milliseconds>(kShortWatch - lasted), stop,
                             options)) {
        rv.clear();  // a relist was asked for meanwhile
      }
    }
  }
  return stats;
}

}  // namespace gantry::kube
