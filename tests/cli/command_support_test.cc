// Str: the text at a JSON pointer of an answer, as every command reads it.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "api_client.h"
#include "command_support.h"
#include "output.h"

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

TEST_CASE("a failed request's hint names the other scheme when the URL's looks wrong for the daemon", "[cli]") {
  // https:// to a plain HTTP daemon: OpenSSL reads its answer as no TLS record.
  const std::string plain = SchemeHint("https://127.0.0.1:7070", "TLS handshake with 127.0.0.1:7070: wrong version "
                                       "number (SSL routines)");
  CHECK(plain.find("does not speak TLS") != std::string::npos);
  CHECK(plain.find("use http://127.0.0.1:7070") != std::string::npos);
  // http:// to a TLS daemon: it closes without an answer.
  const std::string tls = SchemeHint("http://gantry.example:7070", "GET /api/v1/jobs: end of stream");
  CHECK(tls.find("use https://gantry.example:7070") != std::string::npos);
  // Nothing to say for other failures, or a scheme that fits.
  CHECK(SchemeHint("http://127.0.0.1:1", "connect 127.0.0.1:1: Connection refused") == "");
  CHECK(SchemeHint("https://127.0.0.1:7070", "certificate verify failed") == "");
  CHECK(SchemeHint("https://127.0.0.1:7070", "end of stream") == "");
}

}  // namespace gantry::cli

namespace gantry::cli {

TEST_CASE("-o yaml writes an empty map or list beside its key and quotes strings a reader would retype", "[cli]") {
  const nlohmann::json j = nlohmann::json::parse(
      R"({"metadata": {"labels": {}, "name": "x"}, "spec": {"podSets": [], "list": [{}, [], "08", "true", ""]}})");
  const std::string yaml = ToYaml(j);
  CHECK(yaml.find("labels: {}\n") != std::string::npos);
  CHECK(yaml.find("podSets: []\n") != std::string::npos);
  CHECK(yaml.find("  - {}\n") != std::string::npos);
  CHECK(yaml.find("  - []\n") != std::string::npos);
  // Strings a YAML reader would retype stay strings.
  CHECK(yaml.find("\"08\"") != std::string::npos);
  CHECK(yaml.find("\"true\"") != std::string::npos);
  CHECK(yaml.find("- \"\"") != std::string::npos);
}

}  // namespace gantry::cli
