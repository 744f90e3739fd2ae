// The database's files: one daemon per database, and private modes.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "gantry/store/sqlite_store.h"
#include "test_support.h"

namespace gantry {
namespace {

using testing::TempDir;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

SqliteStoreOptions At(const std::string& path) {
  SqliteStoreOptions options;
  options.path = path;
  return options;
}

}  // namespace

TEST_CASE("a database in use by a store is refused to a second, naming the holder", "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  {
    auto first = OpenSqliteStore(At(path));
    REQUIRE(first.ok());
    auto second = OpenSqliteStore(At(path));
    REQUIRE_FALSE(second.ok());
    CHECK(second.status().code() == Code::kUnavailable);
    CHECK_THAT(second.status().message(), Catch::Contains("in use by another gantry"));
    CHECK_THAT(second.status().message(), Catch::Contains("pid " + std::to_string(::getpid())));
    CHECK(ModeOf(path + ".lock") == 0600);
    // The first goes on working.
    REQUIRE((*first)->LoadOutages().ok());
  }
  // Once the first is gone, the database opens again.
  CHECK(OpenSqliteStore(At(path)).ok());
}

TEST_CASE("a database found open to others is made private again", "[store]") {
  TempDir dir;
  const std::string path = dir.File("gantry.db");
  { std::ofstream(path).flush(); }  // an empty file is an empty database
  REQUIRE(::chmod(path.c_str(), 0644) == 0);
  auto store = OpenSqliteStore(At(path));
  REQUIRE(store.ok());
  CHECK(ModeOf(path) == 0600);
}

}  // namespace gantry
