// Resolve: a host name's addresses, looked up under a deadline.
//
// getaddrinfo blocks for as long as the name service takes (glibc's resolver
// waits 5 s per server and attempt by default, and a hung NSS module
// forever), while every step of a connection has a deadline. So a name is
// looked up with glibc's getaddrinfo_a and waited for with gai_suspend until
// the deadline. A lookup still running then is cancelled; one that cannot be
// (it is being served already) is left to a detached thread that waits for
// its end and frees it, since glibc writes into the request until then. An
// IP literal is converted at once (AI_NUMERICHOST), with no lookup and no
// thread.
//
// Thread-safety: any thread.
#pragma once

#include <netdb.h>

#include <chrono>
#include <memory>
#include <string>

#include "gantry/common/status.h"

namespace gantry::http {

struct AddrInfoFree {
  void operator()(addrinfo* a) const { freeaddrinfo(a); }
};
// getaddrinfo's list of addresses, in the order to try them.
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoFree>;

// host's TCP addresses for port (a number or a service name). Every error
// is kUnavailable ("resolve HOST: REASON"), a passed deadline included.
// stop_fd (a StopSignal's, or -1): readable, the wait ends as at the
// deadline, its lookup cancelled or left to end on its own.
Result<AddrInfoList> Resolve(const std::string& host, const std::string& port,
                             std::chrono::steady_clock::time_point deadline, int stop_fd = -1);

}  // namespace gantry::http
