// Documents shared by the job tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "gantry/job/job_document.h"

namespace gantry::testing {

// A complete gantry.dev/v1 Job (every spec field set) running a batch/v1 Job
// of 4 pods, each requesting cpu 8, memory 64Gi, nvidia.com/gpu 8.
extern const char* const kGantryJobYaml;

// A plain batch/v1 Job manifest with the queue label and gantry annotations.
extern const char* const kBatchManifestYaml;

// A gantry document whose template is a JobSet of 2 replicated jobs.
extern const char* const kJobSetYaml;

// A gantry document for kubeflow.org/v1 PyTorchJob with explicit podSets.
extern const char* const kPyTorchJobYaml;

// kGantryJobYaml parsed to JSON (fails the test on error).
nlohmann::json GantryJobJson();

// Parses or fails the current test with the error's message.
JobSpec MustParse(const std::string& body, DocumentFormat format = DocumentFormat::kYaml,
                  std::optional<std::string_view> path_namespace = std::nullopt);

}  // namespace gantry::testing
