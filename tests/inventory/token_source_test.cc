#include "gantry/inventory/token_source.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "test_support.h"

namespace gantry::inventory {
namespace {

namespace fs = std::filesystem;
using gantry::testing::TempDir;
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

}  // namespace
}  // namespace gantry::inventory
