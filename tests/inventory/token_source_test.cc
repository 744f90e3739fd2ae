#include "gantry/inventory/token_source.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "test_support.h"

namespace gantry::inventory {
namespace {

namespace fs = std::filesystem;
using gantry::testing::TempDir;
using gantry::testing::WriteExecutable;
using gantry::testing::WriteFile;

// Rewrites the file and moves its mtime by `seconds`, as a kubelet rotation
// (a new file swapped in) would; no sleeping for the clock to tick.
void Rotate(const std::string& path, const std::string& token, int seconds) {
  const fs::file_time_type before = fs::last_write_time(path);
  WriteFile(path, token);
  fs::last_write_time(path, before + std::chrono::seconds(seconds));
}

TEST_CASE("A fixed token is returned trimmed", "[inventory][token]") {
  auto source = TokenSource::Static("  abc\n");
  CHECK(*source->Token() == "abc");
  CHECK(source->path().empty());
}

TEST_CASE("A token file is re-read when it is rotated", "[inventory][token]") {
  TempDir tmp;
  const std::string path = tmp.File("token");
  WriteFile(path, "token-one\n");
  auto source = TokenSource::FromFile(path);
  CHECK(*source->Token() == "token-one");
  CHECK(*source->Token() == "token-one");
  CHECK(source->reads() == 1);  // unchanged file: not re-read

  Rotate(path, "token-two-rotated\n", 5);
  CHECK(*source->Token() == "token-two-rotated");
  CHECK(source->reads() == 2);

  Rotate(path, "token-333-rotated\n", 5);  // same size, new mtime
  CHECK(*source->Token() == "token-333-rotated");
}

TEST_CASE("A token file briefly missing keeps the last good token", "[inventory][token]") {
  TempDir tmp;
  const std::string path = tmp.File("token");
  WriteFile(path, "token-one");
  auto source = TokenSource::FromFile(path);
  REQUIRE(source->Token().ok());
  fs::remove(path);
  Result<std::string> still = source->Token();
  REQUIRE(still.ok());
  CHECK(*still == "token-one");
}

TEST_CASE("Token file errors name the path, not the content", "[inventory][token]") {
  TempDir tmp;
  auto missing = TokenSource::FromFile(tmp.File("absent"));
  Result<std::string> r = missing->Token();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kIo);
  CHECK_THAT(r.status().message(), Catch::Matchers::Contains(tmp.File("absent")));

  WriteFile(tmp.File("blank"), " \n");
  Result<std::string> blank = TokenSource::FromFile(tmp.File("blank"))->Token();
  REQUIRE_FALSE(blank.ok());
  CHECK(blank.status().message() == "token file " + tmp.File("blank") + ": is empty");
}

TEST_CASE("A token file of more than one line is refused, not sent as headers of its own", "[inventory][token]") {
  TempDir tmp;
  WriteFile(tmp.File("two-lines"), "abc123token\r\nImpersonate-User: system:admin\n");
  Result<std::string> r = TokenSource::FromFile(tmp.File("two-lines"))->Token();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message() == "token file " + tmp.File("two-lines") +
                                    ": holds a line break or another control character; it must hold one token on "
                                    "one line");
  WriteFile(tmp.File("spaced"), "abc 123\n");
  Result<std::string> spaced = TokenSource::FromFile(tmp.File("spaced"))->Token();
  REQUIRE_FALSE(spaced.ok());
  CHECK_THAT(spaced.status().message(), Catch::Matchers::Contains("holds a space"));
  // Rotated to such a file, the last good token stays.
  WriteFile(tmp.File("rotated"), "token-one\n");
  auto source = TokenSource::FromFile(tmp.File("rotated"));
  REQUIRE(source->Token().ok());
  CHECK(source->problem().empty());
  WriteFile(tmp.File("rotated"), "token-two\nX-Extra: 1\n");
  Result<std::string> kept = source->Token();
  REQUIRE(kept.ok());
  CHECK(*kept == "token-one");
  // What gantry clusters shows meanwhile, naming the file, not the token.
  CHECK_THAT(source->problem(), Catch::Matchers::Contains("token file " + tmp.File("rotated")) &&
                                    Catch::Matchers::Contains("the token read before is sent until the file changes"));
  CHECK(source->problem().find("token-two") == std::string::npos);
  Rotate(tmp.File("rotated"), "token-three\n", 5);
  CHECK(*source->Token() == "token-three");
  CHECK(source->problem().empty());
  CHECK(BearerTokenProblem("eyJhbGciOi.J9-_~+/=").empty());
  CHECK_FALSE(BearerTokenProblem(std::string("a\0b", 3)).empty());
}

TEST_CASE("SameSource compares how tokens are got, without getting one", "[inventory][token]") {
  TempDir tmp;
  WriteFile(tmp.File("token"), "token-one");
  CHECK(TokenSource::Static("abc")->SameSource(*TokenSource::Static("abc\n")));
  CHECK_FALSE(TokenSource::Static("abc")->SameSource(*TokenSource::Static("abd")));
  CHECK(TokenSource::FromFile(tmp.File("token"))
            ->SameSource(*TokenSource::FromFile(tmp.File("token"))));
  CHECK_FALSE(TokenSource::FromFile(tmp.File("token"))
                  ->SameSource(*TokenSource::FromFile(tmp.File("other"))));
  CHECK_FALSE(
      TokenSource::FromFile(tmp.File("token"))->SameSource(*TokenSource::Static("token-one")));

  // A plugin that would record a run if it were started.
  WriteExecutable(tmp.File("plugin"), "#!/bin/sh\ntouch \"$(dirname \"$0\")/ran\"\nexit 1\n");
  ExecConfig config;
  config.api_version = std::string(kExecApiV1);
  config.command = tmp.File("plugin");
  config.interactive_mode = "Never";
  auto a = TokenSource::FromExec(config);
  auto b = TokenSource::FromExec(config);
  CHECK(a->SameSource(*b));
  CHECK(a->exec() != nullptr);
  CHECK(a->path().empty());
  config.args = {"--profile", "other"};
  CHECK_FALSE(a->SameSource(*TokenSource::FromExec(config)));
  CHECK_FALSE(a->SameSource(*TokenSource::Static("abc")));
  CHECK_FALSE(TokenSource::Static("abc")->SameSource(*a));
  CHECK_FALSE(fs::exists(tmp.File("ran")));
}

TEST_CASE("Invalidate leaves a fixed token and a token file as they are", "[inventory][token]") {
  TempDir tmp;
  WriteFile(tmp.File("token"), "token-one");
  auto fixed = TokenSource::Static("abc");
  fixed->Invalidate("abc");
  CHECK(*fixed->Token() == "abc");
  auto file = TokenSource::FromFile(tmp.File("token"));
  REQUIRE(file->Token().ok());
  file->Invalidate("token-one");
  CHECK(*file->Token() == "token-one");
  CHECK(file->reads() == 1);
}

}  // namespace
}  // namespace gantry::inventory
