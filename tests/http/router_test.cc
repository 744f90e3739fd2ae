#include <catch2/catch.hpp>

#include "gantry/http/router.h"

namespace gantry::http {

TEST_CASE("router matches patterns and tells 404 from 405", "[http]") {
  Router router;
  int hit = 0;
  router.Add("GET", "/api/v1/namespaces/{ns}/jobs/{name}", [&](Request, Responder) { hit = 1; });
  router.Add("DELETE", "/api/v1/namespaces/{ns}/jobs/{name}", [&](Request, Responder) { hit = 2; });
  router.Add("GET", "/api/v1/jobs", [&](Request, Responder) { hit = 3; });

  auto m = router.Find("GET", "/api/v1/namespaces/team-a/jobs/x");
  REQUIRE(m.status == 200);
  CHECK(m.params["ns"] == "team-a");
  CHECK(m.params["name"] == "x");
  CHECK(m.pattern == "/api/v1/namespaces/{ns}/jobs/{name}");
  (*m.handler)(Request{}, nullptr);
  CHECK(hit == 1);

  CHECK(router.Find("DELETE", "/api/v1/namespaces/a/jobs/b").status == 200);
  CHECK(router.Find("HEAD", "/api/v1/jobs").status == 200);
  auto not_allowed = router.Find("POST", "/api/v1/namespaces/a/jobs/b");
  CHECK(not_allowed.status == 405);
  CHECK(not_allowed.allow == "GET, DELETE");
  CHECK(router.Find("GET", "/api/v1/namespaces/a/jobs").status == 404);
  CHECK(router.Find("GET", "/api/v1/namespaces//jobs/b").status == 404);
  CHECK(router.Find("GET", "/api/v1/jobs/").status == 200);  // a trailing slash is the same path
  CHECK(router.Find("GET", "/").status == 404);
}

TEST_CASE("the router splits a path as sent before decoding its segments: an encoded slash stays in its segment "
          "and an empty segment names nothing",
          "[http]") {
  Router router;
  router.Add("GET", "/api/v1/namespaces/{ns}/jobs/{name}", [](Request, Responder) {});
  router.Add("GET", "/api/v1/namespaces/{ns}/jobs/{name}/events", [](Request, Responder) {});
  router.Add("GET", "/api/v1/namespaces/{ns}/jobs/{name}/placement", [](Request, Responder) {});
  auto m = router.Find("GET", "/api/v1/namespaces/team-a/jobs/long-1%2Fevents");
  REQUIRE(m.status == 200);
  CHECK(m.pattern == "/api/v1/namespaces/{ns}/jobs/{name}");
  CHECK(m.params["name"] == "long-1/events");  // a name the handler refuses, not job long-1's events
  m = router.Find("GET", "/api/v1/namespaces/team%2Da/jobs/x%20y");
  REQUIRE(m.status == 200);
  CHECK(m.params["ns"] == "team-a");
  CHECK(m.params["name"] == "x y");
  // "//" is not "/": no job named "placement" is read for a job with no name.
  CHECK(router.Find("GET", "/api/v1/namespaces/team-a/jobs//placement").status == 404);
  CHECK(router.Find("GET", "/api/v1/namespaces/team-a//jobs/x").status == 404);
}

TEST_CASE("query strings and percent-decoding", "[http]") {
  auto q = ParseQuery("a=1&b=x%20y&c=&d&e=p+q&a=2");
  CHECK(q.count("a") == 2);
  CHECK(q.find("b")->second == "x y");
  CHECK(q.find("c")->second.empty());
  CHECK(q.count("d") == 1);
  CHECK(q.find("e")->second == "p q");
  CHECK(PercentDecode("%2Fx%zz%4", false) == "/x%zz%4");
}

}  // namespace gantry::http
