#include "gantry/inventory/cluster_dir.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "test_support.h"

namespace gantry::inventory {
namespace {

using gantry::testing::TempDir;
using gantry::testing::WriteFile;

std::string ClusterYaml(const std::string& name, const std::string& region = "eu") {
  return "name: " + name + "\nkubeconfig: kube.yaml\nregion: " + region + "\n";
}

std::vector<std::string> Names(const ClusterDirLoad& load) {
  std::vector<std::string> names;
  for (const ClusterConfig& c : load.clusters) names.push_back(c.name);
  return names;
}

struct ClustersDir {
  TempDir tmp;
  std::string dir = tmp.File("clusters.d");
  ClustersDir() { std::filesystem::create_directories(dir); }
  std::string Put(const std::string& file, const std::string& yaml) const {
    WriteFile(dir + "/" + file, yaml);
    return dir + "/" + file;
  }
};

TEST_CASE("One bad file is reported and the other clusters load", "[inventory][dir]") {
  ClustersDir d;
  d.Put("a.yaml", ClusterYaml("alpha"));
  const std::string bad = d.Put("b.yaml", ClusterYaml("beta") + "cordoned: perhaps\n");
  d.Put("c.yaml", ClusterYaml("gamma"));
  d.Put(".hidden.yaml", "garbage: [");
  d.Put("notes.txt", "not a cluster");
  const ClusterDirLoad load = LoadClusterDir(d.dir, {});
  CHECK(load.dir_status.ok());
  CHECK(Names(load) == std::vector<std::string>{"alpha", "gamma"});
  REQUIRE(load.errors.size() == 1);
  CHECK(load.errors[0].file == bad);
  CHECK_FALSE(load.errors[0].kept_last_good);
  CHECK(load.errors[0].status.message() ==
        "clusters.d/b.yaml: line 4: cordoned: must be true or false");
}

TEST_CASE("Clusters are ordered by name, not by file", "[inventory][dir]") {
  ClustersDir d;
  d.Put("1.yaml", ClusterYaml("zulu"));
  d.Put("2.yaml", ClusterYaml("alpha"));
  d.Put("3.yaml", ClusterYaml("mike"));
  const ClusterDirLoad first = LoadClusterDir(d.dir, {});
  CHECK(Names(first) == std::vector<std::string>{"alpha", "mike", "zulu"});
  CHECK(LoadClusterDir(d.dir, first.clusters).clusters == first.clusters);  // deterministic
}

TEST_CASE("A reload that breaks a file keeps that cluster's last good entry", "[inventory][dir]") {
  ClustersDir d;
  const std::string file = d.Put("a.yaml", ClusterYaml("alpha", "eu"));
  d.Put("b.yaml", ClusterYaml("beta"));
  const ClusterDirLoad first = LoadClusterDir(d.dir, {});
  REQUIRE(first.errors.empty());

  d.Put("a.yaml", ClusterYaml("alpha", "us") + "accelerators: [\n");  // broken edit
  d.Put("b.yaml", ClusterYaml("beta", "ap"));                         // good edit
  const ClusterDirLoad second = LoadClusterDir(d.dir, first.clusters);
  REQUIRE(second.clusters.size() == 2);
  CHECK(second.clusters[0].name == "alpha");
  CHECK(second.clusters[0].region == "eu");  // the last good entry
  CHECK(second.clusters[1].region == "ap");  // the new good entry
  REQUIRE(second.errors.size() == 1);
  CHECK(second.errors[0].file == file);
  CHECK(second.errors[0].kept_last_good);

  // Still broken on the next reload: still served from the last good entry.
  const ClusterDirLoad third = LoadClusterDir(d.dir, second.clusters);
  CHECK(third.clusters == second.clusters);
}

TEST_CASE("A broken new file has no last good entry", "[inventory][dir]") {
  ClustersDir d;
  d.Put("a.yaml", ClusterYaml("alpha"));
  const ClusterDirLoad first = LoadClusterDir(d.dir, {});
  d.Put("b.yaml", "name: beta\n");
  const ClusterDirLoad second = LoadClusterDir(d.dir, first.clusters);
  CHECK(Names(second) == std::vector<std::string>{"alpha"});
  REQUIRE(second.errors.size() == 1);
  CHECK_FALSE(second.errors[0].kept_last_good);
}

TEST_CASE("Duplicate cluster names: the later file is refused", "[inventory][dir]") {
  ClustersDir d;
  d.Put("a.yaml", ClusterYaml("alpha", "eu"));
  const std::string later = d.Put("b.yaml", ClusterYaml("alpha", "us"));
  const ClusterDirLoad load = LoadClusterDir(d.dir, {});
  REQUIRE(load.clusters.size() == 1);
  CHECK(load.clusters[0].region == "eu");
  REQUIRE(load.errors.size() == 1);
  CHECK(load.errors[0].file == later);
  CHECK(load.errors[0].status.code() == Code::kConflict);
  CHECK(load.errors[0].status.message() ==
        "b.yaml: cluster name 'alpha' is already defined by a.yaml");
}

TEST_CASE("Duplicate cluster names at a reload: the file in use keeps the name, a new one is refused",
          "[inventory][dir]") {
  ClustersDir d;
  d.Put("c1.yaml", ClusterYaml("c1", "eu"));
  const ClusterDirLoad first = LoadClusterDir(d.dir, {});
  REQUIRE(first.clusters.size() == 1);
  // A copy that sorts first ("c1-copy" < "c1.yaml"), edited, names c1 too.
  const std::string copy = d.Put("c1-copy.yaml", ClusterYaml("c1", "ap-south-1"));
  const ClusterDirLoad second = LoadClusterDir(d.dir, first.clusters);
  REQUIRE(second.clusters.size() == 1);
  CHECK(second.clusters[0].region == "eu");
  REQUIRE(second.errors.size() == 1);
  CHECK(second.errors[0].file == copy);
  CHECK(second.errors[0].status.message() == "c1-copy.yaml: cluster name 'c1' is already defined by c1.yaml");

  // The file in use broken (its last good entry kept for want of better), a
  // new good file of its name is the truth.
  d.Put("c1.yaml", ClusterYaml("c1", "eu") + "cordoned: perhaps\n");
  const ClusterDirLoad third = LoadClusterDir(d.dir, second.clusters);
  REQUIRE(third.clusters.size() == 1);
  CHECK(third.clusters[0].region == "ap-south-1");
  CHECK(third.clusters[0].source_file == copy);
}

TEST_CASE("A removed file removes its cluster", "[inventory][dir]") {
  ClustersDir d;
  d.Put("a.yaml", ClusterYaml("alpha"));
  const std::string b = d.Put("b.yaml", ClusterYaml("beta"));
  const ClusterDirLoad first = LoadClusterDir(d.dir, {});
  REQUIRE(first.clusters.size() == 2);
  std::filesystem::remove(b);
  const ClusterDirLoad second = LoadClusterDir(d.dir, first.clusters);
  CHECK(Names(second) == std::vector<std::string>{"alpha"});
  CHECK(second.errors.empty());
}

TEST_CASE("A reload of a directory emptied under clusters in use keeps them all, and says so", "[inventory][dir]") {
  ClustersDir d;
  const std::string a = d.Put("a.yaml", ClusterYaml("alpha"));
  const std::string b = d.Put("b.yaml", ClusterYaml("beta"));
  const ClusterDirLoad first = LoadClusterDir(d.dir, {});
  REQUIRE(first.clusters.size() == 2);
  std::filesystem::remove(a);
  std::filesystem::remove(b);
  const ClusterDirLoad emptied = LoadClusterDir(d.dir, first.clusters);
  CHECK(Names(emptied) == std::vector<std::string>{"alpha", "beta"});
  CHECK_FALSE(emptied.dir_status.ok());
  CHECK_THAT(emptied.dir_status.message(), Catch::Contains("holds no cluster file: a reload never empties the "
                                                           "inventory"));
  CHECK_THAT(emptied.dir_status.message(), Catch::Contains("the 2 cluster(s) stay as they were"));
  // Empty with nothing in use (a fleet not set up yet): fine.
  const ClusterDirLoad none = LoadClusterDir(d.dir, {});
  CHECK(none.dir_status.ok());
  CHECK(none.clusters.empty());
  // A file half written (refused) and nothing else: the same, and it is told.
  const std::string broken = d.Put("bad.yaml", "name: [broken\n");
  const ClusterDirLoad half = LoadClusterDir(d.dir, first.clusters);
  CHECK(Names(half) == std::vector<std::string>{"alpha", "beta"});
  CHECK_FALSE(half.dir_status.ok());
  CHECK_THAT(half.dir_status.message(), Catch::Contains("holds no cluster file that loads with a cluster in use"));
  REQUIRE(half.errors.size() == 1);
  CHECK(half.errors[0].file == broken);
  // One of them back: the other's removal is a reload's to make.
  d.Put("a.yaml", ClusterYaml("alpha"));
  const ClusterDirLoad one = LoadClusterDir(d.dir, first.clusters);
  CHECK(one.dir_status.ok());
  CHECK(Names(one) == std::vector<std::string>{"alpha"});
}

TEST_CASE("A refused file with no last good entry holds its cluster under the name it gives",
          "[inventory][dir][placeholder]") {
  ClustersDir d;
  d.Put("a.yaml", ClusterYaml("alpha"));
  const std::string bad = d.Put("b.yaml", ClusterYaml("beta") + "gpuz: 8\n");  // a field no release knows
  const ClusterDirLoad load = LoadClusterDir(d.dir, {});
  CHECK(Names(load) == std::vector<std::string>{"alpha"});
  REQUIRE(load.errors.size() == 1);
  CHECK_FALSE(load.errors[0].kept_last_good);
  REQUIRE(load.placeholders.size() == 1);
  CHECK(load.placeholders[0].name == "beta");  // the file's name, not its stem
  CHECK(load.placeholders[0].file == bad);
  CHECK(load.placeholders[0].status.message() == load.errors[0].status.message());
}

TEST_CASE("A refused file's cluster is named by its name line, else after the file, when it does not parse",
          "[inventory][dir][placeholder]") {
  struct Case {
    const char* what;
    std::string file;
    std::string yaml;
    std::string held;  // "" = no placeholder
  };
  const std::vector<Case> cases = {
      {"not YAML, with a name line", "c1.yaml", "name: other\nkubeconfig: [\n", "other"},
      {"not YAML, with a quoted name line", "c7.yaml", "region: [\nname: \"gpu-eu\"\n", "gpu-eu"},
      {"not YAML, with a name line and a comment", "eu1.yaml", "name: gpu-eu-1  # prod\nregion: [\n", "gpu-eu-1"},
      {"not YAML, with a quoted name and a comment", "eu2.yaml", "name: 'gpu-eu-2' #x\nregion: [\n", "gpu-eu-2"},
      {"not YAML, with no usable name line", "c8.yaml", "name: Not_A_Label\nkubeconfig: [\n", "c8"},
      {"no name", "c2.yaml", "kubeconfig: kube.yaml\n", "c2"},
      {"a name that is no DNS label", "c3.yaml", "name: Not_A_Label\nkubeconfig: kube.yaml\n", "c3"},
      {"a name that is not a string", "c4.yaml", "name: [c9]\nkubeconfig: kube.yaml\n", "c4"},
      {"not a mapping", "c5.yaml", "- c9\n", "c5"},
      {"a stem that is no DNS label either", "Cluster_6.yaml", "kubeconfig: [\n", ""},
      // Not a cluster's file at all: a Kubernetes object or a kubeconfig.
      {"a ConfigMap", "notes.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\ndata: {a: b}\n", ""},
      {"a kubeconfig", "c9.yaml", "apiVersion: v1\nkind: Config\nclusters: []\n", ""},
      {"a cluster file with an apiVersion and a kind", "c11.yaml", "apiVersion: gantry.dev/v1\nkind: Cluster\nname: gpu-1\n",
       "gpu-1"},
      {"empty (a cluster file cut short, perhaps)", "c10.yaml", "", "c10"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    ClustersDir d;
    const std::string file = d.Put(c.file, c.yaml);
    const ClusterDirLoad load = LoadClusterDir(d.dir, {});
    CHECK(load.clusters.empty());
    REQUIRE(load.errors.size() == 1);
    CHECK(load.errors[0].file == file);
    if (c.held.empty()) {
      CHECK(load.placeholders.empty());
      continue;
    }
    REQUIRE(load.placeholders.size() == 1);
    CHECK(load.placeholders[0].name == c.held);
    CHECK(load.placeholders[0].file == file);
  }
}

TEST_CASE("A placeholder never takes a name a good file or a kept entry has", "[inventory][dir][placeholder]") {
  ClustersDir d;
  d.Put("a.yaml", "name: zulu\ncordoned: perhaps\n");  // refused, sorts before the good file of its name
  d.Put("b.yaml", ClusterYaml("mike"));
  d.Put("z.yaml", ClusterYaml("zulu"));
  const ClusterDirLoad first = LoadClusterDir(d.dir, {});
  CHECK(Names(first) == std::vector<std::string>{"mike", "zulu"});
  CHECK(first.errors.size() == 1);
  CHECK(first.placeholders.empty());

  // mike's file breaks at a reload: its last good entry stays, no placeholder.
  d.Put("b.yaml", ClusterYaml("mike") + "cordoned: perhaps\n");
  // A new file naming mike, refused too: the kept entry has the name.
  d.Put("c.yaml", "name: mike\nregion: [eu]\n");
  const ClusterDirLoad second = LoadClusterDir(d.dir, first.clusters);
  CHECK(Names(second) == std::vector<std::string>{"mike", "zulu"});
  REQUIRE(second.errors.size() == 3);
  CHECK(second.errors[1].kept_last_good);
  CHECK(second.placeholders.empty());
}

TEST_CASE("Two refused files of one name hold one cluster, from the file that sorts first",
          "[inventory][dir][placeholder]") {
  ClustersDir d;
  const std::string first = d.Put("1.yaml", "name: alpha\nkubeconfig: [a]\n");
  d.Put("2.yaml", "name: alpha\n");
  d.Put("alpha.yaml", "kubeconfig: kube.yaml\n");  // no name: its stem, alpha again
  const ClusterDirLoad load = LoadClusterDir(d.dir, {});
  CHECK(load.clusters.empty());
  CHECK(load.errors.size() == 3);
  REQUIRE(load.placeholders.size() == 1);
  CHECK(load.placeholders[0].name == "alpha");
  CHECK(load.placeholders[0].file == first);
}

TEST_CASE("An unreadable directory keeps the previous clusters", "[inventory][dir]") {
  ClustersDir d;
  d.Put("a.yaml", ClusterYaml("alpha"));
  const ClusterDirLoad first = LoadClusterDir(d.dir, {});
  const ClusterDirLoad second = LoadClusterDir(d.dir + "/missing", first.clusters);
  CHECK(second.dir_status.code() == Code::kIo);
  CHECK(second.clusters == first.clusters);
}

}  // namespace
}  // namespace gantry::inventory
