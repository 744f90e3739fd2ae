#include "object_store.h"

#include <fmt/format.h>

#include <string_view>

#include "gantry/common/clock.h"
#include "gantry/common/names.h"
#include "gantry/common/json_text.h"

namespace gantry::sim {

using nlohmann::json;

std::string NamespaceOf(const json& o) { return o["metadata"].value("namespace", ""); }
std::string NameOf(const json& o) { return o["metadata"].value("name", ""); }

static std::string MetaMapValue(const json& o, const char* map, const std::string& key) {
  auto md = o.find("metadata");
  if (md == o.end() || !md->contains(map) || !(*md)[map].is_object()) return "";
  const json& m = (*md)[map];
  auto it = m.find(key);
  return it != m.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Annotation(const json& o, const std::string& key) { return MetaMapValue(o, "annotations", key); }
std::string Label(const json& o, const std::string& key) { return MetaMapValue(o, "labels", key); }
std::string LabelOrAnnotation(const json& o, const std::string& key) {
  std::string a = Annotation(o, key);
  return a.empty() ? Label(o, key) : a;
}

const json& MemberOr(const json& o, const char* key, const json& otherwise) {
  if (!o.is_object()) return otherwise;
  auto it = o.find(key);
  return it == o.end() ? otherwise : *it;
}

const json& EmptyObject() {
  static const json kEmpty = json::object();
  return kEmpty;
}

const json& EmptyArray() {
  static const json kEmpty = json::array();
  return kEmpty;
}

namespace {

const json& Member(const json& o, const char* key) {
  static const json kNull;
  return MemberOr(o, key, kNull);
}

}  // namespace

WatchEvent WatchEvent::Of(std::string type, std::string resource, int64_t rv, const json& object, json old_labels) {
  std::string text;
  AppendJson(text, object);  // what dump() writes, faster (json_text.h)
  return Of(std::move(type), std::move(resource), rv, object, std::move(old_labels), std::move(text));
}

WatchEvent WatchEvent::Of(std::string type, std::string resource, int64_t rv, const json& object, json old_labels,
                          std::string text) {
  const json& md = Member(object, "metadata");
  std::string ns = md.is_object() ? md.value("namespace", "") : "";
  json labels = md.is_object() ? Member(md, "labels") : json();
  return {std::move(type), std::move(resource), rv, std::move(ns), std::move(labels), std::move(old_labels),
          std::move(text)};
}

namespace {

// text, an object's serialization at resourceVersion `from`, at `to`
// instead; "" when its resourceVersion is not found exactly once.
std::string WithResourceVersion(std::string text, const std::string& from, const std::string& to) {
  const std::string field = "\"resourceVersion\":\"" + from + "\"";
  const std::size_t at = text.find(field);
  if (at == std::string::npos || text.find(field, at + 1) != std::string::npos) return "";
  text.replace(at, field.size(), "\"resourceVersion\":\"" + to + "\"");
  return text;
}

}  // namespace

ObjectStore::ObjectStore(std::size_t history_limit, EventSink sink)
    : history_limit_(history_limit), sink_(std::move(sink)) {}

std::string ObjectStore::Key(const std::string& ns, const std::string& name) { return ns + "/" + name; }

void ObjectStore::Record(const char* type, const std::string& resource, const std::string& key, const json& object,
                         json old_labels, std::string text) {
  if (text.empty()) {
    history_.push_back(WatchEvent::Of(type, resource, rv_, object, std::move(old_labels)));
  } else {
    history_.push_back(WatchEvent::Of(type, resource, rv_, object, std::move(old_labels), std::move(text)));
  }
  if (std::string_view(type) != "DELETED") texts_[resource][key] = history_.back().body;
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  if (sink_) sink_(history_.back(), object);
}

Result<const json*> ObjectStore::Create(const std::string& resource, json object, int64_t now_ms) {
  json& md = object["metadata"];
  std::string ns = md.value("namespace", "");
  std::string name = md.value("name", "");
  auto& bucket = objects_[resource];
  std::string key = Key(ns, name);
  if (bucket.count(key)) {
    return Status::AlreadyExists(fmt::format("{} \"{}\" already exists", resource, name));
  }
  md["uid"] = NewUid(now_ms);
  md["creationTimestamp"] = FormatRfc3339(now_ms);
  md["generation"] = 1;
  md["resourceVersion"] = std::to_string(++rv_);
  md.erase("deletionTimestamp");
  auto placed = bucket.emplace(std::move(key), std::move(object)).first;
  const json& stored = placed->second;
  Record("ADDED", resource, placed->first, stored, nullptr);
  return &stored;
}

const json* ObjectStore::Get(const std::string& resource, const std::string& ns, const std::string& name) const {
  auto b = objects_.find(resource);
  if (b == objects_.end()) return nullptr;
  auto it = b->second.find(Key(ns, name));
  return it == b->second.end() ? nullptr : &it->second;
}

Result<const json*> ObjectStore::Update(const std::string& resource, json object) {
  std::string ns = NamespaceOf(object), name = NameOf(object);
  auto& bucket = objects_[resource];
  auto it = bucket.find(Key(ns, name));
  if (it == bucket.end()) return Status::NotFound(fmt::format("{} \"{}\" not found", resource, name));
  json& old = it->second;
  const json& old_md = old["metadata"];
  json& md = object["metadata"];
  for (const char* k : {"uid", "creationTimestamp", "generation"}) md[k] = old_md[k];
  if (Member(object, "spec") != Member(old, "spec")) {
    md["generation"] = old_md.value("generation", 1) + 1;
  }
  md["resourceVersion"] = std::to_string(++rv_);
  json old_labels = old_md.value("labels", json::object());
  old = std::move(object);
  Record("MODIFIED", resource, it->first, old, std::move(old_labels));
  return &old;
}

Result<const json*> ObjectStore::Mutate(const std::string& resource, const std::string& ns, const std::string& name,
                                        const std::function<void(json&)>& edit) {
  return MutateIf(resource, ns, name, [&edit](json& o) {
    edit(o);
    return true;
  });
}

Result<const json*> ObjectStore::MutateIf(const std::string& resource, const std::string& ns, const std::string& name,
                                          const std::function<bool(json&)>& edit) {
  auto& bucket = objects_[resource];
  auto it = bucket.find(Key(ns, name));
  if (it == bucket.end()) return Status::NotFound(fmt::format("{} \"{}\" not found", resource, name));
  json& object = it->second;
  json old_labels = object["metadata"].value("labels", json::object());
  if (!edit(object)) return &object;
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  Record("MODIFIED", resource, it->first, object, std::move(old_labels));
  return &object;
}

Result<json> ObjectStore::Delete(const std::string& resource, const std::string& ns, const std::string& name) {
  auto& bucket = objects_[resource];
  auto it = bucket.find(Key(ns, name));
  if (it == bucket.end()) return Status::NotFound(fmt::format("{} \"{}\" not found", resource, name));
  const std::string key = it->first;
  json object = std::move(it->second);
  bucket.erase(it);
  std::string text;
  auto& texts = texts_[resource];
  if (auto t = texts.find(key); t != texts.end()) {
    text = std::move(t->second);
    texts.erase(t);
  }
  const std::string from = object["metadata"].value("resourceVersion", "");
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  if (!text.empty()) text = WithResourceVersion(std::move(text), from, std::to_string(rv_));
  Record("DELETED", resource, key, object, nullptr, std::move(text));
  return object;
}

Result<ListPage> ObjectStore::List(const std::string& resource, const std::string& ns, const LabelSelector& selector,
                                   std::size_t limit, const std::string& continue_token) const {
  ListPage page;
  auto b = objects_.find(resource);
  if (b == objects_.end()) return page;
  auto it = b->second.begin();
  if (!continue_token.empty()) {
    if (continue_token.find('/') == std::string::npos) return Status::Invalid("invalid continue token");
    it = b->second.upper_bound(continue_token);
  }
  std::string last_key;
  for (; it != b->second.end(); ++it) {
    const json& object = it->second;
    if (!ns.empty() && NamespaceOf(object) != ns) continue;
    if (!selector.MatchesObject(object)) continue;
    if (limit != 0 && page.items.size() == limit) {
      page.continue_token = last_key;
      ++page.remaining;
      continue;
    }
    page.items.push_back(object);
    last_key = it->first;
  }
  return page;
}

std::vector<const json*> ObjectStore::All(const std::string& resource) const {
  std::vector<const json*> out;
  auto b = objects_.find(resource);
  if (b == objects_.end()) return out;
  for (const auto& [key, obj] : b->second) out.push_back(&obj);
  return out;
}

Result<std::vector<const WatchEvent*>> ObjectStore::EventsSince(const std::string& resource, int64_t rv) const {
  if (rv < compacted_rv_) {
    return Status::Conflict(fmt::format("too old resource version: {} ({})", rv, compacted_rv_ + 1));
  }
  std::vector<const WatchEvent*> out;
  for (const WatchEvent& ev : history_) {
    if (ev.rv > rv && ev.resource == resource) out.push_back(&ev);
  }
  return out;
}

}  // namespace gantry::sim
