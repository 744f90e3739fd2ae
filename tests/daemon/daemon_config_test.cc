// gantry.yaml: every bad value is an error that names the file, the line
// where it can, and the field; good values land in DaemonConfig.
#include <catch2/catch.hpp>

#include <regex>
#include <sstream>
#include <vector>

#include "gantry/daemon/daemon_config.h"
#include "test_support.h"

namespace gantry {

TEST_CASE("a gantry.yaml with dispatch settings loads them, defaults stay where unset", "[daemon][config]") {
  testing::TempDir dir;
  const std::string path = dir.File("gantry.yaml");
  testing::WriteFile(path,
                     "clusterLostTimeoutSeconds: 60\n"
                     "credentialsRefusedTimeoutSeconds: 0\n"
                     "declaredLostGraceSeconds: 5\n"
                     "finishedRetentionSeconds: 3600\n"
                     "jobRecordRetentionSeconds: 0\n"
                     "leaseOn: QuotaReserved\n"
                     "dispatchWorkers: 4\n"
                     "dispatchWorkersMin: 2\n"
                     "clusterConnections: 3\n"
                     "clusterConnectionsMin: 5\n"
                     "clusterStallSeconds: 7\n"
                     "probeFailureThreshold: 3\n"
                     "rejectionBackoffSeconds: 1\n"
                     "rejectionBackoffMaxSeconds: 30\n"
                     "preemptionGateSeconds: 0\n"
                     "maxCopies: 3\n"
                     "listErrorsToldAfterSeconds: 5\n"
                     "notFoundConfirmsAfterSeconds: 30\n"
                     "resyncSeconds: 10\n"
                     "resyncPassesPerSecond: 0\n"
                     "gcIntervalSeconds: 5\n"
                     "jobsMetricSeconds: 0\n"
                     "genericKinds:\n"
                     "- {apiVersion: trainer.kubeflow.org/v1alpha1, kind: TrainJob}\n"
                     "- apiVersion: ray.io/v1\n"
                     "  kind: RayJob\n");
  Result<DaemonConfig> c = LoadDaemonConfig(path);
  REQUIRE(c.ok());
  CHECK(c->cluster_lost_timeout_seconds == 60);
  CHECK(c->credentials_refused_timeout_seconds == 0);
  CHECK(DaemonConfig{}.credentials_refused_timeout_seconds == 86400);
  CHECK(c->declared_lost_grace_seconds == 5);
  CHECK(DaemonConfig{}.declared_lost_grace_seconds == 60);
  CHECK(c->finished_retention_seconds == 3600);
  CHECK(c->job_record_retention_seconds == 0);
  CHECK(DaemonConfig{}.job_record_retention_seconds == 30 * 86400);
  CHECK(c->lease_on == "QuotaReserved");
  CHECK(c->dispatch_workers == 4);
  CHECK(c->dispatch_workers_min == 2);
  CHECK(DaemonConfig{}.dispatch_workers == 128);
  CHECK(DaemonConfig{}.dispatch_workers_min == 32);
  CHECK(c->cluster_connections == 3);
  CHECK(c->probe_failure_threshold == 3);
  CHECK(DaemonConfig{}.probe_failure_threshold == 2);
  CHECK(c->cluster_connections_min == 5);  // above clusterConnections: the daemon uses 3, fixed
  CHECK(DaemonConfig{}.cluster_connections == 64);
  CHECK(DaemonConfig{}.cluster_connections_min == 16);
  CHECK(c->cluster_stall_seconds == 7);
  CHECK(DaemonConfig{}.cluster_stall_seconds == 2);
  CHECK(c->rejection_backoff_seconds == 1);
  CHECK(c->rejection_backoff_max_seconds == 30);
  REQUIRE(c->generic_kinds.size() == 2);
  CHECK(c->generic_kinds[0].api_version == "trainer.kubeflow.org/v1alpha1");
  CHECK(c->generic_kinds[0].kind == "TrainJob");
  CHECK(c->generic_kinds[1].api_version == "ray.io/v1");
  CHECK(c->generic_kinds[1].kind == "RayJob");
  CHECK(c->probe_interval_seconds == DaemonConfig{}.probe_interval_seconds);
  CHECK(DaemonConfig{}.finished_retention_seconds == 0);  // deleted at once unless asked
  CHECK(DaemonConfig{}.rejection_backoff_seconds == 10);  // the engine's own floor and cap
  CHECK(DaemonConfig{}.rejection_backoff_max_seconds == 600);
  CHECK(c->preemption_gate_seconds == 0);
  CHECK(DaemonConfig{}.preemption_gate_seconds == 60);  // gates on by default
  CHECK(c->max_copies == 3);
  CHECK(DaemonConfig{}.max_copies == 8);
  CHECK(c->not_found_confirms_after_seconds == 30);
  CHECK(DaemonConfig{}.not_found_confirms_after_seconds == 120);
  CHECK(c->list_errors_told_after_seconds == 5);
  CHECK(DaemonConfig{}.list_errors_told_after_seconds == 60);
  CHECK(c->resync_seconds == 10);
  CHECK(DaemonConfig{}.resync_seconds == 30);
  CHECK(c->resync_passes_per_second == 0);
  CHECK(DaemonConfig{}.resync_passes_per_second == 100);
  CHECK(c->gc_interval_seconds == 5);
  CHECK(DaemonConfig{}.gc_interval_seconds == 60);
  CHECK(c->jobs_metric_seconds == 0);
  CHECK(DaemonConfig{}.jobs_metric_seconds == 15);

  testing::WriteFile(path, "");
  REQUIRE(LoadDaemonConfig(path).ok());  // an empty file is all defaults
}

TEST_CASE("a bad gantry.yaml is refused with the field and line", "[daemon][config]") {
  testing::TempDir dir;
  const std::string path = dir.File("gantry.yaml");
  struct Case {
    const char* text;
    const char* want;  // in the message
  };
  const Case cases[] = {
      {"finishedRetentionSeconds: -1\n", "finishedRetentionSeconds must be 0..604800"},
      // A value out of range names its line too.
      {"origin: gantry\n\nclusterLostTimeoutSeconds: 0\n", "line 3: clusterLostTimeoutSeconds must be 1..604800"},
      {"listen: 127.0.0.1:7070\ntls: {certFile: a.pem}\n", "line 2: tls.certFile and tls.keyFile must be set together"},
      {"origin: gantry\nrejectionBackoffSeconds: 60\nrejectionBackoffMaxSeconds: 30\n",
       "line 3: rejectionBackoffMaxSeconds (30) must be at least"},
      {"finishedRetentionSeconds: 604801\n", "finishedRetentionSeconds must be 0..604800"},
      {"jobRecordRetentionSeconds: -5\n", "jobRecordRetentionSeconds must be 0..315360000 (0: for ever)"},
      {"origin: gantry\njobRecordRetentionSeconds: 99999999999\n",
       "line 2: jobRecordRetentionSeconds: 99999999999 is out of range"},
      {"origin: gantry\nfinishedRetentionSeconds: soon\n", "line 2: finishedRetentionSeconds: wrong type"},
      {"finishedRetention: 60\n", "line 1: finishedRetention: unknown field"},
      {"leaseOn: Running\n", "leaseOn must be Admitted or QuotaReserved"},
      {"dispatchWorkers: 0\n", "dispatchWorkers must be 1..256"},
      {"clusterConnections: 0\n", "clusterConnections must be 1..256"},
      {"clusterConnections: 257\n", "clusterConnections must be 1..256"},
      {"clusterConnectionsMin: 0\n", "clusterConnectionsMin must be 1..256"},
      {"clusterStallSeconds: 0\n", "clusterStallSeconds must be 1..600"},
      {"clusterStallSeconds: 601\n", "clusterStallSeconds must be 1..600"},
      {"probeFailureThreshold: 0\n", "probeFailureThreshold must be 1..10"},
      {"probeFailureThreshold: 11\n", "probeFailureThreshold must be 1..10"},
      {"dispatchWorkersMin: 257\n", "dispatchWorkersMin must be 1..256"},
      {"credentialsRefusedTimeoutSeconds: -1\n", "credentialsRefusedTimeoutSeconds must be 0..2592000 (0: never)"},
      {"declaredLostGraceSeconds: 86401\n", "declaredLostGraceSeconds must be 0..86400"},
      {"rejectionBackoffSeconds: 0\n", "rejectionBackoffSeconds must be 1..3600"},
      {"preemptionGateSeconds: -1\n", "preemptionGateSeconds must be 0..86400"},
      {"resyncSeconds: 0\n", "resyncSeconds must be 1..3600"},
      {"resyncPassesPerSecond: -1\n", "resyncPassesPerSecond must be 0..100000"},
      {"jobsMetricSeconds: -1\n", "jobsMetricSeconds must be 0..3600"},
      {"jobsMetricSeconds: 3601\n", "jobsMetricSeconds must be 0..3600"},
      {"preemptionGateSeconds: 86401\n", "preemptionGateSeconds must be 0..86400"},
      {"maxCopies: 0\n", "maxCopies must be 1..1000"},
      {"maxCopies: 1001\n", "maxCopies must be 1..1000"},
      {"maxCopies: all\n", "line 1: maxCopies: wrong type"},
      {"maxCopies: 010\n", "line 1: maxCopies: 010 is not a whole number in decimal (a leading 0 reads as octal"},
      {"maxCopies: 08\n", "line 1: maxCopies: 08 is not a whole number in decimal"},
      {"maxCopies: 0x10\n", "line 1: maxCopies: 0x10 is not a whole number in decimal"},
      {"maxCopies: 99999999999999999999\n", "line 1: maxCopies: 99999999999999999999 is out of range"},
      {"listErrorsToldAfterSeconds: 0\n", "listErrorsToldAfterSeconds must be 1..86400"},
      {"notFoundConfirmsAfterSeconds: 0\n", "notFoundConfirmsAfterSeconds must be 1..86400"},
      {"rejectionBackoffSeconds: 3601\n", "rejectionBackoffSeconds must be 1..3600"},
      {"rejectionBackoffSeconds: 0.5\n", "line 1: rejectionBackoffSeconds: wrong type"},
      {"origin: gantry\nrejectionBackoffMaxSeconds: never\n", "line 2: rejectionBackoffMaxSeconds: wrong type"},
      {"rejectionBackoffMaxSeconds: 86401\n", "rejectionBackoffMaxSeconds must be 1..86400"},
      {"rejectionBackoffMaxSeconds: 5\n", "rejectionBackoffMaxSeconds (5) must be at least rejectionBackoffSeconds (10)"},
      {"rejectionBackoffSeconds: 60\nrejectionBackoffMaxSeconds: 30\n",
       "rejectionBackoffMaxSeconds (30) must be at least rejectionBackoffSeconds (60)"},
      {"tls: {certFile: a, pem: b}\n", "tls.pem: unknown field"},
      {"- a list\n", "must be a mapping"},
      {"origin: [unclosed\n", "line "},
      {"origin: \"\"\n", "origin must be a label value of 1..63 characters"},
      {"origin: gantry-0123456789-0123456789-0123456789-0123456789-0123456789-12\n",  // 64 characters
       "origin must be a label value of 1..63 characters"},
      {"origin: gantry prod\n",
       "origin \"gantry prod\" must consist of alphanumeric characters, '-', '_' or '.' (it is the value "
       "of the label kueue.x-k8s.io/multikueue-origin)"},
      {"origin: gantry/prod\n", "origin \"gantry/prod\" must consist of alphanumeric characters"},
      {"origin: -gantry\n", "origin \"-gantry\" must start and end with an alphanumeric character"},
      {"origin: gantry.\n", "origin \"gantry.\" must start and end with an alphanumeric character"},
      // yaml-cpp keeps both entries of a key given twice: the last won.
      {"origin: gantry\ndataDir: /a\norigin: gantry-2\n", "line 3: origin: given twice (first on line 1)"},
      {"tls:\n  certFile: a.pem\n  keyFile: a.key\n  certFile: b.pem\n",
       "line 4: tls.certFile: given twice (first on line 2)"},
      {"genericKinds:\n- {apiVersion: ray.io/v1, kind: RayJob, kind: RayCluster}\n",
       "line 2: genericKinds[0].kind: given twice (first on line 2)"},
      {"[listen]: 127.0.0.1:7070\n", "line 1: keys must be strings"},
      {"tls: {{certFile: a}: b}\n", "line 1: tls: keys must be strings"},
      {"tls: true\n", "line 1: tls: must be a mapping {certFile, keyFile}"},
      {"tls: [a.pem, a.key]\n", "line 1: tls: must be a mapping {certFile, keyFile}"},
      {"tls:\n  certFile: [a.pem]\n", "line 2: tls.certFile: must be a string"},
      {"tls:\n  keyFile: {file: a.key}\n", "line 2: tls.keyFile: must be a string"},
      {"genericKinds: TrainJob\n", "line 1: genericKinds: must be a list"},
      {"genericKinds:\n- TrainJob\n", "line 2: genericKinds[0]: must be a mapping"},
      {"genericKinds:\n- {apiVersion: ray.io/v1, kind: RayJob}\n- {apiVersion: a.io/v1, kind: A, plural: as}\n",
       "line 3: genericKinds[1].plural: unknown field"},
      {"genericKinds:\n- apiVersion: ray.io/v1\n  kind:\n", "line 3: genericKinds[0].kind: must be a string"},
      {"genericKinds:\n- {apiVersion: [ray.io/v1], kind: RayJob}\n", "genericKinds[0].apiVersion: must be a string"},
      {"genericKinds:\n- {apiVersion: kueue.x-k8s.io/v1beta2, kind: Workload}\n", "Kueue's own kinds are not jobs"},
      {"genericKinds:\n- {apiVersion: v1, kind: Pod}\n", "genericKinds[0].apiVersion must be group/version"},
      {"genericKinds:\n- {apiVersion: ray.io/v1}\n", "genericKinds[0]: a non-empty apiVersion and kind are needed"},
      {"genericKinds:\n- {apiVersion: Ray_IO/v1, kind: RayJob}\n", "genericKinds[0]: apiVersion \"Ray_IO/v1\""},
      {"genericKinds:\n- {apiVersion: ray.io/v1, kind: Ray-Job}\n", "cannot name a resource"},
      {"genericKinds:\n- {apiVersion: batch/v1, kind: Job}\n", "Job has its own adapter"},
      {"genericKinds:\n- {apiVersion: ray.io/v1, kind: RayJob}\n- {apiVersion: ray.io/v1, kind: RayJob}\n",
       "genericKinds[1]: RayJob of ray.io is listed already (genericKinds[0])"},
      {"genericKinds:\n- {apiVersion: ray.io/v1, kind: RayJob}\n- {apiVersion: ray.io/v1alpha1, kind: RayJob}\n",
       "list one version"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    testing::WriteFile(path, c.text);
    Result<DaemonConfig> loaded = LoadDaemonConfig(path);
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().code() == Code::kInvalidArgument);
    CHECK_THAT(loaded.status().message(), Catch::Contains(c.want) && Catch::Contains(path));
  }
  Result<DaemonConfig> missing = LoadDaemonConfig(dir.File("absent.yaml"));
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("absent.yaml"));
}

// The origin is written as the value of kueue.x-k8s.io/multikueue-origin
// (the bad ones are in the table above).
TEST_CASE("origin takes any Kubernetes label value", "[daemon][config]") {
  testing::TempDir dir;
  const std::string path = dir.File("gantry.yaml");
  for (const char* origin : {"gantry", "g", "Gantry_prod.eu-1", "0", "gantry-2"}) {
    INFO(origin);
    testing::WriteFile(path, std::string("origin: ") + origin + "\n");
    Result<DaemonConfig> c = LoadDaemonConfig(path);
    REQUIRE(c.status().ToString() == Status::Ok().ToString());
    CHECK(c->origin == origin);
  }
  testing::WriteFile(path, "origin: " + std::string(63, 'o') + "\n");
  CHECK(LoadDaemonConfig(path).ok());
}

// A key with no value is YAML null, which yaml-cpp reads as the string
// "null": `origin:` labelled gantry's objects "null", `dataDir:` opened
// ./null. Every key of the example, blanked in place, is refused by name.
TEST_CASE("a gantry.yaml key with no value is refused, not read as the string null",
          "[daemon][config]") {
  testing::TempDir dir;
  const std::string path = dir.File("gantry.yaml");
  std::vector<std::string> lines;
  std::istringstream example(testing::ReadFile(GANTRY_SOURCE_DIR "/config/gantry.example.yaml"));
  for (std::string line; std::getline(example, line);) lines.push_back(line);
  const std::regex keyed(R"(^( *)([A-Za-z]+): *\S.*$)");  // a key and its value
  int blanked = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, keyed)) continue;
    const std::string field = m[1].length() > 0 ? "tls." + m[2].str() : m[2].str();
    for (const char* blank : {"", " ~", " null"}) {
      std::vector<std::string> edited = lines;
      edited[i] = m[1].str() + m[2].str() + ":" + blank;
      std::string text;
      for (const std::string& l : edited) text += l + "\n";
      testing::WriteFile(path, text);
      INFO(edited[i]);
      Result<DaemonConfig> loaded = LoadDaemonConfig(path);
      REQUIRE_FALSE(loaded.ok());
      const std::string want = "line " + std::to_string(i + 1) + ": " + field + ": has no value";
      CHECK_THAT(loaded.status().message(), Catch::Contains(want) && Catch::Contains(path));
    }
    ++blanked;
  }
  CHECK(blanked >= 33);  // every key of the example (tls's two included)

  struct Case {
    const char* text;
    const char* want;  // in the message
  };
  const Case cases[] = {
      {"tls:\n", "line 1: tls: has no value"},
      {"tls:\n  certFile: c.pem\n  keyFile:\n", "line 3: tls.keyFile: has no value"},
      {"genericKinds:\n", "line 1: genericKinds: has no value"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    testing::WriteFile(path, c.text);
    Result<DaemonConfig> loaded = LoadDaemonConfig(path);
    REQUIRE_FALSE(loaded.ok());
    CHECK_THAT(loaded.status().message(), Catch::Contains(c.want));
  }
  // An empty string is written as one; "null" quoted is a string.
  testing::WriteFile(path,
                     "dataDir: \"\"\n"
                     "tokensFile: ''\n"
                     "origin: \"null\"\n"
                     "tls: {certFile: \"\", keyFile: \"\"}\n");
  Result<DaemonConfig> quoted = LoadDaemonConfig(path);
  REQUIRE(quoted.status().ToString() == Status::Ok().ToString());
  CHECK(quoted->data_dir.empty());
  CHECK(quoted->origin == "null");
}

// Every key of the example given a value of another YAML kind (a mapping
// for a string or a number, a scalar for a section) is refused by name.
TEST_CASE("a gantry.yaml key given the wrong kind of YAML value is refused by name", "[daemon][config]") {
  testing::TempDir dir;
  const std::string path = dir.File("gantry.yaml");
  std::vector<std::string> lines;
  std::istringstream example(testing::ReadFile(GANTRY_SOURCE_DIR "/config/gantry.example.yaml"));
  for (std::string line; std::getline(example, line);) lines.push_back(line);
  const std::regex keyed(R"(^( *)([A-Za-z]+):.*$)");
  int changed = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, keyed)) continue;
    const std::string key = m[2].str();
    const std::string field = m[1].length() > 0 ? "tls." + key : key;
    const bool section = key == "tls" || key == "genericKinds";
    const std::vector<std::string> wrong =
        section ? std::vector<std::string>{"true", "\"\"", "0"}
                : std::vector<std::string>{"{value: 1}", "[1]", "[]", "{}"};
    for (const std::string& value : wrong) {
      std::vector<std::string> edited = lines;
      edited[i] = m[1].str() + key + ": " + value;
      // A section's entries go with it.
      while (section && i + 1 < edited.size() && edited[i + 1].starts_with("  ")) {
        edited.erase(edited.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      }
      std::string text;
      for (const std::string& l : edited) text += l + "\n";
      testing::WriteFile(path, text);
      INFO(edited[i]);
      Result<DaemonConfig> loaded = LoadDaemonConfig(path);
      REQUIRE_FALSE(loaded.ok());
      const std::string want = "line " + std::to_string(i + 1) + ": " + field + ": ";
      CHECK_THAT(loaded.status().message(),
                 Catch::Contains(want) && (Catch::Contains("wrong type") || Catch::Contains("must be")));
    }
    ++changed;
  }
  CHECK(changed >= 34);  // every key of the example, tls and its two included
}

// tools/install.sh installs it as /etc/gantry/gantry.yaml: every field it
// documents must load, with the values it shows.
TEST_CASE("the example gantry.yaml loads", "[daemon][config]") {
  Result<DaemonConfig> c = LoadDaemonConfig(std::string(GANTRY_SOURCE_DIR "/config/gantry.example.yaml"));
  REQUIRE(c.status().ToString() == Status::Ok().ToString());
  CHECK(c->finished_retention_seconds == 0);
  CHECK(c->cluster_lost_timeout_seconds == 900);
  CHECK(c->lease_on == "Admitted");
  CHECK(c->rejection_backoff_seconds == 10);
  CHECK(c->rejection_backoff_max_seconds == 600);
}

}  // namespace gantry
