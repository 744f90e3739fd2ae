#include "gantry/inventory/config_changes.h"
#include "gantry/inventory/token_source.h"

#include <catch2/catch.hpp>

namespace gantry::inventory {
namespace {

ClusterConfig Base() {
  ClusterConfig c;
  c.name = "c1";
  c.region = "eu-central-1";
  c.compliance_zones = {"gdpr", "iso27001"};
  c.labels = {{"tier", "gold"}, {"team", "ml"}};
  c.price_per_gpu_hour.on_demand = 2.5;
  c.datasets = {"imagenet"};
  return c;
}

TEST_CASE("a reload's note of a cluster gives what it added, removed and changed in its lists and labels",
          "[inventory][reload]") {
  const ClusterConfig was = Base();
  CHECK(ConfigChanges(was, was).empty());
  ClusterConfig now = was;
  now.labels = {{"tier", "silver"}, {"owner", "infra"}};
  now.compliance_zones = {"gdpr", "hipaa"};
  now.datasets = {"imagenet", "laion"};
  now.exclude_resource_prefixes = {"example.com/"};
  CHECK(ConfigChanges(was, now) ==
        "complianceZones (+hipaa, -iso27001), labels (+owner=infra, tier: gold -> silver, -team), "
        "datasets (+laion), excludeResourcePrefixes (+example.com/)");
  now = was;
  now.compliance_zones = {"iso27001", "gdpr"};
  CHECK(ConfigChanges(was, now) == "complianceZones (reordered)");
}

TEST_CASE("a reload's note of a cluster gives its prices old and new, and only names its kubeconfig",
          "[inventory][reload]") {
  const ClusterConfig was = Base();
  ClusterConfig now = was;
  now.price_per_gpu_hour.on_demand = 3.0;
  now.price_per_gpu_hour.spot = 1.25;
  now.kubeconfig = "/etc/gantry/other.kubeconfig";
  now.cordoned = true;
  CHECK(ConfigChanges(was, now) ==
        "cordoned, pricePerGPUHour.onDemand 2.5 -> 3, pricePerGPUHour.spot (none) -> 1.25, kubeconfig");
  now = was;
  now.region.clear();
  CHECK(ConfigChanges(was, now) == "region eu-central-1 -> (none)");
}

}  // namespace
}  // namespace gantry::inventory

namespace gantry::inventory {
namespace {

TEST_CASE("a kubeconfig rewritten in place is named by what changed in it, never by a token's value",
          "[inventory][reload]") {
  ClusterCredentials was;
  was.server = "https://10.0.0.1:6443";
  was.ca_pem = "CA-1";
  was.token_source = TokenSource::Static("old-secret-token-value");
  CHECK(CredentialChanges(was, was).empty());
  ClusterCredentials now = was;
  now.token_source = TokenSource::Static("new-secret-token-value");
  CHECK(CredentialChanges(was, now) == "kubeconfig (client credentials)");
  now = was;
  now.token_source = TokenSource::Static("old-secret-token-value");  // the same token, read again
  CHECK(CredentialChanges(was, now).empty());
  now.server = "https://10.0.0.2:6443";
  now.ca_pem = "CA-2";
  const std::string said = CredentialChanges(was, now);
  CHECK(said == "kubeconfig (API server https://10.0.0.1:6443 -> https://10.0.0.2:6443, certificate authority)");
  CHECK(said.find("secret") == std::string::npos);
}

}  // namespace
}  // namespace gantry::inventory
