// Router: maps (method, path) to a handler using patterns such as
// "/api/v1/namespaces/{ns}/jobs/{name}". Knows 404 (no pattern matches the
// path) from 405 (a pattern matches but not for this method). A segment
// pattern may also be a literal with a "{x}" suffix, e.g. "clusters:reload"
// is just a literal segment.
//
// Thread-safety: build it on one thread, then Match from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gantry/http/message.h"

namespace gantry::http {

class Router {
 public:
  struct Match {
    int status = 404;            // 200 when found, else 404 or 405
    const Handler* handler = nullptr;
    std::string pattern;         // the matched pattern (a low-cardinality metric label)
    std::map<std::string, std::string> params;
    std::string allow;           // for 405: "GET, DELETE"
  };

  void Add(std::string method, std::string pattern, Handler handler);
  // raw_path: the path as sent, still percent-encoded (Request::RawPath).
  // It is split at '/' before each segment is decoded, so that an encoded
  // '/' (%2F) stays in its segment, as the Kubernetes API server reads it (a
  // job "a%2Fevents" is no route to job a's events); an empty segment ("//")
  // matches no pattern.
  Match Find(std::string_view method, std::string_view raw_path) const;

 private:
  struct Route {
    std::string method;
    std::string pattern;
    std::vector<std::string> segments;
    Handler handler;
  };
  static bool MatchSegments(const Route& route, const std::vector<std::string>& parts,
                            std::map<std::string, std::string>* params);
  std::vector<Route> routes_;
};

}  // namespace gantry::http
