// Str: the text at a JSON pointer of an answer, as every command reads it.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "command_support.h"

namespace gantry::cli {

TEST_CASE("Str reads strings and numbers at a JSON pointer, and the fallback for anything else", "[cli]") {
  const nlohmann::json j = nlohmann::json::parse(R"({
    "metadata": {"name": "train", "labels": {"a/b": "slash", "c~d": "tilde"}},
    "status": {"epoch": 3, "cluster": "c1", "done": true, "list": ["x", {"y": "z"}]},
    "odd": []
  })");
  CHECK(Str(j, "/metadata/name") == "train");
  CHECK(Str(j, "/status/epoch") == "3");
  CHECK(Str(j, "/status/list/0") == "x");
  CHECK(Str(j, "/status/list/1/y") == "z");
  CHECK(Str(j, "/metadata/labels/a~1b") == "slash");
  CHECK(Str(j, "/metadata/labels/c~0d") == "tilde");
  // Absent, of another type, or a parent of another type: the fallback.
  CHECK(Str(j, "/status/owner", "<none>") == "<none>");
  CHECK(Str(j, "/status/done", "-") == "-");
  CHECK(Str(j, "/status", "-") == "-");
  CHECK(Str(j, "/odd/name", "-") == "-");
  CHECK(Str(j, "/metadata/name/x", "-") == "-");
  CHECK(Str(j, "/status/list/2", "-") == "-");
  CHECK(Str(j, "/status/list/01", "-") == "-");
  CHECK(Str(j, "/status/list/-", "-") == "-");
  CHECK(Str(j, "/metadata/labels/c~2d", "-") == "-");
  CHECK(Str(j, "metadata", "-") == "-");
  CHECK(Str(nlohmann::json(), "/a", "-") == "-");
  CHECK(Str(nlohmann::json("top"), "") == "top");
}

TEST_CASE("a column's quantities read in one unit: millis as decimals, bytes and the unreadable as given", "[cli]") {
  CHECK(InUnits("1500m") == "1.5");
  CHECK(InUnits("250m") == "0.25");
  CHECK(InUnits("384") == "384");
  CHECK(InUnits("0") == "0");
  CHECK(InUnits("2k") == "2000");
  CHECK(InUnits("64Gi") == "64Gi");
  CHECK(InUnits("n/a") == "n/a");
}

}  // namespace gantry::cli
