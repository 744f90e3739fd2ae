#include "commands.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "command_support.h"
#include "gantry/common/cut_text.h"
#include "gantry/common/job_phase.h"
#include "gantry/job/job_document.h"

namespace gantry::cli {
namespace {

bool IsFinalPhase(const std::string& phase) {
  auto p = ParseJobPhase(phase);
  return p && (IsFinal(*p) || *p == JobPhase::kUnschedulable);
}

// Polls the job until it reaches a final phase (or the deadline). Prints each
// phase change. A daemon that answered once and is out of reach meanwhile
// (restarting) is waited for, until the deadline, not taken for an end.
// Exit 0 for Succeeded/Cancelled as wanted, 1 otherwise (a request the
// server refused too: reached_final, when given, tells which). last_body,
// when given, gets the job as last read.
int WaitForFinal(ApiClient& api, const std::string& ns, const std::string& name, const WaitFlags& wait,
                 const std::string& wanted, std::ostream& out, std::ostream& err, bool* reached_final = nullptr,
                 bool answered_before = false, nlohmann::json* last_body = nullptr) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait.timeout_seconds);
  auto timed_out = [&] { return wait.timeout_seconds > 0 && std::chrono::steady_clock::now() >= deadline; };
  auto give_up = [&](const std::string& state) {
    err << fmt::format("error: timed out after {}s waiting for job {} ({})\n", wait.timeout_seconds, name, state);
    return kExitRefused;
  };
  std::string last;       // the phase last read
  std::string last_line;  // the line last printed
  bool told_unreachable = false;
  bool answered = answered_before;  // a server never reached (a wrong --server) is not waited for
  while (true) {
    ApiResult r = api.Call("GET", JobPath(ns, name));
    if (r.exit_code == kExitUnreachable && answered) {
      if (timed_out()) {  // out of reach past the deadline: a timeout as any
        err << r.error << "\n";
        return give_up(last.empty() ? "the daemon out of reach" : "phase " + last + " when last seen");
      }
      // The daemon restarting (systemd brings it back in seconds): the job
      // goes on meanwhile, and so does the wait, as far as its deadline.
      if (!told_unreachable) err << r.error << "; still waiting for job " << name << "\n";
      told_unreachable = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(wait.poll_ms));
      continue;
    }
    if (r.exit_code != kExitOk) {
      err << r.error << "\n";
      return r.exit_code;
    }
    told_unreachable = false;
    answered = true;
    if (last_body != nullptr) *last_body = r.body;
    std::string phase = Str(r.body, "/status/phase");
    // A line for each change of phase, of cluster (a job moved after its
    // owner was lost), of epoch, and for an owner out of reach.
    const std::string cluster = Str(r.body, "/status/cluster");
    const std::string epoch = Str(r.body, "/status/epoch");
    const std::string unreachable = Str(r.body, "/status/ownerUnreachable/since");
    std::string line = fmt::format("job.gantry.dev/{} {}", name, phase);
    if (!cluster.empty()) line += " on " + cluster;
    if (!epoch.empty() && epoch != "0" && epoch != "1") line += " (epoch " + epoch + ")";
    if (!unreachable.empty()) line += ", its owner out of reach since " + unreachable;
    if (line != last_line) {
      out << line << "\n";
      out.flush();
      last_line = std::move(line);
    }
    last = phase;
    if (IsFinalPhase(phase)) {
      if (reached_final != nullptr) *reached_final = true;
      if (phase == wanted) return kExitOk;
      const std::string message = CleanText(Str(r.body, "/status/message"));
      // A watch (nothing wanted) ends well at any final phase: how, with the rest.
      if (!message.empty()) {
        (wanted.empty() ? out : err) << "job " << name << " is " << phase << ": " << message << "\n";
      }
      return kExitRefused;
    }
    if (timed_out()) {
      // What the job waits for, as the daemon tells it (a cluster that has
      // not confirmed a delete, say).
      const std::string message = CleanText(Str(r.body, "/status/message"));
      return give_up("phase " + phase + (message.empty() ? "" : ": " + message));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(wait.poll_ms));
  }
}

// WaitForFinal for a command given -o: with json or yaml, standard output
// holds one document, the job as it ended (or as last read, at a timeout:
// first_read, the submit's or cancel's answer, if the daemon was out of
// reach from then on), and the phase changes go to standard error.
int WaitAndPrint(ApiClient& api, const CommonFlags& flags, const std::string& ns, const std::string& name,
                 const WaitFlags& wait, const std::string& wanted, std::ostream& out, std::ostream& err,
                 bool* reached_final = nullptr, bool answered_before = false,
                 nlohmann::json first_read = nullptr) {
  OutputFormat format;
  ParseOutputFormat(flags.output, &format);
  const bool structured = format != OutputFormat::kTable;
  nlohmann::json last = std::move(first_read);
  const int rc =
      WaitForFinal(api, ns, name, wait, wanted, structured ? err : out, err, reached_final, answered_before, &last);
  if (structured && !last.is_null()) PrintObject(out, last, format);
  return rc;
}

// Byte quantities stored canonically ("68719476736") read better as "64Gi".
std::string HumanBytes(const std::string& resource, const std::string& value) {
  if (resource != "memory" && resource != "ephemeral-storage") return value;
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || value.size() > 19) {
    return value;
  }
  uint64_t bytes = std::stoull(value);
  static const char* kSuffix[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
  for (int i = 0; i < 6; ++i) {
    uint64_t unit = 1ull << (10 * (6 - i));
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + kSuffix[i];
  }
  return value;
}

std::string RequestsText(const nlohmann::json& pod_set) {
  std::string text;
  if (auto req = pod_set.find("requests"); req != pod_set.end() && req->is_object()) {
    for (auto it = req->begin(); it != req->end(); ++it) {
      if (!text.empty()) text += ", ";
      std::string value = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
      text += it.key() + "=" + HumanBytes(it.key(), value);
    }
  }
  return text;
}

// What the cluster shows of a remote object (its item's observed), e.g.
// "Pending: couldn't assign flavors ..."; "-" when gantry sees nothing of it
// there (not yet created, gone, or the cluster not watched now).
std::string ObservedText(const nlohmann::json& item) {
  const nlohmann::json seen = item.value("observed", nlohmann::json::object());
  if (!seen.is_object() || !seen.contains("state")) return "-";
  std::string text = seen.value("state", "");
  if (seen.value("epoch", int64_t{0}) != item.value("epoch", int64_t{0})) {
    text += fmt::format(" (epoch {})", seen.value("epoch", int64_t{0}));
  }
  if (std::string m = seen.value("message", ""); !m.empty()) text += ": " + m;
  if (seen.value("lastSeen", false)) text = "last seen " + text;
  return text;
}

}  // namespace

std::string SplitJobRef(std::string& name, std::string& ns) {
  const std::size_t slash = name.find('/');
  if (name.empty()) return "a job's name is empty: give NAME, or NAMESPACE/NAME";
  if (slash == std::string::npos) return "";
  const std::string given_ns = name.substr(0, slash), given_name = name.substr(slash + 1);
  if (given_ns.empty() || given_name.empty() || given_name.find('/') != std::string::npos) {
    return fmt::format("\"{}\" is no job name: give NAME, or NAMESPACE/NAME", name);
  }
  if (!ns.empty() && ns != given_ns) {
    return fmt::format("job {} is in namespace {}, and -n says {}", name, given_ns, ns);
  }
  ns = given_ns;
  name = given_name;
  return "";
}

namespace {

// Jobs in one file, at most: a sweep's worth, each sent as its own request.
constexpr std::size_t kMaxSubmitDocuments = 1000;

// "job.gantry.dev/NAME created", or why an answer 200 changed nothing.
std::string SubmittedLine(const ApiResult& r, const std::string& name, const std::string& ns) {
  if (r.http_status == 201) return "job.gantry.dev/" + name + " created";
  // 200: the same document again. The server says whether this post put
  // an Unschedulable job back to be judged again (event Resubmitted); the
  // job's message cannot, as it says so until the job's next verdict.
  auto resubmitted = r.headers.find("gantry-resubmitted");
  if (resubmitted != r.headers.end() && resubmitted->second == "true") {
    return "job.gantry.dev/" + name + " unchanged; queued to be judged again";
  }
  // The same document as a finished job's is that job, not a new run.
  const std::string phase = Str(r.body, "/status/phase");
  if (phase == "Succeeded" || phase == "Failed" || phase == "Cancelled") {
    return fmt::format("job.gantry.dev/{} unchanged: it is {} already, and is not run again (to run it again: "
                       "gantry cancel --purge {} -n {}, then submit)",
                       name, phase, name, ns);
  }
  return "job.gantry.dev/" + name + " unchanged";
}

}  // namespace

int Submit(const CommonFlags& flags, const std::string& file, const WaitFlags& wait, std::ostream& out,
           std::ostream& err) {
  std::stringstream ss;
  if (file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) {  // opens, then reads as empty: "holds no document"
      err << "error: " << file << " is a directory: give one job file (YAML or JSON), or - for standard input\n";
      return kExitUsage;
    }
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      err << "error: cannot read " << file << ": " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    ss << in.rdbuf();
  }
  const std::string text = ss.str();
  auto parsed = YamlStreamToJson(text, kMaxSubmitDocuments);
  if (auto* e = std::get_if<DocumentError>(&parsed)) {
    // A JSON document is read as the YAML it also is: its errors are told
    // as JSON's, as the server tells them.
    std::string message = e->message;
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{' && message.rfind("invalid YAML", 0) == 0) {
      message.replace(0, 12, "invalid JSON");
    }
    err << "error: " << file << ": " << message << "\n";
    return kExitUsage;
  }
  const std::vector<nlohmann::json>& docs = std::get<std::vector<nlohmann::json>>(parsed);
  // Which job, in a file of several ("" for one; empty documents are not counted).
  auto which = [&](std::size_t i) {
    return docs.size() == 1 ? std::string() : fmt::format(" (job {} of {} in the file)", i + 1, docs.size());
  };
  // Every one checked before any is sent: a file that is not a list of
  // jobs is refused whole. Which kinds the daemon takes is its to say
  // (genericKinds); a core or apps/v1 object (a ConfigMap, a Deployment
  // rendered beside a Job) never is one, and none of a file holding one is
  // sent.
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (!docs[i].is_object()) {
      err << "error: " << file << which(i)
          << ": the document must be a mapping (a job: apiVersion, kind, metadata, spec)\n";
      return kExitUsage;
    }
    const std::string api_version = Str(docs[i], "/apiVersion"), kind = Str(docs[i], "/kind");
    if (api_version.empty() || kind.empty()) {
      err << "error: " << file << which(i) << ": the document needs an apiVersion and a kind (a job: gantry.dev/v1 "
          << "Job, batch/v1 Job, a JobSet, or a kind in the daemon's genericKinds)\n";
      return kExitUsage;
    }
    if (api_version == "v1" || api_version == "apps/v1") {
      err << "error: " << file << which(i) << ": " << CleanText(api_version + " " + kind)
          << " is no job: gantry takes gantry.dev/v1 Job, batch/v1 Job, a JobSet, or a kind in the daemon's "
          << "genericKinds; nothing in the file was sent\n";
      return kExitUsage;
    }
  }
  if (docs.size() > 1 && wait.wait) {
    err << "error: " << file << " holds " << docs.size()
        << " jobs: --wait follows one job; submit them without it, then follow each with gantry status --watch\n";
    return kExitUsage;
  }
  int code = kExitOk;
  auto api = Connect(flags, err, &code);
  if (!api) return code;
  OutputFormat format;
  ParseOutputFormat(flags.output, &format);
  // Sent in order, each on its own: one refused does not stop the others
  // (as kubectl apply -f), and the exit code is the first refusal's. What
  // no later one could escape (no answer, the token refused, the server
  // failing) stops the rest, rather than told once per job.
  int first_error = kExitOk;
  nlohmann::json items = nlohmann::json::array();
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const nlohmann::json& doc = docs[i];
    std::string ns = flags.ns.empty() ? Str(doc, "/metadata/namespace", "default") : flags.ns;
    std::string name = Str(doc, "/metadata/name");
    ApiResult r = api->Call("POST", "/api/v1/namespaces/" + UrlEncode(ns) + "/jobs", doc.dump());
    if (r.exit_code != kExitOk) {
      err << (docs.size() == 1 ? "" : fmt::format("{}{}: ", name.empty() ? "<no name>" : name, which(i)))
          << r.error << "\n";
      if (first_error == kExitOk) first_error = r.exit_code;
      const bool about_this_job = r.exit_code != kExitUnreachable && r.http_status != 401 && r.http_status != 403 &&
                                  r.http_status < 500;
      if (!about_this_job && i + 1 < docs.size()) {
        err << "error: " << file << ": the other " << docs.size() - i - 1 << " job(s) after it were not sent\n";
        break;
      }
      continue;
    }
    name = Str(r.body, "/metadata/name", name);
    for (const std::string& w : r.warnings) err << "Warning: " << (docs.size() == 1 ? "" : name + ": ") << w << "\n";
    if (format == OutputFormat::kTable) {
      out << SubmittedLine(r, name, ns) << "\n";
    } else if (!wait.wait) {
      items.push_back(r.body);  // with --wait, the job as it ends instead (WaitAndPrint)
    }
    if (!wait.wait) continue;
    return WaitAndPrint(*api, flags, ns, name, wait, "Succeeded", out, err, nullptr, /*answered_before=*/true,
                        std::move(r.body));
  }
  if (format != OutputFormat::kTable && !items.empty()) {
    // One job as itself; several as a List, as kubectl prints them.
    PrintObject(out, items.size() == 1 && docs.size() == 1 ? items[0]
                                                         : nlohmann::json{{"apiVersion", "v1"},
                                                                          {"kind", "List"},
                                                                          {"items", items}},
                format);
  }
  return first_error;
}

int Status(const CommonFlags& flags, const std::string& name, bool watch, int watch_timeout_seconds,
           std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  auto api = Connect(flags, err, &code);
  if (!api) return code;
  std::string ns = NamespaceOf(flags);
  if (watch) {
    WaitFlags wait{true, watch_timeout_seconds, 1000};
    bool final = false;
    int rc = WaitAndPrint(*api, flags, ns, name, wait, "", out, err, &final);
    return final ? kExitOk : rc;  // reaching any final phase ends a watch normally; a 404 does not
  }
  auto body = Fetch(*api, JobPath(ns, name), err, &code);
  if (!body) return code;
  if (PrintStructured(flags, *body, out)) return kExitOk;
  const nlohmann::json& j = *body;
  auto field = [&](const char* label, const std::string& value) {
    out << fmt::format("{:<11} {}\n", label, value.empty() ? "<none>" : CleanText(value));
  };
  field("Name:", Str(j, "/metadata/name"));
  field("Namespace:", Str(j, "/metadata/namespace"));
  field("UID:", Str(j, "/metadata/uid"));
  field("Queue:", Str(j, "/spec/queue"));
  field("Priority:", Str(j, "/spec/priority", "0"));
  // Kueue's label: each cluster's Workload copy carries the class's value there.
  if (auto c = Str(j, "/spec/template/metadata/labels/kueue.x-k8s.io~1priority-class"); !c.empty()) {
    field("Class:", c + " (WorkloadPriorityClass: its value in each cluster is the copy's priority)");
  }
  field("Phase:", Str(j, "/status/phase"));
  field("Cluster:", Str(j, "/status/cluster"));
  field("Epoch:", Str(j, "/status/epoch", "0"));
  field("Age:", AgeOf(Str(j, "/metadata/creationTimestamp")));
  if (auto m = Str(j, "/status/message"); !m.empty()) field("Message:", m);
  if (auto o = Str(j, "/status/ownerUnreachable/message"); !o.empty()) field("Owner:", o);
  if (auto r = Str(j, "/status/remote"); !r.empty()) field("Remote:", r);
  if (auto c = Str(j, "/status/completionTime"); !c.empty()) field("Completed:", c);
  out << "Pod sets:\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& ps : j.value(nlohmann::json::json_pointer("/spec/podSets"), nlohmann::json::array())) {
    rows.push_back({"  " + ps.value("name", ""), ps.contains("count") ? ps["count"].dump() : "?", RequestsText(ps)});
  }
  PrintTable(out, {"  NAME", "COUNT", "REQUESTS PER POD"}, rows);
  // Where gantry has, or is withdrawing, the job's objects (a daemon from
  // before this route answers 404: the section is left out).
  ApiResult remote = api->Call("GET", JobPath(ns, name) + "/remoteobjects");
  if (remote.exit_code == kExitOk && remote.body.is_object()) {
    rows.clear();
    for (const auto& o : remote.body.value("items", nlohmann::json::array())) {
      std::string state = o.value("state", "");
      if (o.contains("refusal")) state += ": " + o.value("refusal", "");
      if (o.contains("hold")) state += " (left out of the job's dispatches: " + o.value("hold", "") + ")";
      if (o.value("notInInventory", false)) state += " (its cluster is no longer in the inventory)";
      if (o.contains("lastError") && o["lastError"].is_object()) {
        const nlohmann::json& e = o["lastError"];
        const std::string since = e.value("failingSince", "");
        const std::string verb = e.value("verb", "create");
        state += since.empty() || since == e.value("time", "")
                     ? fmt::format(" ({} failed {} ago: {}; sent again)", verb, AgeOf(e.value("time", "")),
                                   e.value("message", ""))
                     : fmt::format(" ({} failing for {}, last {} ago: {}; sent again)", verb, AgeOf(since),
                                   AgeOf(e.value("time", "")), e.value("message", ""));
      }
      rows.push_back({"  " + o.value("cluster", ""), o.value("objectKind", o.value("kind", "")), o.value("name", ""),
                      std::to_string(o.value("epoch", int64_t{0})), state, ObservedText(o)});
    }
    if (rows.empty()) {
      out << "Remote objects: <none>\n";
    } else {
      out << "Remote objects:\n";
      PrintTable(out, {"  CLUSTER", "KIND", "NAME", "EPOCH", "STATE", "IN CLUSTER"}, rows);
    }
  }
  // The last ten, and how many there are in all (a job that waited long
  // may have thousands: the daemon sends only the ten).
  ApiResult ev = api->Call("GET", JobPath(ns, name) + "/events?limit=10");
  if (ev.exit_code == kExitOk && ev.body.is_object()) {
    const auto& items = ev.body.value("items", nlohmann::json::array());
    const std::size_t shown = std::min<std::size_t>(items.size(), 10);
    const std::size_t total = std::max<std::size_t>(
        items.size(), ev.body.value("metadata", nlohmann::json::object()).value("totalItems", std::size_t{0}));
    out << (shown < total ? fmt::format("Events (the last {} of {}; gantry events {} shows all):\n", shown, total, name)
                          : std::string("Events:\n"));
    PrintEvents(out, items, shown, "  ");
  }
  return kExitOk;
}

int List(const CommonFlags& flags, bool all_namespaces, const std::string& phase, const std::string& queue,
         const std::string& cluster, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  auto api = Connect(flags, err, &code);
  if (!api) return code;
  std::string base = all_namespaces ? "/api/v1/jobs?" : "/api/v1/namespaces/" + UrlEncode(NamespaceOf(flags)) + "/jobs?";
  if (!phase.empty()) base += "phase=" + UrlEncode(phase) + "&";
  if (!queue.empty()) base += "queue=" + UrlEncode(queue) + "&";
  if (!cluster.empty()) base += "cluster=" + UrlEncode(cluster) + "&";
  OutputFormat format;
  ParseOutputFormat(flags.output, &format);
  const bool table = format == OutputFormat::kTable;
  // The phase, and what holds the job as it is (kubectl's "Ready,SchedulingDisabled"): its owner out of
  // reach, lost or held (condition OwnerUnreachable), a cancel waiting for a cluster (WaitingForClusters).
  auto phase_of = [](const nlohmann::json& j) {
    std::string phase = Str(j, "/status/phase");
    if (!Str(j, "/status/ownerUnreachable/since").empty()) phase += ",Unreachable";
    const nlohmann::json* conditions = j.contains("status") && j["status"].is_object() &&
                                               j["status"].contains("conditions") &&
                                               j["status"]["conditions"].is_array()
                                           ? &j["status"]["conditions"]
                                           : nullptr;
    if (!conditions) return phase;
    for (const auto& c : *conditions) {
      if (!c.is_object() || c.value("status", "") != "True") continue;
      const std::string type = c.value("type", "");
      if (type != "OwnerUnreachable" && type != "WaitingForClusters") continue;
      const std::string reason = c.value("reason", type);
      // (A cancel waiting for its owner out of reach says it once.)
      if (reason == "ClusterUnreachable" && phase.find(",Unreachable") != std::string::npos) continue;
      phase += "," + reason;
    }
    return phase;
  };
  // A table keeps each page's rows, not its jobs (tens of thousands of
  // them, each with its spec, would be hundreds of megabytes of tree).
  nlohmann::json items = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  std::string cont;
  do {  // follow continue tokens until the last page
    ApiResult r = api->Call("GET", base + "limit=500" + (cont.empty() ? "" : "&continue=" + UrlEncode(cont)));
    if (r.exit_code != kExitOk) {
      err << r.error << "\n";
      return r.exit_code;
    }
    auto page = r.body.is_object() ? r.body.find("items") : r.body.end();
    if (!r.body.is_object() || page == r.body.end() || !page->is_array()) {
      err << "error: the server's answer is not what gantry expects (is it a gantry daemon?): it holds no list "
             "of items\n";
      return kExitRefused;
    }
    for (auto& j : *page) {
      if (!table) {
        items.push_back(std::move(j));
        continue;
      }
      std::vector<std::string> row;
      if (all_namespaces) row.push_back(Str(j, "/metadata/namespace"));
      for (std::string v : {Str(j, "/metadata/name"), Str(j, "/spec/queue"), phase_of(j),
                            Str(j, "/status/cluster", "<none>"), Str(j, "/status/epoch", "0"),
                            AgeOf(Str(j, "/metadata/creationTimestamp"))}) {
        row.push_back(v);
      }
      rows.push_back(std::move(row));
    }
    cont = Str(r.body, "/metadata/continue");
  } while (!cont.empty());
  if (!table) {
    PrintObject(out, {{"apiVersion", "gantry.dev/v1"}, {"kind", "JobList"}, {"items", std::move(items)}}, format);
    return kExitOk;
  }
  if (rows.empty()) {
    err << "No jobs found.";
    // A name mistyped reads as a cluster with nothing on it: said, when the
    // daemon knows no such cluster (nor an owner missing from its inventory).
    if (!cluster.empty() && api->Call("GET", "/api/v1/clusters/" + UrlEncode(cluster)).http_status == 404) {
      err << " (no cluster " << cluster << " in gantry's inventory: gantry clusters lists them)";
    }
    err << "\n";
    return kExitOk;
  }
  std::vector<std::string> headers = {"NAME", "QUEUE", "PHASE", "CLUSTER", "EPOCH", "AGE"};
  if (all_namespaces) headers.insert(headers.begin(), "NAMESPACE");
  PrintTable(out, headers, rows);
  return kExitOk;
}

int Cancel(const CommonFlags& flags, const std::string& name, bool purge, const WaitFlags& wait,
           std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  auto api = Connect(flags, err, &code);
  if (!api) return code;
  std::string ns = NamespaceOf(flags);
  ApiResult r = api->Call("DELETE", JobPath(ns, name) + (purge ? "?purge=true" : ""));
  if (r.exit_code != kExitOk) {
    err << r.error << "\n";
    return r.exit_code;
  }
  // -o json|yaml: the daemon's answer (the job, or the purge's Status), for scripts.
  if (!wait.wait && PrintStructured(flags, r.body, out)) return kExitOk;
  if (purge) {
    out << "job.gantry.dev/" << name << " purged\n";
    return kExitOk;
  }
  const std::string phase = Str(r.body, "/status/phase");
  // A job that had ended otherwise is left as it ended: said so, not only its phase.
  const bool ended_otherwise = phase == "Succeeded" || phase == "Failed";
  const std::string said = "job.gantry.dev/" + name +
                           (phase == "Cancelling"  ? " cancelling"
                            : ended_otherwise ? " had already ended (" + phase + "): nothing to cancel"
                                              : " is " + phase) +
                           "\n";
  if (!wait.wait) {
    out << said;
    return kExitOk;
  }
  // --wait with -o json|yaml: standard output holds one document, the job
  // as it ends (WaitAndPrint); what is said meanwhile goes to standard error.
  OutputFormat format;
  ParseOutputFormat(flags.output, &format);
  const bool structured = format != OutputFormat::kTable;
  (structured ? err : out) << said;
  if (phase == "Cancelling") {
    return WaitAndPrint(*api, flags, ns, name, wait, "Cancelled", out, err, nullptr, /*answered_before=*/true,
                        std::move(r.body));
  }
  if (structured) PrintObject(out, r.body, format);
  if (phase == "Cancelled") return kExitOk;
  // Ended otherwise before the cancel: --wait promised a Cancelled job.
  err << fmt::format("job {} had already ended ({}): nothing was cancelled\n", name, phase);
  return kExitRefused;
}

int Clusters(const CommonFlags& flags, const std::string& name, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  auto api = Connect(flags, err, &code);
  if (!api) return code;
  // One cluster: its own route (404 names it), shown as a list of one.
  auto body = Fetch(*api, name.empty() ? "/api/v1/clusters" : "/api/v1/clusters/" + UrlEncode(name), err, &code);
  if (!body) return code;
  if (PrintStructured(flags, *body, out)) return kExitOk;
  if (!name.empty()) *body = {{"items", nlohmann::json::array({std::move(*body)})}};
  const auto& items = body->value("items", nlohmann::json::array());
  if (items.empty()) {
    err << "No clusters configured.\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : items) {
    std::string cpus = "<unknown>", gpus = "<unknown>", pending = "", age = "<never>";
    if (auto cap = c.value(nlohmann::json::json_pointer("/status/capacity"), nlohmann::json()); cap.is_object()) {
      auto used = [&](const char* pointer) {
        auto r = cap.value(nlohmann::json::json_pointer(pointer), nlohmann::json());
        return r.is_object() ? InUnits(r.value("reserved", "0")) + "/" + InUnits(r.value("nominal", "0"))
                             : std::string("0/0");
      };
      cpus = used("/resources/cpu");
      gpus = used("/resources/nvidia.com~1gpu");
      pending = std::to_string(cap.value("pendingWorkloads", 0));
      age = cap.value("age", "") + (cap.value("stale", false) ? " (stale)" : "");
    }
    std::string since = Str(c, "/status/since");
    std::string health = Str(c, "/status/health");
    if (c.value(nlohmann::json::json_pointer("/status/credentialsRefused"), false)) health += ",CredentialsRefused";
    if (c.value(nlohmann::json::json_pointer("/spec/cordoned"), false)) health += ",Cordoned";
    if (c.value(nlohmann::json::json_pointer("/spec/declaredLost"), false)) health += ",DeclaredLost";
    const std::string config_error = Str(c, "/status/configError");
    const std::string credentials_error = Str(c, "/status/credentialsError");
    const std::string capacity_error = Str(c, "/status/capacityError");
    const std::string watch_refused = Str(c, "/status/watchRefused");
    const std::string view_behind = Str(c, "/status/viewBehind");
    const std::string stalled = Str(c, "/status/requestsStalled");
    const std::string missing = Str(c, "/status/missing");  // health Missing: owns jobs, not in the inventory
    // A file or kubeconfig refused at a reload, its last good one kept in use.
    const std::string stale = !Str(c, "/status/configWarning").empty() ? Str(c, "/status/configWarning")
                                                                       : Str(c, "/status/credentialsWarning");
    if (!config_error.empty()) health += ",ConfigRefused";
    if (!stale.empty()) health += ",ConfigStale";
    if (!credentials_error.empty()) health += ",CredentialsUnloadable";
    if (!capacity_error.empty()) health += ",CapacityUnreadable";
    if (!watch_refused.empty()) health += ",WatchRefused";
    if (!view_behind.empty()) health += ",ViewBehind";
    if (!stalled.empty()) health += ",RequestsStall";
    // Ready, its last probe failed (short of probeFailureThreshold): probed
    // again in a second, NotReady if that one fails too.
    const bool doubted = Str(c, "/status/health") == "Ready" && !Str(c, "/status/lastError").empty();
    if (doubted) health += ",ProbeFailed";
    std::string behind_note;
    if (!view_behind.empty()) {
      const std::string behind_since = Str(c, "/status/viewBehindSince");
      behind_note = "view of " + view_behind + " behind" +
                    (behind_since.empty() ? "" : " for " + AgeOf(behind_since)) + ", relisting";
    }
    rows.push_back({Str(c, "/metadata/name"), health,
                    since.empty() ? "" : AgeOf(since), Str(c, "/spec/region"), cpus, gpus, pending, age,
                    !missing.empty()                      ? missing
                    : !config_error.empty()               ? config_error
                    : !credentials_error.empty()          ? credentials_error
                    : Str(c, "/status/health") != "Ready" || doubted ? Str(c, "/status/lastError")
                    : !stalled.empty()                    ? stalled
                    : !watch_refused.empty()              ? watch_refused
                    : !capacity_error.empty()             ? capacity_error
                    : !stale.empty()                      ? stale + " (the last good one is in use)"
                                                          : behind_note});
  }
  PrintTable(out,
             {"NAME", "HEALTH", "SINCE", "REGION", "CPU(RESERVED/QUOTA)", "GPUS(RESERVED/QUOTA)", "PENDING",
              "CAPACITY-AGE", "LAST-ERROR"},
             rows);
  return kExitOk;
}

int Explain(const CommonFlags& flags, const std::string& name, std::ostream& out, std::ostream& err) {
  int code = kExitOk;
  auto api = Connect(flags, err, &code);
  if (!api) return code;
  auto body = Fetch(*api, JobPath(NamespaceOf(flags), name) + "/placement", err, &code);
  if (!body) return code;
  if (PrintStructured(flags, *body, out)) return kExitOk;
  const nlohmann::json& decision = *body;
  // A job past its dispatch: the verdict is what a dispatch now would find.
  if (const std::string phase = decision.value("jobPhase", "");
      phase == "Succeeded" || phase == "Failed" || phase == "Cancelled" || phase == "Cancelling") {
    out << "Job phase:     " << phase << " (not dispatched again: below is where a dispatch now could go)\n";
  }
  std::string candidates;
  for (const auto& c : decision.value("candidates", nlohmann::json::array())) {
    candidates += (candidates.empty() ? "" : ", ") + c.get<std::string>();
  }
  out << "Candidates:    " << (candidates.empty() ? "<none>" : candidates) << "\n";
  if (const nlohmann::json owner = decision.value("owner", nlohmann::json::object()); owner.is_object() &&
                                                                                     owner.contains("name")) {
    out << "Owner:         " << owner.value("name", "");
    if (!owner.value("inInventory", true)) {
      out << " (" << CleanText(owner.value("message", "not in the inventory")) << ")";
    }
    out << "\n";
  }
  // For a job dispatched already, where its copies are (the candidates are
  // placement's of now).
  std::string copies;
  for (const auto& c : decision.value("clusters", nlohmann::json::array())) {
    if (c.value("copy", false)) copies += (copies.empty() ? "" : ", ") + c.value("name", "");
  }
  if (!copies.empty()) out << "Copies in:     " << copies << "\n";
  if (decision.value("unschedulable", false)) {
    // The verdict is placement's, for a dispatch now; a job already
    // dispatched is not judged again by it (a quota cut leaves a
    // Nominating job's copies waiting where they are).
    const std::string phase = decision.value("jobPhase", "");
    if (phase.empty() || phase == "Queued" || phase == "Unschedulable") {
      out << "Unschedulable: no configured cluster can ever run this job as a whole\n";
    } else if (phase == "Nominating") {
      out << "No fit now:    no configured cluster can hold this job as a whole now (each one's reason is below); "
             "it stays Nominating, its copies waiting where they are until a quota grows again\n";
    } else {
      out << "No fit now:    no configured cluster could take this job as a whole if it were dispatched now (each "
             "one's reason is below); it is "
          << phase << ", and that does not change it\n";
    }
  }
  // A feasible cluster whose quota has no room for the job now: a copy
  // there waits in its Kueue's queue (placement's fits_now term).
  auto room = [](const nlohmann::json& c) -> std::string {
    const nlohmann::json* terms = c.contains("scoreTerms") && c["scoreTerms"].is_object() ? &c["scoreTerms"] : nullptr;
    if (!terms || !terms->contains("fits_now") || !(*terms)["fits_now"].is_object()) return "";
    const nlohmann::json& v = (*terms)["fits_now"]["value"];
    return v.is_number() && v.get<double>() == 0 ? "; its quota shows no room now (or its reading is stale)" : "";
  };
  // Feasible clusters ranked below the candidates, when maxCopies bounds
  // them: no copy goes there unless one moves from a cluster without room.
  const int max_copies = decision.value("maxCopies", 0);
  const bool at_cap = max_copies > 0 && decision.value("candidates", nlohmann::json::array()).size() >=
                                            static_cast<std::size_t>(max_copies);
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : decision.value("clusters", nlohmann::json::array())) {
    if (c.contains("refusedJob") && c["refusedJob"].is_object()) {
      // The engine leaves it out of this job's dispatches for a while.
      rows.push_back({c.value("name", ""), "refused",
                      fmt::format("refused the job {} ago: {}", AgeOf(c["refusedJob"].value("time", "")),
                                  c["refusedJob"].value("message", ""))});
    } else if (c.contains("heldOut") && c["heldOut"].is_object()) {
      rows.push_back({c.value("name", ""), "held out",
                      fmt::format("left out since {} ago: {}", AgeOf(c["heldOut"].value("time", "")),
                                  c["heldOut"].value("message", ""))});
    } else if (c.contains("kindRefused") && c["kindRefused"].is_object()) {
      rows.push_back({c.value("name", ""), "refuses kind", c["kindRefused"].value("message", "")});
    } else if (c.contains("earlierRun") && c["earlierRun"].is_object()) {
      rows.push_back({c.value("name", ""), "earlier run", c["earlierRun"].value("message", "")});
    } else if (c.value("copy", false)) {
      // The job's dispatch put a copy here: it waits there, whatever the rank of now says.
      std::string gate;
      if (c.contains("preemptionGate") && c["preemptionGate"].is_object()) {
        const nlohmann::json& g = c["preemptionGate"];
        if (g.value("open", false)) {
          gate = "; may preempt there since " + AgeOf(g.value("openedAt", "")) + " ago";
        } else if (g.contains("refusal")) {
          gate = "; may not preempt there: " + g.value("message", "");
        } else {
          gate = "; may not preempt there yet (its preemption gate is closed)";
        }
      }
      rows.push_back({c.value("name", ""), "has a copy",
                      (c.value("feasible", false)
                           ? fmt::format("rank {} score {:.1f} now{}", c.value("rank", 0), c.value("score", 0.0),
                                         room(c))
                           : c.value("filter", "") + " now: " + c.value("message", "")) +
                          gate});
    } else if (c.value("feasible", false)) {
      const bool capped = at_cap && !c.value("selected", false);
      rows.push_back({c.value("name", ""), c.value("selected", false) ? "candidate" : "feasible",
                      fmt::format("rank {} score {:.1f}{}{}", c.value("rank", 0), c.value("score", 0.0), room(c),
                                  capped ? fmt::format("; beyond maxCopies ({})", max_copies) : "")});
    } else {
      rows.push_back({c.value("name", ""), "excluded",
                      c.value("filter", "") + ": " + c.value("message", "") +
                          (c.value("permanent", false) ? "" : " (may change)")});
    }
  }
  PrintTable(out, {"CLUSTER", "VERDICT", "WHY"}, rows);
  return kExitOk;
}


}  // namespace gantry::cli
