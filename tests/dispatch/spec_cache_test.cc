// SpecCache: a job's stored spec is parsed once, and the cache stays bounded.
#include <catch2/catch.hpp>

#include <variant>

#include "gantry/dispatch/spec_cache.h"

namespace gantry::dispatch {
namespace {

JobRecord StoredJob(const std::string& uid, const std::string& name, int parallelism) {
  std::string doc = R"({"apiVersion":"gantry.dev/v1","kind":"Job","metadata":{"name":")" + name +
                    R"("},"spec":{"queue":"q","template":{"apiVersion":"batch/v1","kind":"Job","spec":{)"
                    R"("parallelism":)" + std::to_string(parallelism) +
                    R"(,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i",)"
                    R"("resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}}}})";
  auto parsed = ParseJobDocument(doc, DocumentFormat::kJson, "ns");
  REQUIRE(std::holds_alternative<JobSpec>(parsed));
  JobRecord job;
  job.uid = uid;
  job.ns = "ns";
  job.name = name;
  job.spec_json = SpecToJson(std::get<JobSpec>(parsed)).dump();
  return job;
}

}  // namespace

TEST_CASE("the spec cache parses a job once and keeps the most recent jobs", "[dispatch]") {
  SpecCache cache(2);
  JobRecord a = StoredJob("uid-a", "a", 2), b = StoredJob("uid-b", "b", 3), c = StoredJob("uid-c", "c", 4);

  auto first = cache.Get(a);
  REQUIRE(first.ok());
  CHECK((*first)->spec.name == "a");
  REQUIRE((*first)->demand.pod_sets.size() == 1);
  CHECK((*first)->demand.pod_sets[0].count == 2);
  auto again = cache.Get(a);
  REQUIRE(again.ok());
  CHECK(again->get() == first->get());  // the same parsed object, not a second parse
  CHECK(cache.hits() == 1);
  CHECK(cache.misses() == 1);

  // b, then a again (a is now the most recent), then c evicts b.
  REQUIRE(cache.Get(b).ok());
  REQUIRE(cache.Get(a).ok());
  auto from_c = cache.Get(c);
  REQUIRE(from_c.ok());
  CHECK((*from_c)->demand.pod_sets[0].count == 4);
  CHECK(cache.size() == 2);
  const int64_t misses = cache.misses();
  REQUIRE(cache.Get(a).ok());
  CHECK(cache.misses() == misses);      // a stayed
  REQUIRE(cache.Get(b).ok());
  CHECK(cache.misses() == misses + 1);  // b had to be parsed again

  cache.Forget("uid-b");
  CHECK(cache.size() == 1);
  // An entry handed out stays valid after eviction.
  CHECK((*first)->spec.name == "a");
}

TEST_CASE("an unreadable stored spec is an error and is not cached", "[dispatch]") {
  SpecCache cache(4);
  JobRecord bad;
  bad.uid = "uid-bad";
  bad.ns = "ns";
  bad.name = "bad";
  bad.spec_json = "{not json";
  auto got = cache.Get(bad);
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == Code::kCorruption);
  CHECK(cache.size() == 0);
}

}  // namespace gantry::dispatch
