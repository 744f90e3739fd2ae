// Kubernetes label selectors as list and watch take them in ?labelSelector=:
// "a=b", "a==b", "a!=b", "a in (x,y)", "a notin (x)", "a" (exists), "!a",
// comma-separated and ANDed. An empty selector matches everything.
//
// Thread-safety: immutable after Parse.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/common/status.h"

namespace gantry::sim {

class LabelSelector {
 public:
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist };
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;
  };

  static Result<LabelSelector> Parse(std::string_view text);

  bool Matches(const std::map<std::string, std::string>& labels) const;
  // Matches an object's metadata.labels.
  bool MatchesObject(const nlohmann::json& object) const;
  // Matches a labels object ({"k": "v"}); non-string values count as absent.
  bool MatchesLabels(const nlohmann::json& labels) const;
  bool empty() const { return reqs_.empty(); }
  const std::vector<Requirement>& requirements() const { return reqs_; }

 private:
  // value_of(key): the label's value, or nullptr when absent.
  bool MatchesValues(const std::function<const std::string*(const std::string&)>& value_of) const;

  std::vector<Requirement> reqs_;
};

}  // namespace gantry::sim
