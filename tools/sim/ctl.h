// `gantry-sim ctl --out-dir DIR <command> [args]`: the operator's client of
// the admin API, which it finds through DIR/admin.
//
//   journal | check [--with OTHER_DIR]... | clusters
//   evict C NS/NAME | admission-check C NS/NAME STATE [CHECK]
//   partition C [1|2] | heal C | stop C | start C
//   latency C MS [VERBS] | errors C FRACTION [CODES] | kill-watches C
//   quota C RESOURCE=QTY...
//
// `check` exits 1 and names the job when the journal shows a double run;
// `check --with OTHER_DIR`... checks the journals of several simulators as
// one (their clusters named DIR:cluster), for a fleet split across them.
#pragma once

#include <string>
#include <vector>

namespace gantry::sim {

// Returns the process exit code; prints results to stdout, errors to stderr.
int RunCtl(const std::string& out_dir, const std::vector<std::string>& args);

}  // namespace gantry::sim
