// The JSON text writer against nlohmann's dump(): they must agree byte for
// byte, because stored specs are compared as text.
#include "gantry/common/json_text.h"

#include <catch2/catch.hpp>

#include <limits>
#include <map>
#include <string>

namespace gantry::testing {
namespace {

using nlohmann::json;

std::string Text(const json& value) {
  std::string out;
  AppendJson(out, value);
  return out;
}

TEST_CASE("AppendJson writes what dump() writes", "[common][json]") {
  std::string every_control;
  for (int c = 0; c < 0x20; ++c) every_control.push_back(static_cast<char>(c));
  const json values[] = {
      nullptr,
      true,
      false,
      0,
      -1,
      std::numeric_limits<int64_t>::min(),
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<uint64_t>::max(),
      0.0,
      -0.0,
      1.0,
      0.1,
      4.5,
      1e300,
      -2.5e-8,
      "",
      "plain",
      "quote \" backslash \\ slash / del \x7f",
      every_control,
      "\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80",  // é, €, a 4-byte rocket
      json::array(),
      json::object(),
      json::array({1, "two", nullptr, json::object(), json::array({json::array()})}),
      json::parse(R"({"b":1,"a":{"z":"\n","":""},"B":[0.5]})"),
  };
  for (const json& v : values) {
    INFO(v.dump());
    CHECK(Text(v) == v.dump());
  }
  // A document read back from text, as stored specs are.
  json parsed = json::parse(R"({"k":[1,-2,3.25,"\u0001\t",{"x":null}],"e":{}})");
  CHECK(Text(parsed) == parsed.dump());
}

TEST_CASE("AppendJsonObject writes a string map as dump() does", "[common][json]") {
  for (const std::map<std::string, std::string>& m :
       {std::map<std::string, std::string>{}, {{"team", "nlp"}}, {{"b", "\"x\""}, {"a", ""}, {"A", "\x01"}}}) {
    std::string out;
    AppendJsonObject(out, m);
    CHECK(out == json(m).dump());
  }
}

}  // namespace
}  // namespace gantry::testing
