// AdminApi: the simulator's operator interface on its own loopback HTTP
// port (no TLS, no token: loopback only). `gantry-sim ctl` talks to it.
//
//   GET  /journal                       run journal as JSON lines
//   GET  /check                         {"ok":bool,"violations":[{jobUid,message}]}
//   GET  /clusters                      per-cluster summary and faults
//   POST /clusters/{c}/evict?namespace=NS&name=WL
//   POST /clusters/{c}/partition?mode=1|2      POST /clusters/{c}/heal
//   POST /clusters/{c}/stop                    POST /clusters/{c}/start
//   POST /clusters/{c}/latency?ms=N[&verbs=create,delete]   (none: every request)
//   POST /clusters/{c}/errors?fraction=F&codes=500,503,429
//   POST /clusters/{c}/kill-watches
//   POST /clusters/{c}/quota   body {"nvidia.com/gpu":"16",...}
//
// Thread-safety: Handle from any thread.
#pragma once

#include <vector>

#include "gantry/http/message.h"
#include "gantry/http/router.h"
#include "journal.h"
#include "sim_cluster.h"

namespace gantry::sim {

class AdminApi {
 public:
  // journal and clusters must outlive this.
  AdminApi(Journal* journal, std::vector<SimCluster*> clusters);
  void Handle(http::Request req, http::Responder respond) const;

 private:
  http::Response ClusterAction(const http::Request& req) const;
  SimCluster* Find(const std::string& name) const;

  Journal* journal_;
  std::vector<SimCluster*> clusters_;
  http::Router router_;
};

}  // namespace gantry::sim
