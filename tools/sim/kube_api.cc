#include "kube_api.h"

#include <set>

#include <fmt/format.h>

#include "gantry/common/json_fast.h"
#include "kube_errors.h"

namespace gantry::sim {

using nlohmann::json;

std::vector<std::string> PathSegments(const std::string& path) {
  std::vector<std::string> out;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

namespace {

http::Response NotFound(const std::string& path) {
  return KubeError(404, "NotFound", fmt::format("the server could not find the requested resource ({})", path));
}

http::Response MethodNotAllowed(const std::string& method) {
  return KubeError(405, "MethodNotAllowed", fmt::format("the server does not allow this method ({}) on the requested resource", method));
}

// A request body as a tree; discarded when it is not one JSON value.
json ParseBody(const std::string& body) {
  if (std::optional<json> fast = FastParseJson(body)) return std::move(*fast);
  return json::parse(body, nullptr, false);
}

// "v1beta2" of "kueue.x-k8s.io/v1beta2", "v1" of "v1".
std::string VersionOf(const std::string& api_version) {
  auto slash = api_version.rfind('/');
  return slash == std::string::npos ? api_version : api_version.substr(slash + 1);
}

bool Truthy(const std::optional<std::string>& v) { return v && (*v == "true" || *v == "1"); }

// A JSON text as the response body.
http::Response TextJsonResponse(int code, std::string text) {
  http::Response r;
  r.status = code;
  r.body = std::move(text);
  return r;
}

// Result<json> -> response with code ok_code, or its Status body.
http::Response FromResult(const Result<json>& r, int ok_code) {
  if (!r.ok()) return KubeErrorFrom(r.status());
  return JsonResponse(ok_code, *r);
}

// The error of a call on one object. Its NotFound names the object in
// details, as the API server's does (a path it does not serve answers a
// 404 whose details are empty): clients tell "no such object" from "no
// such resource" by it.
http::Response ObjectError(const Status& status, const ResourceInfo& res, const std::string& name) {
  if (status.code() != Code::kNotFound) return KubeErrorFrom(status);
  json body = KubeStatusJson(404, "NotFound", status.message());
  body["details"] = {{"name", name}, {"group", res.group}, {"kind", res.plural}};
  return JsonResponse(404, body);
}

}  // namespace

http::Response KubeApi::Handle(const http::Request& req) {
  std::vector<std::string> seg = PathSegments(req.path);
  bool get = req.method == "GET";
  if (seg.empty()) return JsonResponse(200, {{"paths", {"/api", "/apis", "/version"}}});
  if (seg[0] == "version" && seg.size() == 1) return get ? JsonResponse(200, VersionDocument()) : MethodNotAllowed(req.method);
  if ((seg[0] == "healthz" || seg[0] == "readyz" || seg[0] == "livez") && seg.size() == 1) {
    return http::TextResponse(200, "ok");
  }
  if (seg[0] == "api") {
    if (!get) return MethodNotAllowed(req.method);
    if (seg.size() == 1) return JsonResponse(200, CoreApiVersions());
    if (seg.size() == 2 && seg[1] == "v1") return JsonResponse(200, CoreResourceList());
    if (seg.size() == 3 && seg[1] == "v1" && seg[2] == "namespaces") {
      json items = json::array();
      std::set<std::string> seen;
      for (const auto& [ns, name] : state_->config().local_queues) {
        if (seen.insert(ns).second) {
          items.push_back({{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}},
                           {"status", {{"phase", "Active"}}}});
        }
      }
      return JsonResponse(200, {{"kind", "NamespaceList"}, {"apiVersion", "v1"}, {"metadata", json::object()}, {"items", items}});
    }
    // kube-system alone: its uid is what tells one cluster from another.
    if (seg.size() == 4 && seg[1] == "v1" && seg[2] == "namespaces") {
      if (seg[3] != "kube-system") {
        json body = KubeStatusJson(404, "NotFound", fmt::format("namespaces \"{}\" not found", seg[3]));
        body["details"] = {{"name", seg[3]}, {"kind", "namespaces"}};
        return JsonResponse(404, body);
      }
      return JsonResponse(200, {{"apiVersion", "v1"},
                                {"kind", "Namespace"},
                                {"metadata", {{"name", "kube-system"}, {"uid", state_->system_uid()}}},
                                {"status", {{"phase", "Active"}}}});
    }
    return NotFound(req.path);
  }
  if (seg[0] != "apis") return NotFound(req.path);
  if (seg.size() <= 3 && !get) return MethodNotAllowed(req.method);
  if (seg.size() == 1) return JsonResponse(200, ApiGroupList());
  if (seg.size() == 2) {
    json g = ApiGroup(seg[1]);
    return g.is_null() ? NotFound(req.path) : JsonResponse(200, g);
  }
  if (seg.size() == 3) {
    json l = ApiResourceList(seg[1], seg[2]);
    return l.is_null() ? NotFound(req.path) : JsonResponse(200, l);
  }
  const std::string& group = seg[1];
  const std::string& version = seg[2];
  std::string api_version = group + "/" + version;
  std::size_t i = 3;
  std::string ns;
  if (seg.size() >= 6 && seg[3] == "namespaces") {
    ns = seg[4];
    i = 5;
  }
  const ResourceInfo* res = FindResource(group, version, seg[i]);
  if (!res || (res->namespaced == false && !ns.empty())) return NotFound(req.path);
  std::size_t rest = seg.size() - i - 1;  // segments after the resource
  if (rest == 0) return Collection(req, *res, api_version, ns);
  if (res->namespaced && ns.empty()) return NotFound(req.path);
  if (rest == 1) return Resource(req, *res, api_version, ns, seg[i + 1], false);
  if (rest == 2 && seg[i + 2] == "status" && res->has_status) return Resource(req, *res, api_version, ns, seg[i + 1], true);
  return NotFound(req.path);
}

http::Response KubeApi::Collection(const http::Request& req, const ResourceInfo& res, const std::string& api_version,
                                   const std::string& ns) {
  if (req.method == "POST") {
    if (res.namespaced && ns.empty()) return NotFound(req.path);
    json body = ParseBody(req.body);
    if (body.is_discarded()) return KubeError(400, "BadRequest", "the request body is not valid JSON");
    auto created = state_->Create(res, ns, std::move(body), VersionOf(api_version));
    if (!created.ok()) return KubeErrorFrom(created.status());
    return TextJsonResponse(201, WithApiVersion(*created, api_version));
  }
  if (req.method != "GET") return MethodNotAllowed(req.method);
  auto selector = LabelSelector::Parse(req.Query("labelSelector").value_or(""));
  if (!selector.ok()) return KubeError(400, "BadRequest", "unable to parse requirement: " + selector.status().message());
  if (Truthy(req.Query("watch"))) {
    WatchRequest w;
    w.resource = &res;
    w.api_version = api_version;
    w.ns = ns;
    w.selector = std::move(*selector);
    w.resource_version = req.Query("resourceVersion").value_or("");
    w.bookmarks = Truthy(req.Query("allowWatchBookmarks"));
    try {
      w.timeout_ms = std::stoll(req.Query("timeoutSeconds").value_or("0")) * 1000;
    } catch (const std::exception&) {
      return KubeError(400, "BadRequest", "timeoutSeconds: not an integer");
    }
    w.stream = std::make_shared<http::ResponseStream>();
    http::Response r;
    r.stream = w.stream;
    state_->Watch(std::move(w));
    return r;
  }
  std::size_t limit = 0;
  try {
    limit = static_cast<std::size_t>(std::stoull(req.Query("limit").value_or("0")));
  } catch (const std::exception&) {
    return KubeError(400, "BadRequest", "limit: not an integer");
  }
  auto list = state_->List(res, api_version, ns, *selector, limit, req.Query("continue").value_or(""));
  if (!list.ok() && list.status().code() == Code::kInvalidArgument) {
    return KubeError(400, "BadRequest", list.status().message());
  }
  if (!list.ok() && list.status().code() == Code::kNotFound) {  // a continue token whose snapshot is gone
    return KubeError(410, "Expired", list.status().message());
  }
  return FromResult(list, 200);
}

http::Response KubeApi::Resource(const http::Request& req, const ResourceInfo& res, const std::string& api_version,
                                 const std::string& ns, const std::string& name, bool status) {
  Result<json> out = Status::Internal("unset");
  if (req.method == "GET") {
    out = state_->Get(res, ns, name);
  } else if (req.method == "PATCH") {
    std::string ct = req.Header("content-type");
    std::string type = ct.find("json-patch") != std::string::npos ? "json"
                       : ct.find("merge-patch") != std::string::npos ? "merge"
                                                                      : "";
    if (type.empty()) {
      return KubeError(415, "UnsupportedMediaType", fmt::format("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json ({})", ct));
    }
    json patch = ParseBody(req.body);
    if (patch.is_discarded()) return KubeError(400, "BadRequest", "the patch is not valid JSON");
    out = state_->Patch(res, ns, name, type, patch, status, VersionOf(api_version));
  } else if (req.method == "DELETE" && !status) {
    std::string policy = req.Query("propagationPolicy").value_or("");
    json preconditions;
    if (!req.body.empty()) {
      json opts = json::parse(req.body, nullptr, false);
      if (opts.is_object()) {
        if (policy.empty()) policy = opts.value("propagationPolicy", "");
        if (opts.contains("preconditions")) preconditions = opts["preconditions"];
      }
    }
    auto deleted = state_->Delete(res, ns, name, policy, preconditions);
    if (!deleted.ok()) return ObjectError(deleted.status(), res, name);
    return TextJsonResponse(200, WithApiVersion(*deleted, api_version));
  } else {
    return MethodNotAllowed(req.method);
  }
  if (!out.ok()) return ObjectError(out.status(), res, name);
  (*out)["apiVersion"] = api_version;
  return JsonResponse(200, *out);
}

}  // namespace gantry::sim
