// ObjectStore: one simulated cluster's objects as the apiserver keeps them:
// per resource, keyed by namespace/name, with uid, creationTimestamp,
// generation and a per-cluster monotonically increasing resourceVersion, and
// a bounded history of change events for watch resume.
//
// Every change is recorded in the history and handed to the EventSink (the
// WatchHub). A watch from a resourceVersion older than the history gets 410.
//
// Thread-safety: none; the owning ClusterState serializes all calls.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"
#include "label_selector.h"

namespace gantry::sim {

struct WatchEvent {
  std::string type;      // ADDED, MODIFIED, DELETED
  std::string resource;  // plural
  int64_t rv = 0;
  nlohmann::json object;
  nlohmann::json old_labels;  // MODIFIED: labels before, for selector transitions
};

struct ListPage {
  std::vector<nlohmann::json> items;
  std::string continue_token;  // "" when this is the last page
  int64_t remaining = 0;
};

class ObjectStore {
 public:
  using EventSink = std::function<void(const WatchEvent&)>;

  // history_limit: events kept for watch resume.
  ObjectStore(std::size_t history_limit, EventSink sink);

  // Assigns uid, creationTimestamp, generation 1 and a resourceVersion.
  // AlreadyExists when the name is taken.
  Result<nlohmann::json> Create(const std::string& resource, nlohmann::json object, int64_t now_ms);
  // nullptr when absent.
  const nlohmann::json* Get(const std::string& resource, const std::string& ns, const std::string& name) const;
  // Replaces the stored object (keeps uid/creationTimestamp), bumps the
  // resourceVersion, and generation when spec changed. NotFound when absent.
  Result<nlohmann::json> Update(const std::string& resource, nlohmann::json object);
  Result<nlohmann::json> Delete(const std::string& resource, const std::string& ns, const std::string& name);

  // ns "" = all namespaces. limit 0 = no limit; continue_token from a
  // previous page. InvalidArgument for a token this store did not make.
  Result<ListPage> List(const std::string& resource, const std::string& ns, const LabelSelector& selector,
                        std::size_t limit, const std::string& continue_token) const;
  // Every object of a resource (for controllers), in key order.
  std::vector<const nlohmann::json*> All(const std::string& resource) const;

  // Events of resource after rv, in order. Gone (kConflict with "Gone") when
  // events after rv were already dropped from the history.
  Result<std::vector<const WatchEvent*>> EventsSince(const std::string& resource, int64_t rv) const;
  int64_t resource_version() const { return rv_; }

 private:
  static std::string Key(const std::string& ns, const std::string& name);
  void Record(WatchEvent ev);

  std::size_t history_limit_;
  EventSink sink_;
  int64_t rv_ = 0;
  int64_t compacted_rv_ = 0;  // events with rv <= this are gone
  std::map<std::string, std::map<std::string, nlohmann::json>> objects_;
  std::deque<WatchEvent> history_;
};

// Metadata helpers for stored objects.
std::string NamespaceOf(const nlohmann::json& o);
std::string NameOf(const nlohmann::json& o);
std::string LabelOrAnnotation(const nlohmann::json& o, const std::string& key);
std::string Annotation(const nlohmann::json& o, const std::string& key);
std::string Label(const nlohmann::json& o, const std::string& key);

}  // namespace gantry::sim
