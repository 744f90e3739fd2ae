// ParseWatchLine against the plain parse followed by the pruning it stands
// for: the same tree for every line, kept or skipped, valid or not.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "gantry/kube/watch_line.h"

namespace gantry::kube {
namespace {

using nlohmann::json;

// The reference: parse everything, then erase what only_fields leaves out.
json ParseThenPrune(const std::string& line, const OnlyFields& only) {
  json j = json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("object") || !j["object"].is_object()) return j;
  for (auto& [member, keep] : only) {
    auto m = j["object"].find(member);
    if (m == j["object"].end() || !m->is_object()) continue;
    for (auto it = m->begin(); it != m->end();) {
      it = keep.count(it.key()) ? std::next(it) : m->erase(it);
    }
  }
  return j;
}

}  // namespace

TEST_CASE("a watch line is pruned exactly as parsing it whole and erasing would", "[kube][watch]") {
  const OnlyFields only = {{"spec", {"suspend", "queueName"}}, {"status", {"conditions", "admission"}}};
  const std::vector<std::string> lines = {
      // A Workload event: pod sets (arrays of objects) skipped, scalars kept.
      R"({"type":"MODIFIED","object":{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload",)"
      R"("metadata":{"name":"w","labels":{"a":"b"},"resourceVersion":"12"},)"
      R"("spec":{"queueName":"q","podSets":[{"name":"main","count":2,"template":{"spec":{"containers":[{"name":"c","args":["x",{"y":[1,2.5,null,true]}]}]}}}],"priority":-3,"suspend":false},)"
      R"("status":{"conditions":[{"type":"Admitted","status":"True"}],"admission":{"clusterQueue":"cq"},"requeueState":{"count":1},"resourceRequests":[{"name":"main"}]}}})",
      // Members not named in only_fields stay whole, at any depth.
      R"({"type":"ADDED","object":{"metadata":{"annotations":{"spec":"x"}},"other":{"podSets":[1,{"a":{}}]}}})",
      // A skipped member whose value is a scalar, an empty object, an empty array.
      R"({"type":"ADDED","object":{"spec":{"a":1,"b":{},"c":[],"d":"s\"}{[","suspend":true}}})",
      // A filtered member that is not an object: kept as it is.
      R"({"type":"ADDED","object":{"spec":[{"podSets":1}],"status":"odd"}})",
      // "object" not an object; keys named like filtered ones elsewhere.
      R"({"type":"BOOKMARK","object":"x","spec":{"podSets":[1]}})",
      R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})",
      // Escapes and numbers of every kind survive.
      R"({"type":"ADDED","object":{"metadata":{"name":"\u00e9\n\t","n":18446744073709551615,"m":-9223372036854775808,"f":1e-7}}})",
      // A repeated key: the last one wins, as in nlohmann's own parse.
      R"({"type":"ADDED","object":{"spec":{"suspend":true,"suspend":false,"podSets":[],"podSets":[1]}}})",
      // Not JSON, or more than one value: discarded.
      R"({"type":"ADDED","object":{"spec":{"podSets":[}})",
      R"({"type":"ADDED"} {"type":"ADDED"})",
      "",
      "[1,2,{\"object\":{\"spec\":{\"podSets\":1}}}]",
      // Numbers the two parsers could read differently: -0 is an integer to
      // nlohmann, -0.0 a double; one beyond 64 bits a double; 1.0 a double.
      R"({"object":{"metadata":{"a":-0,"b":-0.0,"c":1.0,"d":123456789012345678901234567890,"e":0,"f":9223372036854775807}}})",
      R"({"object":{"metadata":{"a":-123456789012345678901234567890,"b":1E400}}})",
      // Strings: escaped surrogate pairs, a lone surrogate, a raw control
      // character, bytes that are not UTF-8.
      R"({"object":{"metadata":{"name":"\ud83d\ude00"}}})",
      R"({"object":{"metadata":{"name":"\ud800"}}})",
      "{\"object\":{\"metadata\":{\"name\":\"a\x01b\"}}}",
      "{\"object\":{\"metadata\":{\"name\":\"\xff\xfe\"}}}",
      // Not JSON in other ways: a leading zero, a trailing comma, a bare word.
      R"({"object":{"metadata":{"n":01}}})",
      R"({"object":{"metadata":{"n":1,}}})",
      "nul",
      // Deep nesting, and white space around the line.
      std::string(600, '[') + std::string(600, ']'),
      " \t{\"type\":\"ADDED\",\"object\":{}}\r ",
  };
  for (const OnlyFields& o : {only, OnlyFields{}}) {
    for (const std::string& line : lines) {
      INFO(line);
      json got = ParseWatchLine(line, o);
      json want = ParseThenPrune(line, o);
      CHECK(got.is_discarded() == want.is_discarded());
      if (!want.is_discarded()) {
        CHECK(got == want);
        CHECK(got.dump() == want.dump());  // the same number types, too
      }
    }
  }
  // Without only_fields the whole line is kept.
  CHECK(ParseWatchLine(lines[0], {}) == json::parse(lines[0]));
  CHECK(ParseWatchLine(lines[0], only)["object"]["spec"].dump() == R"({"queueName":"q","suspend":false})");
}

}  // namespace gantry::kube
