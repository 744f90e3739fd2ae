#include <catch2/catch.hpp>

#include <set>
#include <thread>
#include <vector>

#include "gantry/common/names.h"

namespace gantry {

TEST_CASE("DNS-1123 labels", "[names]") {
  struct Row { std::string name; bool ok; };
  const Row rows[] = {
      {"a", true},          {"llama-ft", true},  {"a1-b2", true}, {"", false},
      {"-a", false},        {"a-", false},       {"A", false},    {"a_b", false},
      {"a.b", false},       {std::string(63, 'a'), true},         {std::string(64, 'a'), false},
  };
  for (const auto& row : rows) {
    INFO(row.name);
    CHECK(CheckDns1123Label(row.name).empty() == row.ok);
  }
  CHECK_FALSE(CheckDns1123Label(std::string(55, 'a'), 54).empty());
}

TEST_CASE("DNS-1123 subdomains: 253 characters in all, a part of any length, as Kubernetes has them", "[names]") {
  CHECK(CheckDns1123Subdomain("kueue.x-k8s.io").empty());
  CHECK(CheckDns1123Subdomain(std::string(64, 'a') + ".example.com").empty());
  CHECK(CheckDns1123Subdomain(std::string(253, 'a')).empty());
  CHECK_FALSE(CheckDns1123Subdomain(std::string(254, 'a')).empty());
  CHECK_FALSE(CheckDns1123Subdomain("a..b").empty());
  CHECK_FALSE(CheckDns1123Subdomain("a.-b").empty());
  CHECK_FALSE(CheckDns1123Subdomain("A.b").empty());
  // A label-key prefix is a subdomain: one with a long part is a key Kubernetes takes.
  CHECK(CheckLabelKey(std::string(70, 'p') + ".example.com/team").empty());
}

TEST_CASE("label keys and values", "[names]") {
  CHECK(CheckLabelKey("team").empty());
  CHECK(CheckLabelKey("kueue.x-k8s.io/queue-name").empty());
  CHECK_FALSE(CheckLabelKey("Bad_Prefix/x").empty());
  CHECK_FALSE(CheckLabelKey("a/").empty());
  CHECK(CheckLabelValue("").empty());
  CHECK(CheckLabelValue("NLP_team.v2").empty());
  CHECK_FALSE(CheckLabelValue("-x").empty());
}

TEST_CASE("uids are version-7 uuids that carry their time and sort by it", "[names]") {
  const int64_t t = 1'764'000'000'123;  // 0x019ab697e87b ms since the epoch
  std::string a = NewUid(t), b = NewUid(t);
  CHECK(a.size() == 36);
  CHECK(a.substr(0, 13) == "019ab697-e87b");
  CHECK(a[14] == '7');
  CHECK(a != b);
  CHECK(a.substr(0, 13) == b.substr(0, 13));
  // Later uids sort later, text against text: the store's index appends.
  CHECK(NewUid(t) < NewUid(t + 1));
  CHECK(NewUid(0x0000'ffff'ffff) < NewUid(0x0001'0000'0000));
}

TEST_CASE("uids stay distinct across refills of the random pool and across threads", "[names]") {
  const int64_t t = 1'764'000'000'000;  // one millisecond for all: only the random bits differ
  std::vector<std::string> mine, theirs;
  std::thread other([&theirs, t] {
    for (int i = 0; i < 1000; ++i) theirs.push_back(NewUid(t));
  });
  for (int i = 0; i < 1000; ++i) mine.push_back(NewUid(t));  // about 31 refills
  other.join();
  std::set<std::string> all(mine.begin(), mine.end());
  all.insert(theirs.begin(), theirs.end());
  CHECK(all.size() == 2000);
  for (const std::string& uid : all) {
    CHECK(uid[14] == '7');
    CHECK(std::string("89ab").find(uid[19]) != std::string::npos);
  }
}

}  // namespace gantry
