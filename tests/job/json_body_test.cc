// JSON bodies through ParseJobDocument (json_body.cc): repeated keys
// anywhere, the depth limit, which problem is reported first, odd but valid
// bodies, and the template moved rather than copied.
#include <catch2/catch.hpp>
#include <string>

#include "gantry/job/job_document.h"
#include "job_fixtures.h"

namespace gantry {
namespace {

using nlohmann::json;

// text with the first occurrence of from replaced by to (which must exist).
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

DocumentError MustFail(const std::string& body, DocumentFormat format) {
  auto parsed = ParseJobDocument(body, format, std::nullopt);
  REQUIRE(std::holds_alternative<DocumentError>(parsed));
  return std::get<DocumentError>(parsed);
}

// Containers nested in value, itself included.
int Depth(const json& value) {
  int depth = 0;
  for (const json* v = &value; v->is_array(); v = &v->front()) ++depth;
  return depth;
}

// The gantry document as JSON with a value nested `levels` containers deep
// in total (the document's own four included) at spec.template.spec.x.
std::string NestedDocument(int levels) {
  json doc = testing::GantryJobJson();
  json deep = 1;
  for (int i = 0; i < levels - 4; ++i) deep = json::array({deep});
  doc["spec"]["template"]["spec"]["x"] = deep;
  return doc.dump();
}

TEST_CASE("A repeated key is refused wherever it is (400)", "[job][json]") {
  const std::string doc = testing::GantryJobJson().dump();
  const std::string yaml = testing::kGantryJobYaml;
  struct Case {
    const char* name;
    std::string body;
    DocumentFormat format;
    const char* want_message;
  };
  const Case cases[] = {
      {"deep in the template", Replace(doc, R"("cpu":"8")", R"("cpu":"8","cpu":"9")"),
       DocumentFormat::kJson, R"(invalid JSON: duplicate key "cpu")"},
      {"same value again", Replace(doc, R"("cpu":"8")", R"("cpu":"8","cpu":"8")"),
       DocumentFormat::kJson, R"(invalid JSON: duplicate key "cpu")"},
      {"spelled with an escape", Replace(doc, R"("cpu":"8")", R"("cpu":"8","\u0063pu":"8")"),
       DocumentFormat::kJson, R"(invalid JSON: duplicate key "cpu")"},
      {"in metadata.labels", Replace(doc, R"("team":"nlp")", R"("team":"nlp","team":"cv")"),
       DocumentFormat::kJson, R"(invalid JSON: duplicate key "team")"},
      {"in spec", Replace(doc, R"("queue":"team-a")", R"("queue":"team-a","queue":"b")"),
       DocumentFormat::kJson, R"(invalid JSON: duplicate key "queue")"},
      {"the first of several",
       Replace(Replace(doc, R"("team":"nlp")", R"("team":"a","team":"b")"), R"("cpu":"8")",
               R"("cpu":"8","cpu":"9")"),
       DocumentFormat::kJson, R"(invalid JSON: duplicate key "team")"},
      // Regression: with the parse callback a repeated empty key was kept
      // silently (the last value won), unlike any other key and unlike YAML.
      {"regression: a repeated empty key was accepted",
       Replace(doc, R"("cpu":"8")", R"("":1,"":2,"cpu":"8")"), DocumentFormat::kJson,
       R"(invalid JSON: duplicate key "")"},
      {"YAML, deep in the template",
       Replace(yaml, R"(requests: {cpu: "8",)", R"(requests: {cpu: "8", cpu: "9",)"),
       DocumentFormat::kYaml, R"(duplicate key "cpu")"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    DocumentError e = MustFail(c.body, c.format);
    CHECK(e.code == 400);
    CHECK(e.causes.empty());
    if (c.format == DocumentFormat::kJson) {
      CHECK(e.message == c.want_message);
    } else {
      CHECK_THAT(e.message,
                 Catch::StartsWith("invalid YAML: line ") && Catch::EndsWith(c.want_message));
    }
  }
}

TEST_CASE("A JSON body nests at most 128 levels", "[job][json]") {
  auto at_limit = ParseJobDocument(NestedDocument(128), DocumentFormat::kJson, std::nullopt);
  REQUIRE(std::holds_alternative<JobSpec>(at_limit));
  CHECK(Depth(std::get<JobSpec>(at_limit).template_object["spec"]["x"]) == 124);
  DocumentError e = MustFail(NestedDocument(129), DocumentFormat::kJson);
  CHECK(e.code == 400);
  CHECK(e.message == "invalid JSON: document is nested too deeply");
}

TEST_CASE("A syntax error is reported before depth, depth before a repeated key", "[job][json]") {
  const std::string dup = R"({"a":1,"a":2,"b":)";
  const std::string deep = std::string(200, '[') + std::string(200, ']');
  CHECK(MustFail(dup + deep + "}", DocumentFormat::kJson).message ==
        "invalid JSON: document is nested too deeply");
  CHECK_THAT(MustFail(dup + deep, DocumentFormat::kJson).message,
             Catch::StartsWith("invalid JSON: parse error at line 1, column "));
  CHECK_THAT(MustFail(dup + "1,}", DocumentFormat::kJson).message,
             Catch::StartsWith("invalid JSON: parse error at line 1, column "));
  CHECK(MustFail(dup + "1}", DocumentFormat::kJson).message ==
        R"(invalid JSON: duplicate key "a")");
}

TEST_CASE("Odd but valid bodies give the same job", "[job][json]") {
  const std::string doc = testing::GantryJobJson().dump();
  const std::string want = SpecToJson(testing::MustParse(doc, DocumentFormat::kJson)).dump();
  // A byte-order mark, and an integer beyond 64 bits (a float then, as
  // nlohmann reads it) in a field gantry passes through.
  CHECK(SpecToJson(testing::MustParse("\xef\xbb\xbf" + doc, DocumentFormat::kJson)).dump() == want);
  JobSpec big = testing::MustParse(
      Replace(doc, R"("parallelism":4)", R"("parallelism":4,"x":18446744073709551616)"),
      DocumentFormat::kJson);
  CHECK(big.template_object["spec"]["x"].is_number_float());
  // Escapes and raw UTF-8 are the same text (in an annotation: a label's
  // value may not hold them).
  std::string escaped =
      Replace(doc, R"({"app":"llama"})", R"({"app":"llama"},"annotations":{"n":"caf\u00e9 \ud83d\ude00\n"})");
  std::string raw = Replace(doc, R"({"app":"llama"})",
                            "{\"app\":\"llama\"},\"annotations\":{\"n\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\\n\"}");
  JobSpec a = testing::MustParse(escaped, DocumentFormat::kJson);
  JobSpec b = testing::MustParse(raw, DocumentFormat::kJson);
  CHECK(a.template_object["metadata"]["annotations"]["n"] == "caf\xc3\xa9 \xf0\x9f\x98\x80\n");
  CHECK(SpecToJson(a).dump() == SpecToJson(b).dump());
}

TEST_CASE("ParseJobJson copies the template, ParseJobDocument moves it: same job", "[job][json]") {
  for (const char* yaml : {testing::kGantryJobYaml, testing::kBatchManifestYaml,
                           testing::kJobSetYaml, testing::kPyTorchJobYaml}) {
    json doc = std::get<json>(YamlToJson(yaml));
    auto from_json = ParseJobJson(doc, std::nullopt);
    REQUIRE(std::holds_alternative<JobSpec>(from_json));
    JobSpec moved = testing::MustParse(doc.dump(), DocumentFormat::kJson);
    const JobSpec& copied = std::get<JobSpec>(from_json);
    CHECK(SpecToJson(moved).dump() == SpecToJson(copied).dump());
    CHECK(moved.template_object == copied.template_object);
    CHECK_FALSE(moved.template_object.is_null());
  }
}

}  // namespace
}  // namespace gantry
