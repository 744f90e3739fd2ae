// TokenAuth::Load: a tokens file that says something other than what its
// writer meant is refused, with the entry and field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "gantry/api/token_auth.h"
#include "test_support.h"

namespace gantry::testing {
namespace {

const std::string kToken = "team-a-token-0123456789";

}  // namespace

TEST_CASE("a tokens file with a null, doubled or wrongly typed field is refused by name", "[api][auth]") {
  struct Case {
    const char* entry;
    const char* field;
  };
  const std::string token = "  token: " + kToken + "\n";
  const Case cases[] = {
      {"- subject: ~\n  namespaces: [team-a]\n", "subject"},
      {"- subject:\n  namespaces: [team-a]\n", "subject"},
      {"- subject: [alice]\n  namespaces: [team-a]\n", "subject"},
      {"- subject: alice\n  namespaces: [~]\n", "namespaces"},
      {"- subject: alice\n  namespaces: [team-a, {a: b}]\n", "namespaces"},
      {"- subject: alice\n  namespaces: [team-a]\n  namespaces: ['*']\n", "namespaces"},
      {"- subject: alice\n  subject: bob\n  namespaces: [team-a]\n", "subject"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: high\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: 3000000000\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: [1]\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  priorityClasses: [low]\n", "priorityClasses"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: 5\n  priorityClasses: low\n", "priorityClasses"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: 5\n  priorityClasses: [~]\n", "priorityClasses"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: 5\n  priorityClasses: [Batch_Low]\n",
       "priorityClasses"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: \"10\"\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: 0x10\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: 010\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: 1.5\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: true\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: +\n", "maxPriority"},
      {"- subject: alice\n  namespaces: [team-a]\n  maxPriority: 2147483648\n", "maxPriority"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    const std::string path = dir.File("tokens.yaml");
    WriteFile(path, std::string("tokens:\n") + c.entry + token);
    INFO(c.entry);
    auto loaded = api::TokenAuth::Load(path);
    REQUIRE_FALSE(loaded.ok());
    CHECK_THAT(loaded.status().message(), Catch::Contains(std::string("tokens[0].") + c.field));
  }
  // Caps written as decimal integers load, negative ones too.
  for (const char* cap : {"0", "-5", "+7", "2147483647", "-2147483648"}) {
    TempDir caps;
    const std::string file = caps.File("tokens.yaml");
    WriteFile(file, std::string("tokens:\n- subject: alice\n  namespaces: [team-a]\n  maxPriority: ") + cap + "\n" +
                        token);
    INFO(cap);
    CHECK(api::TokenAuth::Load(file).ok());
  }
  // The same entry, well formed, loads; a quoted "null" is a name like any.
  TempDir dir;
  const std::string path = dir.File("tokens.yaml");
  WriteFile(path, "tokens:\n- subject: \"null\"\n  namespaces: [team-a]\n" + token);
  CHECK(api::TokenAuth::Load(path).ok());
}

TEST_CASE("a tokens file that group or others may write is refused: whoever may write it may grant any namespace",
          "[api][auth]") {
  TempDir dir;
  const std::string path = dir.File("tokens.yaml");
  WriteFile(path, "tokens:\n- subject: alice\n  namespaces: [team-a]\n  tokenSha256: " + std::string(64, 'a') + "\n");
  REQUIRE(api::TokenAuth::Load(path).ok());  // 0644
  namespace fs = std::filesystem;
  for (fs::perms writable : {fs::perms::group_write, fs::perms::others_write}) {
    fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write | writable);
    auto loaded = api::TokenAuth::Load(path);
    REQUIRE_FALSE(loaded.ok());
    CHECK_THAT(loaded.status().message(), Catch::Contains("writable by group or others") &&
                                              Catch::Contains("chmod 600 " + path));
  }
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
  CHECK(api::TokenAuth::Load(path).ok());
}

TEST_CASE("the Authorization scheme's name is taken in any case, as HTTP says", "[api][auth]") {
  TempDir dir;
  const std::string path = dir.File("tokens.yaml");
  WriteFile(path, "tokens:\n- subject: alice\n  namespaces: [team-a]\n  token: " + kToken + "\n");
  auto auth = api::TokenAuth::Load(path);
  REQUIRE(auth.ok());
  struct Row {
    std::string header;
    bool ok;
  };
  const Row rows[] = {
      {"Bearer " + kToken, true},       {"bearer " + kToken, true},  {"BEARER " + kToken, true},
      {"Bearer   " + kToken, true},     {"Bearer " + kToken + "x", false},
      {"Basic " + kToken, false},       {"Bearer", false},           {"Bearer    ", false},
      {"Bearer" + kToken, false},       {"", false},
  };
  for (const Row& row : rows) {
    INFO("'" << row.header << "'");
    http::Request req;
    if (!row.header.empty()) req.headers["authorization"] = row.header;
    auto principal = (*auth)->Authenticate(req);
    CHECK(principal.ok() == row.ok);
    if (principal.ok()) CHECK(principal->subject == "alice");
  }
}

}  // namespace gantry::testing
