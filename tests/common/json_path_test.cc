#include <catch2/catch.hpp>

#include "gantry/common/json_path.h"

namespace gantry {

TEST_CASE("JsonAt, JsonStringAt and JsonIntAt walk members and stop at anything else", "[json]") {
  const auto o = nlohmann::json::parse(R"({"spec": {"n": 3, "s": "x", "nil": null, "list": [1]}, "top": 1})");
  REQUIRE(JsonAt(o, {"spec", "n"}) != nullptr);
  CHECK(*JsonAt(o, {"spec", "n"}) == 3);
  CHECK(JsonAt(o, {}) == &o);
  CHECK(JsonAt(o, {"spec", "absent"}) == nullptr);
  CHECK(JsonAt(o, {"top", "deeper"}) == nullptr);   // a number is not an object
  CHECK(JsonAt(o, {"spec", "list", "0"}) == nullptr);  // nor is an array
  REQUIRE(JsonAt(o, {"spec", "nil"}) != nullptr);    // present, and null
  CHECK(JsonAt(o, {"spec", "nil"})->is_null());

  CHECK(JsonIntAt(o, {"spec", "n"}, -1) == 3);
  CHECK(JsonIntAt(o, {"spec", "s"}, -1) == -1);
  CHECK(JsonIntAt(o, {"spec", "nil"}, -1) == -1);
  CHECK(JsonIntAt(o, {"spec", "absent"}, 7) == 7);

  CHECK(JsonStringAt(o, {"spec", "s"}) == "x");
  CHECK(JsonStringAt(o, {"spec", "n"}).empty());  // not a string
  CHECK(JsonStringAt(o, {"spec", "nil"}).empty());
  CHECK(JsonStringAt(o, {"spec", "absent"}).empty());
}

}  // namespace gantry
