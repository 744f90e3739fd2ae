// WatchHub: the open watch streams of one simulated cluster. Fans each
// change event out to the streams whose resource, namespace and label
// selector match (a MODIFIED that moves an object into or out of a selector
// becomes ADDED or DELETED, as the apiserver's watch cache does), sends
// BOOKMARKs, and ends streams at their deadline as real apiservers do.
//
// Streams that the client closed are pruned on the next Tick or failed write,
// so no close callback (and no lock ordering with the HTTP server) is needed.
//
// Thread-safety: none; the owning ClusterState serializes all calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/http/message.h"
#include "label_selector.h"
#include "object_store.h"

namespace gantry::sim {

// body (an object serialized with sorted keys) with apiVersion set to
// api_version.
std::string WithApiVersion(const std::string& body, const std::string& api_version);

struct Watcher {
  std::string resource;
  std::string ns;  // "" = all namespaces
  LabelSelector selector;
  std::string api_version;  // written into every object sent
  std::string kind;
  bool bookmarks = false;
  int64_t deadline_ms = 0;
  int64_t next_bookmark_ms = 0;
  std::shared_ptr<http::ResponseStream> stream;
  // The store's resourceVersion once its replay was sent: events at or
  // below it reached it already (held ones, released later, included).
  int64_t start_rv = 0;
};

class WatchHub {
 public:
  // One event line: {"type":...,"object":...}\n
  static std::string Encode(const std::string& type, const nlohmann::json& object);
  // The same from the object already serialized.
  static std::string Line(const std::string& type, const std::string& object_text);

  uint64_t Add(Watcher w);
  // Sends ev to one watcher if it matches; false when its stream is gone.
  static bool Deliver(Watcher& w, const WatchEvent& ev);
  void Dispatch(const WatchEvent& ev);
  // Bookmarks every bookmark_interval_ms; Finish at the deadline; prunes.
  void Tick(int64_t now_ms, int64_t rv, int64_t bookmark_interval_ms);
  // Ends every stream (admin "kill watches", apiserver stop); drops a hold.
  void CloseAll();
  // A stalled apiserver (admin "hold-watches"): the open streams stay open
  // and silent, no event, bookmark or end, until Release sends what was held
  // (a stream opened meanwhile starts from the store as it is, and gets only
  // what came after that).
  void Hold() { held_ = true; }
  void Release();
  bool held() const { return held_; }
  std::size_t size() const { return watchers_.size(); }

 private:
  // One event as a watch line, for the watchers that see it the same way.
  struct EncodedEvent {
    std::string type, api_version, line;
  };
  // As Deliver, reusing and adding to the lines already encoded for ev
  // (cache nullptr: encodes without keeping the line).
  static bool Deliver(Watcher& w, const WatchEvent& ev, std::vector<EncodedEvent>* cache);

  bool held_ = false;
  std::vector<WatchEvent> held_events_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Watcher> watchers_;
};

}  // namespace gantry::sim
