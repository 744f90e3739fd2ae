#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "gantry/common/json_scan.h"

namespace gantry {
namespace {

using Outcome = ScannedString::Outcome;

// What the API answered before the scan: the parsed text's string at
// /template/kind, "" for anything else.
std::string ParsedKind(const std::string& text) {
  try {
    return nlohmann::json::parse(text).value(nlohmann::json::json_pointer("/template/kind"), std::string());
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

}  // namespace

TEST_CASE("ScanJsonString finds what the parsed text holds there, or says it cannot tell", "[json]") {
  struct Row {
    const char* what;
    std::string text;
    Outcome outcome;
    std::string value;
  };
  const Row rows[] = {
      {"found", R"({"template":{"apiVersion":"v1","kind":"JobSet"}})", Outcome::kFound, "JobSet"},
      {"after members of every type, nested",
       R"({"a":{"x":[1,{"kind":"no"},"]}"],"y":"{"},"b":[[],{}],"c":-1.5e3,"d":true,"e":null,"f":"say \"hi\" \\",)"
       R"("template":{"spec":{"kind":"inner"},"kind":"Job"}})",
       Outcome::kFound, "Job"},
      {"spaces between tokens", " { \"template\" : { \"kind\" : \"RayJob\" } } ", Outcome::kFound, "RayJob"},
      {"an empty string", R"({"template":{"kind":""}})", Outcome::kFound, ""},
      {"UTF-8 passed as is", "{\"template\":{\"kind\":\"Caf\xC3\xA9\"}}", Outcome::kFound, "Caf\xC3\xA9"},
      {"no template", R"({"queue":"q"})", Outcome::kAbsent, ""},
      {"an empty object", "{}", Outcome::kAbsent, ""},
      {"no kind", R"({"template":{"apiVersion":"v1"}})", Outcome::kAbsent, ""},
      {"template not an object", R"({"template":"Job"})", Outcome::kAbsent, ""},
      {"template an array", R"({"template":[{"kind":"Job"}]})", Outcome::kAbsent, ""},
      {"kind not a string", R"({"template":{"kind":7}})", Outcome::kAbsent, ""},
      {"kind null", R"({"template":{"kind":null}})", Outcome::kAbsent, ""},
      {"kind an object", R"({"template":{"kind":{"a":"b"}}})", Outcome::kAbsent, ""},
      {"a kind elsewhere only", R"({"kind":"Job","spec":{"template":{"kind":"Pod"}}})", Outcome::kAbsent, ""},
      {"an escape in the kind", R"({"template":{"kind":"Jo\u0062"}})", Outcome::kUnsure, ""},
      {"an escape in a key on the way", R"({"t\u0065mplate":{"kind":"Job"}})", Outcome::kUnsure, ""},
      {"a root that is not an object", R"(["template"])", Outcome::kUnsure, ""},
      {"empty text", "", Outcome::kUnsure, ""},
      {"cut in a string", R"({"podSets":[{"name":"ab)", Outcome::kUnsure, ""},
      {"cut in an object", R"({"podSets":[{"name":"a"},)", Outcome::kUnsure, ""},
      {"cut before the kind's value", R"({"template":{"kind":)", Outcome::kUnsure, ""},
      {"cut in the kind", R"({"template":{"kind":"Jo)", Outcome::kUnsure, ""},
      {"a member without a colon", R"({"a" 1,"template":{"kind":"Job"}})", Outcome::kUnsure, ""},
      {"a control character in the kind", "{\"template\":{\"kind\":\"J\nob\"}}", Outcome::kUnsure, ""},
      {"a backslash ending the text", "{\"a\":\"\\", Outcome::kUnsure, ""},
  };
  for (const Row& row : rows) {
    INFO(row.what);
    ScannedString got = ScanJsonString(row.text, {"template", "kind"});
    CHECK(got.outcome == row.outcome);
    if (got.outcome == Outcome::kFound) CHECK(got.value == row.value);
    // Where it tells, it tells what the parser does.
    if (got.outcome != Outcome::kUnsure) CHECK(std::string(got.value) == ParsedKind(row.text));
  }
}

TEST_CASE("ScanJsonString walks strings full of escapes once, and a long text to its end", "[json]") {
  // Escaped quotes and backslashes in a long string before the member.
  std::string noise;
  for (int i = 0; i < 20000; ++i) noise += i % 2 ? "\\\"" : "\\\\";
  const std::string text = R"({"a":")" + noise + R"(","template":{"kind":"JobSet"}})";
  ScannedString got = ScanJsonString(text, {"template", "kind"});
  REQUIRE(got.outcome == Outcome::kFound);
  CHECK(got.value == "JobSet");
  CHECK(ParsedKind(text) == "JobSet");
}

}  // namespace gantry
