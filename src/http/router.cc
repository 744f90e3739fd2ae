#include "gantry/http/router.h"

namespace gantry::http {
namespace {

std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    std::size_t slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash);
  }
  return parts;
}

// A request's path as sent: split at each '/' (an empty segment kept: "//"
// names nothing, it is not one slash), then each segment decoded. A
// trailing '/' is dropped, as one.
std::vector<std::string> SplitRequestPath(std::string_view raw) {
  std::vector<std::string> parts;
  if (raw.starts_with('/')) raw.remove_prefix(1);
  if (raw.ends_with('/')) raw.remove_suffix(1);
  if (raw.empty()) return parts;
  for (;;) {
    const std::size_t slash = raw.find('/');
    parts.push_back(PercentDecode(raw.substr(0, slash), false));
    if (slash == std::string_view::npos) break;
    raw.remove_prefix(slash + 1);
  }
  return parts;
}

}  // namespace

void Router::Add(std::string method, std::string pattern, Handler handler) {
  Route route{std::move(method), pattern, {}, std::move(handler)};
  for (std::string_view seg : SplitPath(pattern)) route.segments.emplace_back(seg);
  routes_.push_back(std::move(route));
}

bool Router::MatchSegments(const Route& route, const std::vector<std::string>& parts,
                           std::map<std::string, std::string>* params) {
  if (route.segments.size() != parts.size()) return false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& seg = route.segments[i];
    if (seg.size() > 2 && seg.front() == '{' && seg.back() == '}') {
      if (parts[i].empty()) return false;
      (*params)[seg.substr(1, seg.size() - 2)] = parts[i];
    } else if (seg != parts[i]) {
      return false;
    }
  }
  return true;
}

Router::Match Router::Find(std::string_view method, std::string_view raw_path) const {
  Match match;
  const std::vector<std::string> parts = SplitRequestPath(raw_path);
  for (const Route& route : routes_) {
    std::map<std::string, std::string> params;
    if (!MatchSegments(route, parts, &params)) continue;
    if (route.method == method || (method == "HEAD" && route.method == "GET")) {
      match.status = 200;
      match.handler = &route.handler;
      match.pattern = route.pattern;
      match.params = std::move(params);
      match.allow.clear();
      return match;
    }
    match.status = 405;
    match.pattern = route.pattern;
    if (!match.allow.empty()) match.allow += ", ";
    match.allow += route.method;
  }
  return match;
}

}  // namespace gantry::http
