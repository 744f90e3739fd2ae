// KubeClient: a small, careful Kubernetes REST client for one cluster, over
// HTTPS with the cluster's CA and bearer token (or client certificate).
//
// Results are typed: a transport failure is a Status (kUnavailable,
// kDeadlineExceeded); any HTTP answer is a KubeReply whose `error` decodes
// the Kubernetes Status body (reason, code, message, Retry-After), so 404,
// 409 AlreadyExists vs Conflict, 410 Expired, 422, 429 and 5xx are told apart
// without string matching.
//
// Retries: 429, 5xx and transport errors are retried with capped exponential
// backoff (honouring Retry-After), up to max_attempts, for every verb. That is
// safe for gantry because every object it creates has a deterministic name: a
// repeated create answers 409 AlreadyExists, which the caller checks against
// its own labels.
//
// A 401 hands the request's bearer token back to its TokenSource
// (Invalidate), so that an exec plugin's refused token is replaced for the
// next request; the refused request itself is answered as is, not retried.
//
// Thread-safety: one KubeClient per thread. Watch has a connection of its own,
// kept from one watch to the next.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "gantry/http/client.h"
#include "gantry/kube/watch_line.h"
#include "gantry/inventory/kubeconfig.h"

namespace gantry::kube {

struct KubeClientOptions {
  std::chrono::milliseconds timeout{10'000};     // connect, and each request
  int max_attempts = 3;                          // 1 = no retries
  std::chrono::milliseconds first_backoff{200};  // doubled per attempt
  std::chrono::milliseconds max_backoff{5'000};  // cap, Retry-After included
  // Readable when the client's owner stops (a StopSignal's fd; -1: none):
  // each request's waits and the backoff between attempts end at once
  // (http::ClientOptions::stop_fd), with what the last attempt got.
  int stop_fd = -1;
};

// A Kubernetes Status decoded from an error answer.
struct KubeError {
  int code = 0;             // HTTP status
  std::string reason;       // "NotFound", "AlreadyExists", "Conflict", "Expired", "Invalid", ...
  std::string message;
  int retry_after_seconds = 0;
};

struct KubeReply {
  int status = 0;
  nlohmann::json body;               // the object or list (null when not JSON)
  std::optional<KubeError> error;    // set for non-2xx answers
  bool ok() const { return status >= 200 && status < 300; }
  std::string date;                  // the answer's Date header, as sent ("" when none)
  int attempts = 1;                  // how many tries it took
  // The request went out more than once, and an earlier send may have been
  // carried out: it was sent again after a kept-alive connection closed
  // without answering (http::ClientResponse::resent), or retried after an
  // attempt that had no answer or a 5xx. A create refused now may still
  // have created its object then.
  bool resent = false;
};

struct ListOptions {
  std::string label_selector;
  int limit = 0;                 // 0 = server default
  std::string continue_token;
};

struct DeleteOptions {
  std::string propagation_policy;  // "", "Background", "Foreground", "Orphan"
  std::string precondition_uid;    // delete only this incarnation
};

struct WatchOptions {
  std::string label_selector;
  std::string resource_version;     // resume point ("" = from now)
  bool bookmarks = true;
  int timeout_seconds = 0;          // server-side end of the watch (0 = server default)
  std::chrono::milliseconds idle_timeout{120'000};  // no byte for this long = dead stream
  // For a watcher that reads a few fields: the sub-members of the object to
  // build, by top-level member (see watch_line.h); the rest is skipped.
  OnlyFields only_fields;
  // Asked about every 100 ms while the stream is quiet: true ends the watch
  // (WatchEnd::stopped), so a shutdown need not wait for the next event.
  std::function<bool()> stop_requested;
  // Readable when the owner wants the watch to end (a StopSignal's fd): a
  // quiet stream then waits on it instead of asking stop_requested every
  // 100 ms. Requires stop_requested, which must say true once the fd is
  // readable (it is asked between events, and tells a stop from an end).
  int stop_fd = -1;
};

struct WatchEvent {
  std::string type;  // ADDED | MODIFIED | DELETED | BOOKMARK | ERROR
  nlohmann::json object;
};

struct WatchEnd {
  std::string last_resource_version;  // resume from here
  bool expired = false;               // 410: the resume point is gone; relist
  bool stopped = false;               // the handler asked to stop
};

class KubeClient {
 public:
  static Result<std::unique_ptr<KubeClient>> Create(const inventory::ClusterCredentials& creds,
                                                    KubeClientOptions options = {});

  // Whether a successful reply's body is parsed into KubeReply::body. A
  // caller that only needs the status code saves parsing the object the
  // server echoes back; error bodies are always decoded.
  enum class Body { kParse, kOnlyOnError };

  Result<KubeReply> Get(const std::string& path);
  Result<KubeReply> List(const std::string& path, const ListOptions& options = {});
  Result<KubeReply> Create(const std::string& path, const nlohmann::json& object, Body body = Body::kParse);
  Result<KubeReply> Delete(const std::string& path, const DeleteOptions& options = {}, Body body = Body::kParse);
  Result<KubeReply> MergePatch(const std::string& path, const nlohmann::json& patch);

  // Create, Delete and MergePatch in two halves (see http::Client::Begin): Start sends
  // the request, Finish waits for its answer and makes the retries Call
  // makes. A caller with requests for several clusters starts them all, then
  // finishes each, so their round trips overlap. Every Start wants its
  // Finish before this client is used again (a Start or call before it
  // reads and drops the unread answer first).
  void StartCreate(const std::string& path, const nlohmann::json& object, Body body = Body::kParse);
  void StartDelete(const std::string& path, const DeleteOptions& options = {}, Body body = Body::kParse);
  void StartMergePatch(const std::string& path, const nlohmann::json& patch, Body body = Body::kParse);
  Result<KubeReply> Finish();
  // Whether the started request's answer has come (Finish would not wait),
  // waiting for it until `until` at most; true when Finish has nothing to
  // wait for (nothing started, or it was not sent). When it comes, a wait
  // here counts as Finish's own for the exchange's round trip
  // (TakeExchange); when it gives up, the exchange tells no round trip.
  bool AnswerBy(std::chrono::steady_clock::time_point until);
  // Whether the call the last Finish read wrote its request whole at least
  // once: one that did not (no connection, a credential it could not get)
  // cannot have been carried out, whatever came of it.
  bool last_sent() const { return last_sent_; }

  // How the last exchange Finish read went, for the pool's concurrency
  // limit (concurrency_limit.h); taken once, then kNone until the next.
  struct Exchange {
    enum class Outcome { kNone, kAnswered, kOverloaded } outcome = Outcome::kNone;
    // The request went out and no answer came within its deadline (also
    // kOverloaded): the cluster may be stalling (ClientPool::stalled_for_ms).
    bool no_answer = false;
    // An answer came, with this HTTP status, to a request that was or was
    // not a write (not a GET): what ends a pool's stall (ClientPool) is a
    // write answered neither 5xx nor 429.
    bool answered = false;
    int status = 0;
    bool write = false;
    std::string method;  // the request's: a stall ends for the verb that went unanswered
    // kAnswered: from the request sent to its answer read, on a connection
    // already open, when the answer was waited for (a round trip that
    // opened one, with its TLS handshake, says nothing of the cluster's
    // queue, and an answer found already there came at an unknown moment:
    // neither is told).
    std::chrono::microseconds round_trip{0};
  };
  Exchange TakeExchange();

  // Streams watch events to handler (return false to stop) until the server
  // ends the stream, the resume point expires (410), or the stream goes idle
  // (kDeadlineExceeded). Call again from WatchEnd::last_resource_version to
  // resume; on `expired`, relist first.
  Result<WatchEnd> Watch(const std::string& path, const WatchOptions& options,
                         const std::function<bool(const WatchEvent&)>& handler);

 private:
  KubeClient(inventory::ClusterCredentials creds, KubeClientOptions options,
             std::unique_ptr<http::Client> client)
      : creds_(std::move(creds)), options_(options), client_(std::move(client)) {}
  Result<KubeReply> Call(const std::string& method, const std::string& target, const std::string& body,
                         const std::string& content_type, Body reply_body = Body::kParse);
  void Start(const std::string& method, const std::string& target, std::string body,
             const std::string& content_type, Body reply_body);
  // A started request: what a retry sends again, and how the first try went.
  struct Pending {
    std::string method, target, body;
    Body reply_body = Body::kParse;
    Result<std::vector<std::pair<std::string, std::string>>> headers = Status::Unavailable("not started");
    std::string token;  // the bearer token in headers, handed back on a 401
    Status sent;
    std::chrono::steady_clock::time_point sent_at;
    int connects = 0;  // the connections client_ had opened before it was sent
    uint64_t read_waits = 0;  // client_'s read waits once it was sent (AnswerBy's wait counts)
    // AnswerBy gave up on it: its answer is read later, perhaps after
    // others of the same thread, so the time it took is not a round trip.
    bool given_up = false;
  };
  // The request headers; *token is set to the bearer token they carry.
  Result<std::vector<std::pair<std::string, std::string>>> Headers(const std::string& content_type,
                                                                   std::string* token);
  // The cluster answered 401 to `token`: its source may have a better one
  // for the next request (an exec plugin is run again; see TokenSource).
  void Refused(const std::string& token);
  Result<std::unique_ptr<http::Client>> NewConnection() const;

  Exchange exchange_;
  inventory::ClusterCredentials creds_;
  KubeClientOptions options_;
  std::unique_ptr<http::Client> client_;
  // Watches' own connection, apart from client_'s requests: kept from one
  // watch to the next when the server ends a stream cleanly (as the
  // apiserver does at timeoutSeconds), so resuming costs no new handshake.
  std::unique_ptr<http::Client> watch_client_;
  std::optional<Pending> pending_;
  bool last_sent_ = false;
};

// Decodes a Kubernetes Status body (exposed for tests).
KubeError DecodeError(int http_status, const std::string& body, const std::string& retry_after);
// Replaces each occurrence of the bearer token sent in a cluster's message
// with "<token>", and a message's end that is the token's first 8 or more
// characters (a page cut short): a server that echoes the request's
// Authorization in its error must not put the token in gantry's log and views.
void WithoutToken(std::string& message, const std::string& token);

}  // namespace gantry::kube
