#include <catch2/catch.hpp>
#include <limits>

#include "gantry/job/job_document.h"

namespace gantry {
namespace {

using nlohmann::json;

TEST_CASE("YamlToJson types plain scalars as kubectl reads them", "[job][yaml]") {
  struct Case {
    const char* yaml;  // the value of key v
    json want;
  };
  const Case cases[] = {
      {"v: 1", json(uint64_t{1})},
      {"v: -1", json(int64_t{-1})},
      {"v: +3", json(uint64_t{3})},
      {"v: 0", json(uint64_t{0})},
      {"v: -0", json(int64_t{0})},
      {"v: 0x1F", json(uint64_t{31})},
      {"v: 0o17", json(uint64_t{15})},
      {"v: 1.5", json(1.5)},
      {"v: .5", json(0.5)},
      {"v: 1e3", json(1000.0)},
      {"v: -2.5E-1", json(-0.25)},
      {"v: 18446744073709551616", json(18446744073709551616.0)},
      {"v: true", json(true)},
      {"v: False", json(false)},
      {"v: TRUE", json(true)},
      {"v: yes", json("yes")},
      {"v: on", json("on")},
      {"v: null", json(nullptr)},
      {"v: ~", json(nullptr)},
      {"v:", json(nullptr)},
      {"v: '1'", json("1")},
      {"v: \"true\"", json("true")},
      {"v: !!str 1", json("1")},
      {"v: _1", json("_1")},
      {"v: 1_000Mi", json("1_000Mi")},
      {"v: 12:30", json("12:30")},
      {"v: 64Gi", json("64Gi")},
      {"v: 0x", json("0x")},
      {"v: 0100Mi", json("0100Mi")},
      {"v: '0440'", json("0440")},
      {"v: 08.5", json(8.5)},
      {"v: |\n  text\n", json("text\n")},
      {"v: [1, a, {b: null}]", json::parse(R"([1, "a", {"b": null}])")},
  };
  for (const Case& c : cases) {
    INFO(c.yaml);
    auto got = YamlToJson(c.yaml);
    REQUIRE(std::holds_alternative<json>(got));
    const json& v = std::get<json>(got).at("v");
    CHECK(v == c.want);
    CHECK(v.type() == c.want.type());
  }
}

// kubectl (sigs.k8s.io/yaml over go-yaml v2) reads integers by YAML 1.1:
// a leading 0 is octal, and the file mode a Secret volume gets from
// `defaultMode: 0440` is 0440 (288), not 440.
TEST_CASE("YamlToJson reads YAML 1.1 integers as kubectl does", "[job][yaml]") {
  struct Case {
    const char* yaml;
    json want;
  };
  const Case cases[] = {
      {"v: 0440", json(uint64_t{0440})},
      {"v: 0755", json(uint64_t{0755})},
      {"v: 00", json(uint64_t{0})},
      {"v: -010", json(int64_t{-8})},
      {"v: +010", json(uint64_t{8})},
      {"v: 0x1F", json(uint64_t{31})},
      {"v: 0X1f", json(uint64_t{31})},
      {"v: -0x10", json(int64_t{-16})},
      {"v: 0o17", json(uint64_t{15})},
      {"v: 0b1010", json(uint64_t{10})},
      {"v: 1_000", json(uint64_t{1000})},
      {"v: 0x_ff_ff", json(uint64_t{0xffff})},
      {"v: 1_000.5", json(1000.5)},
      {"v: -9223372036854775808", json(std::numeric_limits<int64_t>::min())},
      {"v: 18446744073709551615", json(std::numeric_limits<uint64_t>::max())},
  };
  for (const Case& c : cases) {
    INFO(c.yaml);
    auto got = YamlToJson(c.yaml);
    REQUIRE(std::holds_alternative<json>(got));
    const json& v = std::get<json>(got).at("v");
    CHECK(v == c.want);
    CHECK(v.type() == c.want.type());
  }
  // Where it matters: the mode a pod's volume files get.
  auto doc = YamlToJson("volumes:\n- name: creds\n  secret: {secretName: creds, defaultMode: 0440}\n");
  REQUIRE(std::holds_alternative<json>(doc));
  CHECK(std::get<json>(doc)["volumes"][0]["secret"]["defaultMode"] == 288);
}

TEST_CASE("YamlToJson keys, anchors and document separators", "[job][yaml]") {
  auto got = YamlToJson("1: a\ntrue: b\nbase: &x {k: 1}\ncopy: *x\n");
  REQUIRE(std::holds_alternative<json>(got));
  const json& doc = std::get<json>(got);
  CHECK(doc.at("1") == "a");
  CHECK(doc.at("true") == "b");
  CHECK(doc.at("copy") == doc.at("base"));

  auto trailing = YamlToJson("---\na: 1\n---\n");
  REQUIRE(std::holds_alternative<json>(trailing));
  CHECK(std::get<json>(trailing) == json{{"a", 1}});
}

TEST_CASE("YamlToJson takes merge keys as kubectl does: the map's own keys win, then the earlier merged map's",
          "[job][yaml]") {
  auto got = YamlToJson(R"(containers:
- &c {name: main, image: "busybox:1", resources: {requests: {cpu: "1"}}}
- <<: *c
  name: side
defaults: &d {a: 1, b: 1}
more: &m {b: 2, c: 2}
both:
  <<: [*d, *m]
  c: 3
quoted:
  "<<": {x: 1}
)");
  REQUIRE(std::holds_alternative<json>(got));
  const json& doc = std::get<json>(got);
  CHECK(doc["containers"][1] ==
        json::parse(R"({"name": "side", "image": "busybox:1", "resources": {"requests": {"cpu": "1"}}})"));
  CHECK(doc["containers"][0]["name"] == "main");
  CHECK(doc["both"] == json::parse(R"({"a": 1, "b": 1, "c": 3})"));
  CHECK(doc["quoted"] == json::parse(R"({"<<": {"x": 1}})"));  // a quoted key is a key
  for (const char* bad : {"a:\n  <<: 5\n", "a:\n  <<: [1, {x: 1}]\n", "a:\n  <<: {x: 1}\n  <<: {y: 1}\n"}) {
    INFO(bad);
    auto refused = YamlToJson(bad);
    REQUIRE(std::holds_alternative<DocumentError>(refused));
    CHECK(std::get<DocumentError>(refused).code == 400);
  }
}

TEST_CASE("YamlToJson refuses what JSON cannot hold, with the position", "[job][yaml]") {
  struct Case {
    const char* yaml;
    const char* message_part;
  };
  const Case cases[] = {
      {"v: .inf", "line 1, column 4"},
      {"v: -.Inf", "no JSON representation"},
      {"v: .nan", "no JSON representation"},
      {"a: 1\nb: 2\na: 3\n", "line 3, column 1: duplicate key \"a\""},
      {"a: [1, 2\n", "line 2"},
      {"a: 1\n  b: 2\n", "line 2"},
      {"? [a]\n: 1\n", "map keys must be scalars"},
      {"a: 1\n---\nb: 2\n", "exactly one YAML document, got 2"},
      {"", "no document"},
      {"v: 0x1FFFFFFFFFFFFFFFFF", "out of range"},
      {"v: 02000000000000000000000", "out of range"},
      {"v: -0x8000000000000001", "out of range"},
      {"v: 08", "line 1, column 4: 08 is ambiguous"},
      {"v: 0489", "leading 0 makes an octal integer"},
      {"v: -09", "ambiguous"},
      {"v: 1e999", "out of range"},
  };
  for (const Case& c : cases) {
    INFO(c.yaml);
    auto got = YamlToJson(c.yaml);
    REQUIRE(std::holds_alternative<DocumentError>(got));
    const DocumentError& e = std::get<DocumentError>(got);
    CHECK(e.code == 400);
    CHECK_THAT(e.message, Catch::Contains(c.message_part));
  }
  // Nesting deeper than the parser's own limit is told as nesting, with
  // where, as nesting within it is (not yaml-cpp's "bad file").
  for (const std::string open : {"[", "{a: "}) {
    std::string text = "v: ";
    for (int i = 0; i < 3000; ++i) text += open;
    auto got = YamlToJson(text);
    REQUIRE(std::holds_alternative<DocumentError>(got));
    const std::string& message = std::get<DocumentError>(got).message;
    INFO(message);
    CHECK_THAT(message, Catch::StartsWith("invalid YAML: line 1, column "));
    CHECK_THAT(message, Catch::EndsWith("document is nested too deeply"));
  }
}

TEST_CASE("YamlToJson stops alias expansion bombs", "[job][yaml]") {
  std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    yaml += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) yaml += (j ? ", *a" : "*a") + std::to_string(i - 1);
    yaml += "]\n";
  }
  auto got = YamlToJson(yaml);
  REQUIRE(std::holds_alternative<DocumentError>(got));
  CHECK(std::get<DocumentError>(got).code == 400);
}

TEST_CASE("YamlToJson stops a large scalar named by many aliases", "[job][yaml]") {
  // About 100 KB of text, 10^5 nodes after expansion (under the node limit),
  // 10 GB of text after it.
  std::string yaml = "s: &s \"" + std::string(100'000, 'x') + "\"\n";
  yaml += "a: &a [*s, *s, *s, *s, *s, *s, *s, *s, *s, *s]\n";
  for (const char* name : {"b", "c", "d", "e"}) {
    const char prev = static_cast<char>(name[0] - 1);
    yaml += std::string(name) + ": &" + name + " [";
    for (int j = 0; j < 10; ++j) yaml += std::string(j ? ", *" : "*") + prev;
    yaml += "]\n";
  }
  auto got = YamlToJson(yaml);
  REQUIRE(std::holds_alternative<DocumentError>(got));
  CHECK(std::get<DocumentError>(got).code == 400);
  CHECK_THAT(std::get<DocumentError>(got).message, Catch::Contains("MiB of text"));
}

TEST_CASE("YamlToJson refuses text that is not UTF-8, with where it is", "[job][yaml]") {
  struct Case {
    std::string yaml;
    const char* where;
  };
  const Case cases[] = {
      {"a: 1\nargs: [\"caf\xE9\"]\n", "line 2, column 12: byte 0xE9"},  // Latin-1
      {"k: \xC0\xAF\n", "line 1, column 4: byte 0xC0"},                    // overlong "/"
      {"k: \xED\xA0\x80\n", "line 1, column 4: byte 0xED"},                // a surrogate
      {"k: \xF4\x90\x80\x80\n", "line 1, column 4: byte 0xF4"},            // above U+10FFFF
      {"k: ab\xE2\x82", "line 1, column 6: byte 0xE2"},                    // cut short at the end
  };
  for (const Case& c : cases) {
    CAPTURE(c.where);
    auto got = YamlToJson(c.yaml);
    REQUIRE(std::holds_alternative<DocumentError>(got));
    CHECK(std::get<DocumentError>(got).code == 400);
    CHECK_THAT(std::get<DocumentError>(got).message, Catch::Contains(c.where));
    // The message itself is valid UTF-8: it can be put in a JSON answer.
    CHECK_NOTHROW(json(std::get<DocumentError>(got).message).dump());
  }
  // Well-formed text of 2, 3 and 4 bytes a character passes through.
  auto ok = YamlToJson("k: \"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x9A\x80\"\n");
  REQUIRE(std::holds_alternative<json>(ok));
  CHECK(std::get<json>(ok)["k"] == "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x9A\x80");
}

}  // namespace
TEST_CASE("a YAML error below a quoted value left open names the line that opened it", "[job][yaml]") {
  // yaml-cpp reads on to the next quote, and fails far below.
  const std::string open = "metadata:\n  name: \"train-1\n  namespace: team-a\nspec:\n  queue: \"a\"\n  x: [\n";
  auto got = YamlToJson(open);
  REQUIRE(std::holds_alternative<DocumentError>(got));
  const std::string& message = std::get<DocumentError>(got).message;
  INFO(message);
  CHECK_THAT(message, Catch::StartsWith("invalid YAML: line "));
  CHECK_THAT(message, Catch::EndsWith("(line 2 opens a quoted string that does not close on that line:   name: "
                                      "\"train-1)"));
  // With no quote left, it took the rest of the document into the string,
  // without a word: refused, at its line.
  auto swallowed = YamlToJson("metadata:\n  name: \"train-1\n  namespace: team-a\nspec:\n  queue: default\n");
  REQUIRE(std::holds_alternative<DocumentError>(swallowed));
  CHECK(std::get<DocumentError>(swallowed).message ==
        "invalid YAML: line 2, column 9: a quoted string that never closes (yaml-cpp read the rest of the document "
        "into it)");
  // A quoted string over several lines that closes, and a block scalar
  // holding a quote that never closes, are fine.
  auto multi = YamlToJson("a: \"one\n  two\"\nb: |\n  echo \"unclosed\n  done\nc: 1\n");
  REQUIRE(std::holds_alternative<nlohmann::json>(multi));
  CHECK(std::get<nlohmann::json>(multi)["a"] == "one two");
  CHECK(std::get<nlohmann::json>(multi)["c"] == 1);
  // Quotes closed, escaped or doubled, and a list item's: no hint.
  for (const char* fine : {"a: \"x\\\"y\"\nb: [\n", "a: 'it''s'\nb: [\n", "- \"x\"\n- [\n", "# a \"quote\nb: [\n"}) {
    auto error = YamlToJson(fine);
    REQUIRE(std::holds_alternative<DocumentError>(error));
    INFO(std::get<DocumentError>(error).message);
    CHECK(std::get<DocumentError>(error).message.find("opens a quoted string") == std::string::npos);
  }
  // A list item's quote left open is named as well.
  auto item = YamlToJson("args:\n- 'one\n- two\nx: [\n");
  REQUIRE(std::holds_alternative<DocumentError>(item));
  CHECK_THAT(std::get<DocumentError>(item).message, Catch::StartsWith("invalid YAML: line 2, column 3: a quoted "
                                                                      "string that never closes"));
  // A string closed, then more on its line: said so, not "does not close".
  auto after = YamlToJson("a: 1\nbad: \"x\" y\nc: 2\n");
  REQUIRE(std::holds_alternative<DocumentError>(after));
  INFO(std::get<DocumentError>(after).message);
  CHECK_THAT(std::get<DocumentError>(after).message,
             Catch::EndsWith("(line 2 has more after a quoted string's closing quote: bad: \"x\" y)"));
  // A quoted string over several lines that closes before the error is not
  // blamed for it.
  auto wrapped = YamlToJson("a: \"Nightly training\n  run\"\nb: 1\n  c: [\n");
  REQUIRE(std::holds_alternative<DocumentError>(wrapped));
  CHECK(std::get<DocumentError>(wrapped).message.find("opens a quoted string") == std::string::npos);
  // Valid documents the line-by-line look could take for a quote left open:
  // a list item's block scalar holding a lone quote, a tagged block scalar,
  // a quoted string continued on a line that looks like a key.
  for (const char* valid : {"args:\n- |\n  python -c \"\n  import torch\n  \"\n- x\n",
                            "a: !!str |\n  say \"hi\n",
                            "description: \"Nightly run\n  owner: 'ml-team\"\nb: 1\n"}) {
    INFO(valid);
    CHECK(std::holds_alternative<nlohmann::json>(YamlToJson(valid)));
  }
}

}  // namespace gantry

namespace gantry {
namespace {

TEST_CASE("a YAML stream of several documents is read in order, an empty one skipped, its errors at the file's line",
          "[job][yaml]") {
  auto three = YamlStreamToJson("a: 1\n---\n---\nb: 010\n---\nc: [x]\n---\n", 10);
  REQUIRE(std::holds_alternative<std::vector<nlohmann::json>>(three));
  const auto& docs = std::get<std::vector<nlohmann::json>>(three);
  REQUIRE(docs.size() == 3);
  CHECK(docs[0]["a"] == 1);
  CHECK(docs[1]["b"] == 8);  // YAML 1.1 octal, as in a single document
  CHECK(docs[2]["c"][0] == "x");

  // An ambiguous number in the second document: told at its line in the file.
  auto bad = YamlStreamToJson("a: 1\n---\nb: 2\nc: 0489\n", 10);
  REQUIRE(std::holds_alternative<DocumentError>(bad));
  CHECK_THAT(std::get<DocumentError>(bad).message, Catch::Contains("line 4"));

  auto many = YamlStreamToJson("a: 1\n---\nb: 2\n---\nc: 3\n", 2);
  REQUIRE(std::holds_alternative<DocumentError>(many));
  CHECK(std::get<DocumentError>(many).message == "expected at most 2 YAML documents, got 3");
  auto none = YamlStreamToJson("---\n---\n", 2);
  REQUIRE(std::holds_alternative<DocumentError>(none));
  CHECK(std::get<DocumentError>(none).message == "the YAML body holds no document");

  // The server's reader still takes one job per request.
  auto two = YamlToJson("a: 1\n---\nb: 2\n");
  REQUIRE(std::holds_alternative<DocumentError>(two));
  CHECK(std::get<DocumentError>(two).message == "expected exactly one YAML document, got 2");
}

}  // namespace
}  // namespace gantry
