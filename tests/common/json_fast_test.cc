// FastParseJson against nlohmann's parse: the same tree for what it reads,
// nullopt (so the caller asks nlohmann) for what it must not judge.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "gantry/common/json_fast.h"

namespace gantry {

using nlohmann::json;

TEST_CASE("FastParseJson builds the tree nlohmann's parse builds", "[common][json]") {
  const std::vector<std::string> texts = {
      R"({"b":1,"a":[true,false,null,"s\u00e9\n",-7,18446744073709551615,2.5e-3,{}],"c":{"d":[]}})",
      R"([0,1,-1,9223372036854775807,-9223372036854775808,1.0,1e2])",
      R"("just a string")",
      "  42  ",
      R"({"k":1,"k":2})",  // repeated: the last wins, as in nlohmann
      std::string(100, '[') + std::string(100, ']'),
  };
  for (const std::string& text : texts) {
    INFO(text);
    auto fast = FastParseJson(text);
    REQUIRE(fast.has_value());
    json want = json::parse(text);
    CHECK(*fast == want);
    CHECK(fast->dump() == want.dump());  // the same number types, too
  }
}

TEST_CASE("FastParseJson leaves to nlohmann what it must not judge", "[common][json]") {
  // Not JSON: nlohmann words the error.
  for (std::string text : {"", "{", "[1,]", "{\"a\":01}", "nul", "{} {}", "\"\\ud800\"", "\"a\x01\""}) {
    INFO(text);
    CHECK_FALSE(FastParseJson(text).has_value());
  }
  // -0.0: a double to nlohmann, and simdjson's -0.0 could have been
  // written "-0" (an integer to nlohmann). simdjson reads "-0" as the
  // integer 0: the same value and text as nlohmann's.
  CHECK_FALSE(FastParseJson("[-0.0]").has_value());
  REQUIRE(FastParseJson("[-0]").has_value());
  CHECK(FastParseJson("[-0]")->dump() == json::parse("[-0]").dump());
  // Beyond 64 bits: a double to nlohmann.
  CHECK_FALSE(FastParseJson("123456789012345678901234567890").has_value());
  FastJsonOptions strict;
  strict.refuse_duplicate_keys = true;
  strict.max_depth = 3;
  CHECK_FALSE(FastParseJson(R"({"a":{"k":1,"k":1}})", strict).has_value());
  CHECK(FastParseJson(R"({"a":{"k":1,"j":1}})", strict).has_value());
  CHECK(FastParseJson("[[[1]]]", strict).has_value());       // three containers
  CHECK_FALSE(FastParseJson("[[[[1]]]]", strict).has_value());  // four
}

TEST_CASE("FastParseJson reads texts larger than the buffers a thread keeps", "[common][json]") {
  // Over 1 MiB: read with a parser and copy of its own.
  std::string big = "[\"" + std::string(3 << 20, 'x') + "\",1]";
  auto tree = FastParseJson(big);
  REQUIRE(tree.has_value());
  CHECK((*tree)[0].get_ref<const std::string&>().size() == (3u << 20));
  CHECK((*tree)[1] == 1);
  CHECK(FastParseJson(R"({"small":true})").has_value());  // and the kept ones still work after
}

TEST_CASE("FastParseJson builds only the listed members under a watch line's object", "[common][json]") {
  const std::map<std::string, std::set<std::string>> only = {{"spec", {"suspend"}}};
  FastJsonOptions options;
  options.only_fields = &only;
  auto tree = FastParseJson(
      R"({"type":"ADDED","object":{"metadata":{"name":"w"},"spec":{"suspend":true,"podSets":[1]}},"spec":{"x":1}})",
      options);
  REQUIRE(tree.has_value());
  CHECK((*tree)["object"]["spec"].dump() == R"({"suspend":true})");
  CHECK((*tree)["object"]["metadata"]["name"] == "w");
  CHECK((*tree)["spec"]["x"] == 1);  // outside "object": whole
}

}  // namespace gantry
