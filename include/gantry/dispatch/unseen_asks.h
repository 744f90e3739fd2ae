// When the engine may next read and delete, by name, an object its views
// cannot show (Verb::kDeleteUnseen): such a cluster answers but refuses
// gantry the list, so the answer never shows in a view, and each row would
// be asked on every pass of its job (every retry_ms) for as long as the
// refusal lasts. Each ask of a row doubles its wait, from `first` up to
// `max`, whatever the answer: an object deleted, gone already, or left
// alone is asked after now and then only in case it came back; a refused
// GET does not become a storm. (No answer, a 429 or a 5xx is not an ask:
// the job's next pass asks again, at its own backoff.)
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace gantry::dispatch {

class UnseenAsks {
 public:
  UnseenAsks(int64_t first_ms, int64_t max_ms) : first_ms_(first_ms), max_ms_(max_ms) {}
  // The key of a job's row: its cluster, kind and epoch (it has no object
  // uid to go by).
  static std::string Key(const std::string& job_uid, const std::string& cluster, const std::string& kind,
                         int64_t epoch);
  // Whether the row under key may be asked at now_ms.
  bool Due(const std::string& key, int64_t now_ms) const;
  // It was asked at now_ms: the cluster answered with anything but a 429
  // or a 5xx (which say nothing of the object), or there was nothing to send.
  void Asked(const std::string& key, int64_t now_ms);
  // What the row's last lookup found: at_ms, the object was not there (a
  // NotFound that named it, or another's object under its name); 0, it was,
  // or nothing was learned.
  void Found(const std::string& key, int64_t gone_at_ms);
  // When the row's last lookup found its object not there (0: it did not).
  // Read by every pass of a job with withdrawn rows: cheap while no row of
  // any job has been asked (the usual case).
  int64_t GoneAt(const std::string& key) const;
  size_t size() const;

 private:
  struct Entry {
    int64_t next_ms = 0;
    int64_t wait_ms = 0;
    int64_t gone_ms = 0;
  };
  const int64_t first_ms_;
  const int64_t max_ms_;
  mutable std::mutex mu_;
  std::map<std::string, Entry> rows_;
  int64_t pruned_ms_ = 0;
};

}  // namespace gantry::dispatch
