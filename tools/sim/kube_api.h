// KubeApi: the Kubernetes REST surface of one simulated cluster. Maps a
// request (already authenticated by SimCluster) to discovery documents or
// ClusterState operations, and their errors to Kubernetes Status bodies.
//
//   /version, /api, /api/v1, /apis, /apis/<g>, /apis/<g>/<v>
//   /apis/<g>/<v>[/namespaces/<ns>]/<resource>[/<name>[/status]]
//
// kubectl asks for Table output (Accept: ...;as=Table) and for
// /openapi/v{2,3}; plain JSON lists and 404 are what it falls back on.
//
// Thread-safety: Handle may be called from any thread (ClusterState locks).
#pragma once

#include "cluster_state.h"
#include "gantry/http/message.h"

namespace gantry::sim {

class KubeApi {
 public:
  explicit KubeApi(ClusterState* state) : state_(state) {}
  http::Response Handle(const http::Request& req);

 private:
  http::Response Resource(const http::Request& req, const ResourceInfo& res, const std::string& api_version,
                          const std::string& ns, const std::string& name, bool status);
  http::Response Collection(const http::Request& req, const ResourceInfo& res, const std::string& api_version,
                            const std::string& ns);
  ClusterState* state_;
};

// A path's non-empty segments: "/apis/batch/v1/jobs" -> {apis, batch, v1, jobs}.
std::vector<std::string> PathSegments(const std::string& path);

}  // namespace gantry::sim
