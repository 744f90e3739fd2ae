#include "watch_hub.h"

namespace gantry::sim {

using nlohmann::json;

std::string WatchHub::Encode(const std::string& type, const json& object) {
  // "type" first, as the apiserver writes it (nlohmann would sort the keys).
  return "{\"type\":" + json(type).dump() + ",\"object\":" + object.dump() + "}\n";
}

uint64_t WatchHub::Add(Watcher w) {
  uint64_t id = next_id_++;
  watchers_.emplace(id, std::move(w));
  return id;
}

bool WatchHub::Deliver(Watcher& w, const WatchEvent& ev) {
  if (ev.resource != w.resource) return true;
  if (!w.ns.empty() && NamespaceOf(ev.object) != w.ns) return true;
  std::string type = ev.type;
  bool now_matches = w.selector.MatchesObject(ev.object);
  if (ev.type == "MODIFIED" && !w.selector.empty()) {
    json old = {{"metadata", {{"labels", ev.old_labels}}}};
    bool was_matching = w.selector.MatchesObject(old);
    if (!now_matches && !was_matching) return true;
    if (now_matches && !was_matching) type = "ADDED";
    if (!now_matches && was_matching) type = "DELETED";
  } else if (!now_matches) {
    return true;
  }
  json object = ev.object;
  object["apiVersion"] = w.api_version;
  return w.stream->Write(Encode(type, object));
}

void WatchHub::Dispatch(const WatchEvent& ev) {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (!Deliver(it->second, ev)) {
      it = watchers_.erase(it);
    } else {
      ++it;
    }
  }
}

void WatchHub::Tick(int64_t now_ms, int64_t rv, int64_t bookmark_interval_ms) {
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    Watcher& w = it->second;
    bool alive = !w.stream->closed();
    if (alive && now_ms >= w.deadline_ms) {
      w.stream->Finish();
      alive = false;
    }
    if (alive && w.bookmarks && now_ms >= w.next_bookmark_ms) {
      w.next_bookmark_ms = now_ms + bookmark_interval_ms;
      json bookmark = {{"kind", w.kind},
                       {"apiVersion", w.api_version},
                       {"metadata", {{"resourceVersion", std::to_string(rv)}}}};
      alive = w.stream->Write(Encode("BOOKMARK", bookmark));
    }
    it = alive ? std::next(it) : watchers_.erase(it);
  }
}

void WatchHub::CloseAll() {
  for (auto& [id, w] : watchers_) w.stream->Finish();
  watchers_.clear();
}

}  // namespace gantry::sim
