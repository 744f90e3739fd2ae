#include "gantry/job/quantity.h"

#include <catch2/catch.hpp>

namespace gantry {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

TEST_CASE("ParseQuantityMilli accepts the Kubernetes quantity grammar", "[job][quantity]") {
  struct Case {
    const char* text;
    int64_t milli;
  };
  const Case cases[] = {
      {"0", 0},
      {"-0", 0},
      {"1", 1000},
      {"+2", 2000},
      {"500m", 500},
      {"1.5", 1500},
      {"0.1", 100},
      {".5", 500},
      {"1.", 1000},
      {"007", 7000},
      {"1k", 1000000},
      {"1M", 1000000000},
      {"2G", 2000000000000},
      {"1T", 1000000000000000},
      {"9P", 9000000000000000000},
      {"1Ki", 1024000},
      {"4Gi", 4 * kGi * 1000},
      {"0.5Gi", kGi / 2 * 1000},
      {"1.5Mi", 1572864000},
      {"1e3", 1000000},
      {"1E3", 1000000},
      {"1.5e-3", 2},  // 1.5m rounds up to 2m
      {"2e+2", 200000},
      {"1u", 1},  // below milli precision rounds up to 1m
      {"1n", 1},
      {"1500n", 1},
      {"1000001n", 2},
      {"0.0001", 1},
      {"1e-100", 1},
      {"250.000m", 250},
      {"0.000000000000000000000000000000000000001Ki", 1},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    Result<int64_t> r = ParseQuantityMilli(std::string_view(c.text));
    REQUIRE(r.ok());
    CHECK(*r == c.milli);
  }
}

TEST_CASE("ParseQuantityMilli refuses bad quantities", "[job][quantity]") {
  const char* const cases[] = {
      "",     "abc",  "1K",   "1.2.3", "-1",   "-500m", "1 Gi", " 1",   "1Gib",
      "e3",   "1e",   "Gi",   "1e+",   "1ee3", "10P",   "8E",   "16Ei", "99999999999999999999",
      "1e20", "0x10", "1.5.", "+",     ".",    "1m1",   "--1",
  };
  for (const char* text : cases) {
    INFO(text);
    Result<int64_t> r = ParseQuantityMilli(std::string_view(text));
    CHECK_FALSE(r.ok());
  }
}

TEST_CASE("ParseQuantityMilli reads JSON numbers and strings", "[job][quantity]") {
  using nlohmann::json;
  CHECK(*ParseQuantityMilli(json(2)) == 2000);
  CHECK(*ParseQuantityMilli(json(0.5)) == 500);
  CHECK(*ParseQuantityMilli(json(1e3)) == 1000000);
  CHECK(*ParseQuantityMilli(json("64Gi")) == 64 * kGi * 1000);
  CHECK(*ParseQuantityMilli(json(int64_t{0})) == 0);
  CHECK_FALSE(ParseQuantityMilli(json(-1)).ok());
  CHECK_FALSE(ParseQuantityMilli(json(-0.5)).ok());
  CHECK_FALSE(ParseQuantityMilli(json(true)).ok());
  CHECK_FALSE(ParseQuantityMilli(json(nullptr)).ok());
  CHECK_FALSE(ParseQuantityMilli(json::array()).ok());
  CHECK_FALSE(ParseQuantityMilli(json(uint64_t{1} << 62)).ok());
}

TEST_CASE("ParseQuantityMilliSaturating reads a quantity past int64 milli-units as the largest",
          "[job][quantity]") {
  using nlohmann::json;
  for (const json& huge :
       {json("10Pi"), json("1000Pi"), json("8E"), json("16Ei"), json("1e20"), json("1e1000"),
        json("99999999999999999999"), json(uint64_t{1} << 62), json(1e300)}) {
    INFO(huge.dump());
    CHECK_FALSE(ParseQuantityMilli(huge).ok());
    Result<int64_t> r = ParseQuantityMilliSaturating(huge);
    REQUIRE(r.ok());
    CHECK(*r == kMaxQuantityMilli);
  }
  CHECK(*ParseQuantityMilliSaturating(json("4Gi")) == 4 * kGi * 1000);
  CHECK(*ParseQuantityMilliSaturating(json("9P")) == 9000000000000000000);
  CHECK(*ParseQuantityMilliSaturating(json(2)) == 2000);
  // Only size saturates: what is not a quantity is still an error.
  for (const json& bad :
       {json("plenty"), json("-10Pi"), json(-1), json(nullptr), json(true), json("1e")}) {
    INFO(bad.dump());
    CHECK_FALSE(ParseQuantityMilliSaturating(bad).ok());
  }
}

TEST_CASE("ExactQuantityMilli gives whole milli amounts and nothing for a rounded one", "[job][quantity]") {
  using nlohmann::json;
  CHECK(ExactQuantityMilli(json("1")) == 1'000);
  CHECK(ExactQuantityMilli(json("1000m")) == 1'000);
  CHECK(ExactQuantityMilli(json("1Gi")) == (int64_t{1} << 30) * 1'000);
  CHECK(ExactQuantityMilli(json(0.5)) == 500);
  CHECK(ExactQuantityMilli(json(4)) == 4'000);
  CHECK(ExactQuantityMilli(json("1000u")) == 1);
  CHECK_FALSE(ExactQuantityMilli(json("100u")));
  CHECK_FALSE(ExactQuantityMilli(json("0.0001")));
  CHECK_FALSE(ExactQuantityMilli(json("1n")));
  CHECK_FALSE(ExactQuantityMilli(json("abc")));
  CHECK_FALSE(ExactQuantityMilli(json(-1)));
  CHECK_FALSE(ExactQuantityMilli(json(nullptr)));
  CHECK_FALSE(ExactQuantityMilli(json("100000000000000000Ei")));
}

TEST_CASE("FormatQuantityMilli is canonical and reads back", "[job][quantity]") {
  struct Case {
    int64_t milli;
    const char* text;
  };
  const Case cases[] = {
      {0, "0"}, {1, "1m"}, {1000, "1"}, {1500, "1500m"}, {4 * kGi * 1000, "4294967296"}};
  for (const Case& c : cases) {
    CHECK(FormatQuantityMilli(c.milli) == c.text);
    CHECK(*ParseQuantityMilli(std::string_view(c.text)) == c.milli);
  }
}

// A Workload's quantities are int-or-string: the API server refuses 0.5.
TEST_CASE("QuantityNumbersToStrings leaves only integers and strings", "[job][quantity]") {
  using nlohmann::json;
  json pod = json::parse(R"({"spec": {
    "overhead": {"cpu": 0.25, "memory": 64},
    "containers": [
      {"name": "a", "resources": {"requests": {"cpu": 0.5, "memory": "1Gi", "x.io/n": 2},
                                  "limits": {"cpu": 1.0, "memory": 1.5e9}}},
      {"name": "b", "resources": {"requests": {"cpu": 0.0001, "memory": "x"}}},
      {"name": "c"}, "not a container"],
    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": 2.5}}}]}})");
  QuantityNumbersToStrings(pod);
  const json& spec = pod["spec"];
  CHECK(spec["overhead"] == json({{"cpu", "250m"}, {"memory", 64}}));
  CHECK(spec["containers"][0]["resources"]["requests"] ==
        json({{"cpu", "500m"}, {"memory", "1Gi"}, {"x.io/n", 2}}));
  CHECK(spec["containers"][0]["resources"]["limits"] == json({{"cpu", "1"}, {"memory", "1500000000"}}));
  // Below a milli-unit: the number's own text, the same value.
  CHECK(spec["containers"][1]["resources"]["requests"]["cpu"] == "0.0001");
  CHECK(spec["containers"][1]["resources"]["requests"]["memory"] == "x");
  CHECK(spec["initContainers"][0]["resources"]["requests"]["cpu"] == "2500m");
  // Anything else is left alone.
  for (json odd : {json(nullptr), json("x"), json({{"spec", 1}}), json({{"spec", {{"containers", 2}}}})}) {
    json before = odd;
    QuantityNumbersToStrings(odd);
    CHECK(odd == before);
  }
}

}  // namespace
}  // namespace gantry
