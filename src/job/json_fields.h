// Reading untrusted JSON into typed values while collecting Kubernetes-style
// field errors ("spec.priority: must be an integer"). Internal to gantry_job.
//
// Every reader takes the path of the object it reads from and reports errors
// at Child(path, key). Readers never throw. A member whose value is null
// counts as absent, as Kubernetes treats `field: null`.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gantry/job/job_document.h"

namespace gantry::job_internal {

// Why a name gantry tells in logs and events (a region, a dataset, a
// model) is refused: a line break or an escape there could forge a log line
// or drive an operator's terminal (CleanText).
inline constexpr const char* kNoControlText =
    "must not contain control characters (line breaks, tabs, escape sequences, bidirectional controls)";

using nlohmann::json;

// Collects every problem found in one document, in traversal order.
class FieldErrors {
 public:
  void Add(std::string field, std::string message) {
    causes_.push_back({std::move(field), std::move(message)});
  }
  bool empty() const { return causes_.empty(); }
  std::size_t size() const { return causes_.size(); }
  const std::vector<FieldError>& causes() const { return causes_; }

 private:
  std::vector<FieldError> causes_;
};

// Path building, Kubernetes style: Child("spec", "queue") == "spec.queue",
// Child("", "spec") == "spec", Index("spec.podSets", 2) == "spec.podSets[2]",
// Key("metadata.labels", "team") == "metadata.labels[team]".
std::string Child(std::string_view path, std::string_view name);
std::string Index(std::string_view path, std::size_t i);
std::string Key(std::string_view path, std::string_view key);

// Short JSON type name for messages: "string", "integer", "object", ...
std::string_view TypeName(const json& value);

// The member key of obj, or nullptr when obj is not an object, the member is
// absent, or its value is null.
const json* Member(const json& obj, std::string_view key);

// Reports every member of obj whose name is not in allowed as "unknown field".
void CheckKnownFields(const json& obj, std::string_view path,
                      std::initializer_list<std::string_view> allowed, FieldErrors& errors);

// The readers return nullopt (or nullptr) both when the member is absent
// (no error) and when it is wrong (error added).
std::optional<std::string> ReadString(const json& obj, std::string_view key, std::string_view path,
                                      FieldErrors& errors);
std::optional<int64_t> ReadInt(const json& obj, std::string_view key, std::string_view path,
                               int64_t min, int64_t max, FieldErrors& errors);
std::optional<double> ReadNumber(const json& obj, std::string_view key, std::string_view path,
                                 FieldErrors& errors);
const json* ReadObject(const json& obj, std::string_view key, std::string_view path,
                       FieldErrors& errors);
// Like ReadObject, and reports "Required value" when absent.
const json* RequireObject(const json& obj, std::string_view key, std::string_view path,
                          FieldErrors& errors);
const json* ReadArray(const json& obj, std::string_view key, std::string_view path,
                      FieldErrors& errors);
// A list of non-empty, distinct strings.
std::vector<std::string> ReadStringList(const json& obj, std::string_view key,
                                        std::string_view path, FieldErrors& errors);
// An object whose values are all strings.
std::map<std::string, std::string> ReadStringMap(const json& obj, std::string_view key,
                                                 std::string_view path, FieldErrors& errors);

// Adds "Duplicate value" errors for repeated entries of a list of names read
// at list_path (entry i is reported at Index(list_path, i) + suffix).
void CheckDistinct(const std::vector<std::string>& values, std::string_view list_path,
                   std::string_view suffix, FieldErrors& errors);

}  // namespace gantry::job_internal
