#include "watch_hub.h"

#include <string_view>

namespace gantry::sim {

using nlohmann::json;

std::string WatchHub::Encode(const std::string& type, const json& object) { return Line(type, object.dump()); }

std::string WatchHub::Line(const std::string& type, const std::string& object_text) {
  // "type" first, as the apiserver writes it (nlohmann would sort the keys).
  return "{\"type\":" + json(type).dump() + ",\"object\":" + object_text + "}\n";
}

uint64_t WatchHub::Add(Watcher w) {
  uint64_t id = next_id_++;
  watchers_.emplace(id, std::move(w));
  return id;
}

bool WatchHub::Deliver(Watcher& w, const WatchEvent& ev) { return Deliver(w, ev, nullptr); }

// The stored version is spliced out of the text when it leads, as it does
// for every object the API stores; anything else is re-parsed.
std::string WithApiVersion(const std::string& body, const std::string& api_version) {
  static const std::string kLead = "{\"apiVersion\":\"";
  if (body.compare(0, kLead.size(), kLead) == 0) {
    std::size_t end = body.find('"', kLead.size());
    if (end != std::string::npos &&
        std::string_view(body).substr(kLead.size(), end - kLead.size()).find('\\') == std::string_view::npos) {
      if (body.compare(kLead.size(), end - kLead.size(), api_version) == 0) return body;
      return "{\"apiVersion\":" + json(api_version).dump() + body.substr(end + 1);
    }
  }
  json object = json::parse(body);
  object["apiVersion"] = api_version;
  return object.dump();
}

bool WatchHub::Deliver(Watcher& w, const WatchEvent& ev, std::vector<EncodedEvent>* cache) {
  if (ev.resource != w.resource) return true;
  if (w.start_rv > 0 && ev.rv <= w.start_rv) return true;  // in its replay already
  if (!w.ns.empty() && ev.ns != w.ns) return true;
  const char* type = ev.type.c_str();
  bool now_matches = w.selector.MatchesLabels(ev.labels);
  if (ev.type == "MODIFIED" && !w.selector.empty()) {
    bool was_matching = w.selector.MatchesLabels(ev.old_labels);
    if (!now_matches && !was_matching) return true;
    if (now_matches && !was_matching) type = "ADDED";
    if (!now_matches && was_matching) type = "DELETED";
  } else if (!now_matches) {
    return true;
  }
  if (cache) {
    for (const EncodedEvent& e : *cache) {
      if (e.type == type && e.api_version == w.api_version) return w.stream->Write(e.line);
    }
  }
  // Built once per (type, apiVersion) and event, however many watchers see
  // it, from the text the store serialized once.
  std::string line = Line(type, WithApiVersion(ev.body, w.api_version));
  if (cache) cache->push_back({type, w.api_version, line});
  return w.stream->Write(std::move(line));
}

void WatchHub::Dispatch(const WatchEvent& ev) {
  if (held_) {
    held_events_.push_back(ev);
    return;
  }
  std::vector<EncodedEvent> cache;
  std::vector<EncodedEvent>* shared = watchers_.size() > 1 ? &cache : nullptr;  // one watcher: nothing to share
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    if (!Deliver(it->second, ev, shared)) {
      it = watchers_.erase(it);
    } else {
      ++it;
    }
  }
}

void WatchHub::Tick(int64_t now_ms, int64_t rv, int64_t bookmark_interval_ms) {
  if (held_) return;
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
  held_ = false;
  held_events_.clear();
}

void WatchHub::Release() {
  held_ = false;
  std::vector<WatchEvent> held;
  held.swap(held_events_);
  for (const WatchEvent& ev : held) Dispatch(ev);
}

}  // namespace gantry::sim
