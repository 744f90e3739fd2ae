// ObjectStore: one simulated cluster's objects as the apiserver keeps them:
// per resource, keyed by namespace/name, with uid, creationTimestamp,
// generation and a per-cluster monotonically increasing resourceVersion, and
// a bounded history of change events for watch resume.
//
// Every change is recorded in the history and handed to the EventSink (the
// WatchHub and the simulated Kueue). A watch from a resourceVersion older
// than the history gets 410.
//
// Cost: the history keeps each version as JSON text (what a watch sends
// anyway), not as a tree, so the stored object is owned by the store alone
// and the controllers' status writes (Mutate) edit it in place: a write
// costs one serialization, no copy and no destruction of the object.
//
// Thread-safety: none; the owning ClusterState serializes all calls.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <unordered_map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"
#include "label_selector.h"

namespace gantry::sim {

// One change of one object, as watches need it.
struct WatchEvent {
  std::string type;      // ADDED, MODIFIED, DELETED
  std::string resource;  // plural
  int64_t rv = 0;
  std::string ns;
  nlohmann::json labels;      // the object's metadata.labels (null when none)
  nlohmann::json old_labels;  // MODIFIED: labels before, for selector transitions
  std::string body;           // the object serialized (keys sorted: apiVersion first)

  // The event of `object` (serializes it).
  static WatchEvent Of(std::string type, std::string resource, int64_t rv, const nlohmann::json& object,
                       nlohmann::json old_labels = nullptr);
  // The same with the object serialized already.
  static WatchEvent Of(std::string type, std::string resource, int64_t rv, const nlohmann::json& object,
                       nlohmann::json old_labels, std::string text);
};

struct ListPage {
  std::vector<nlohmann::json> items;
  std::string continue_token;  // "" when this is the last page
  int64_t remaining = 0;
};

class ObjectStore {
 public:
  // ev and the object as it is now (as deleted, for DELETED).
  using EventSink = std::function<void(const WatchEvent& ev, const nlohmann::json& object)>;

  // history_limit: events kept for watch resume.
  ObjectStore(std::size_t history_limit, EventSink sink);

  // Stored pointers returned below stay valid until the object's next
  // change through this store.

  // Assigns uid, creationTimestamp, generation 1 and a resourceVersion.
  // AlreadyExists when the name is taken.
  Result<const nlohmann::json*> Create(const std::string& resource, nlohmann::json object, int64_t now_ms);
  // nullptr when absent.
  const nlohmann::json* Get(const std::string& resource, const std::string& ns, const std::string& name) const;
  // Replaces the stored object (keeps uid/creationTimestamp), bumps the
  // resourceVersion, and generation when spec changed. NotFound when absent.
  Result<const nlohmann::json*> Update(const std::string& resource, nlohmann::json object);
  // Edits the stored object in place with edit(), then bumps the
  // resourceVersion. For the controllers' status and metadata writes.
  // REQUIRES: edit changes neither spec nor identity (generation is kept).
  Result<const nlohmann::json*> Mutate(const std::string& resource, const std::string& ns, const std::string& name,
                                       const std::function<void(nlohmann::json&)>& edit);
  // Mutate for an edit that may find nothing to do: edit returns whether it
  // changed the object (when not, it must have left it as it was), and an
  // unchanged object is not written: no resourceVersion, no watch event.
  Result<const nlohmann::json*> MutateIf(const std::string& resource, const std::string& ns, const std::string& name,
                                         const std::function<bool(nlohmann::json&)>& edit);
  // Returns the object as deleted (with the deletion's resourceVersion).
  Result<nlohmann::json> Delete(const std::string& resource, const std::string& ns, const std::string& name);

  // ns "" = all namespaces. limit 0 = no limit; continue_token from a
  // previous page. InvalidArgument for a token this store did not make.
  Result<ListPage> List(const std::string& resource, const std::string& ns, const LabelSelector& selector,
                        std::size_t limit, const std::string& continue_token) const;
  // Every object of a resource, in key order.
  std::vector<const nlohmann::json*> All(const std::string& resource) const;

  // Events of resource after rv, in order. Gone (kConflict with "Gone") when
  // events after rv were already dropped from the history.
  Result<std::vector<const WatchEvent*>> EventsSince(const std::string& resource, int64_t rv) const;
  int64_t resource_version() const { return rv_; }
  // The latest event, or nullptr when the history keeps none.
  const WatchEvent* LatestEvent() const { return history_.empty() ? nullptr : &history_.back(); }

 private:
  static std::string Key(const std::string& ns, const std::string& name);
  // Records the event of `object` and hands it to the sink. text: the
  // object serialized, when known ("": serialized here).
  void Record(const char* type, const std::string& resource, const std::string& key, const nlohmann::json& object,
              nlohmann::json old_labels, std::string text = "");

  std::size_t history_limit_;
  EventSink sink_;
  int64_t rv_ = 0;
  int64_t compacted_rv_ = 0;  // events with rv <= this are gone
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;
  // Each stored object's text as its latest event serialized it, by
  // resource and key: its DELETED event is that text with the deletion's
  // resourceVersion, not a second serialization of the whole object.
  std::map<std::string, std::unordered_map<std::string, std::string>> texts_;
  std::deque<WatchEvent> history_;
};

// o[key] when o is an object holding key, else `otherwise`. Unlike
// json::value() it never copies: objects are read on every write.
const nlohmann::json& MemberOr(const nlohmann::json& o, const char* key, const nlohmann::json& otherwise);
// Shared defaults for MemberOr.
const nlohmann::json& EmptyObject();
const nlohmann::json& EmptyArray();

// Metadata helpers for stored objects.
std::string NamespaceOf(const nlohmann::json& o);
std::string NameOf(const nlohmann::json& o);
std::string LabelOrAnnotation(const nlohmann::json& o, const std::string& key);
std::string Annotation(const nlohmann::json& o, const std::string& key);
std::string Label(const nlohmann::json& o, const std::string& key);

}  // namespace gantry::sim
