#include "gantry/kube/kube_client.h"

#include <chrono>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "gantry/common/cut_text.h"
#include "gantry/common/json_path.h"
#include "gantry/common/json_text.h"
#include "gantry/common/stop_signal.h"
#include "gantry/http/message.h"
#include "gantry/kube/watch_line.h"

namespace gantry::kube {
namespace {

bool Retryable(int status) { return status == 429 || status >= 500; }

}  // namespace

KubeError DecodeError(int http_status, const std::string& body, const std::string& given_retry_after) {
  // Given twice, the client joins the values ("1, 1"): the last one counts.
  std::string retry_after = given_retry_after.substr(given_retry_after.rfind(',') + 1);
  retry_after.erase(0, std::min(retry_after.find_first_not_of(' '), retry_after.size()));
  KubeError e;
  e.code = http_status;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && JsonStringAt(j, {"kind"}) == "Status") {
    // Cleaned: a cluster's words reach log lines, events and terminals.
    e.reason = CleanText(JsonStringAt(j, {"reason"}));
    e.message = CleanText(JsonStringAt(j, {"message"}));
    if (j.contains("code") && j["code"].is_number_integer()) e.code = j["code"].get<int>();
  } else {
    // Someone else's page (a proxy's, a load balancer's): its first 200
    // bytes, as printable ASCII, so that no cut character or stray byte
    // reaches a log line, an event or a JSON answer.
    e.message = body.substr(0, 200);
    for (char& c : e.message) {
      const auto b = static_cast<unsigned char>(c);
      if (b < 0x20 || b >= 0x7f) c = b == '\n' || b == '\t' || b == '\r' ? ' ' : '?';
    }
  }
  if (e.message.empty()) {
    // No words at all (a redirect, an empty page): at least what it was.
    e.message = http_status >= 300 && http_status < 400
                    ? fmt::format("HTTP {}, a redirect, which gantry does not follow: point the kubeconfig's server at "
                                  "the API server itself",
                                  http_status)
                    : fmt::format("HTTP {} with no message", http_status);
  }
  if (!retry_after.empty() && retry_after.find_first_not_of("0123456789") == std::string::npos &&
      retry_after.size() < 6) {
    e.retry_after_seconds = std::stoi(retry_after);
  }
  return e;
}

void WithoutToken(std::string& message, const std::string& token) {
  constexpr std::size_t kShortest = 8;  // shorter, a token (or a piece of one) could match ordinary words
  if (token.size() < kShortest) return;  // (none sent)
  for (std::size_t at = message.find(token); at != std::string::npos; at = message.find(token, at)) {
    message.replace(at, token.size(), "<token>");
  }
  // A message cut short (a page's first 200 bytes) may end in the token's
  // first characters.
  for (std::size_t n = std::min(token.size() - 1, message.size()); n >= kShortest; --n) {
    if (message.compare(message.size() - n, n, token, 0, n) == 0) {
      message.replace(message.size() - n, n, "<token>");
      break;
    }
  }
}

Result<std::unique_ptr<http::Client>> KubeClient::NewConnection() const {
  http::ClientOptions options;
  options.insecure_skip_verify = creds_.insecure;  // allowed by the cluster's file (allowInsecure)
  options.connect_timeout = options_.timeout;
  options.request_timeout = options_.timeout;
  options.stop_fd = options_.stop_fd;
  options.ca_pem = creds_.ca_pem;
  options.client_cert_pem = creds_.client_cert_pem;
  options.client_key_pem = creds_.client_key_pem;
  options.tls_server_name = creds_.tls_server_name;
  return http::Client::Create("https://" + http::HostPort(creds_.host, std::to_string(creds_.port)), options);
}

Result<std::unique_ptr<KubeClient>> KubeClient::Create(const inventory::ClusterCredentials& creds,
                                                       KubeClientOptions options) {
  auto client = std::unique_ptr<KubeClient>(new KubeClient(creds, options, nullptr));
  auto conn = client->NewConnection();
  if (!conn.ok()) return conn.status();
  client->client_ = std::move(conn.value());
  return client;
}

Result<std::vector<std::pair<std::string, std::string>>> KubeClient::Headers(const std::string& content_type,
                                                                             std::string* token) {
  std::vector<std::pair<std::string, std::string>> headers = {{"Accept", "application/json"}};
  if (!content_type.empty()) headers.emplace_back("Content-Type", content_type);
  token->clear();
  if (creds_.token_source) {
    // Per request: a rotated file is re-read, an exec plugin's token renewed.
    auto current = creds_.token_source->Token();
    if (!current.ok()) return current.status();
    *token = std::move(current).value();
    // (Every source refuses a token with a line break; the HTTP client sends
    // no header that has one.)
    headers.emplace_back("Authorization", "Bearer " + *token);
  }
  return headers;
}

void KubeClient::Refused(const std::string& token) {
  if (creds_.token_source && !token.empty()) creds_.token_source->Invalidate(token);
}

Result<KubeReply> KubeClient::Call(const std::string& method, const std::string& target, const std::string& body,
                                   const std::string& content_type, Body reply_body) {
  Start(method, target, body, content_type, reply_body);
  return Finish();
}

void KubeClient::Start(const std::string& method, const std::string& target, std::string body,
                       const std::string& content_type, Body reply_body) {
  if (pending_) (void)Finish();  // a call started and never finished: its answer is read first
  Pending& p = pending_.emplace();
  p.method = method;
  p.target = creds_.base_path + target;
  p.body = std::move(body);
  p.reply_body = reply_body;
  p.headers = Headers(content_type, &p.token);
  p.connects = client_->connects();
  p.sent_at = std::chrono::steady_clock::now();
  if (p.headers.ok()) p.sent = client_->Begin(p.method, p.target, p.body, *p.headers);
  p.read_waits = client_->read_waits();
}

bool KubeClient::AnswerBy(std::chrono::steady_clock::time_point until) {
  if (!pending_ || !pending_->headers.ok() || !pending_->sent.ok()) return true;  // Finish answers at once
  if (client_->AnswerBy(until)) return true;
  pending_->given_up = true;
  return false;
}

KubeClient::Exchange KubeClient::TakeExchange() { return std::exchange(exchange_, Exchange{}); }

Result<KubeReply> KubeClient::Finish() {
  if (!pending_) return Status::Internal("kube client: Finish without a call started");
  Pending p = std::move(*pending_);
  pending_.reset();
  exchange_ = {};
  last_sent_ = false;
  if (!p.headers.ok()) return p.headers.status();
  last_sent_ = p.sent.ok();
  const uint64_t read_waits = p.read_waits;
  std::chrono::milliseconds backoff = options_.first_backoff;
  Status last = Status::Unavailable("no attempt made");
  std::optional<KubeReply> last_reply;  // the last attempt's answer, when it was one
  bool earlier_may_have_landed = false;  // KubeReply::resent
  for (int attempt = 1; attempt <= std::max(1, options_.max_attempts); ++attempt) {
    // The first try was sent by Start; a retry is a whole exchange.
    if (attempt > 1) last_sent_ = true;  // a whole exchange: it may have been written
    Result<http::ClientResponse> res =
        attempt > 1 ? client_->Do(p.method, p.target, p.body, *p.headers)
                    : (p.sent.ok() ? client_->Finish() : Result<http::ClientResponse>(p.sent));
    std::chrono::milliseconds wait = backoff;
    if (attempt == 1) {
      exchange_.answered = res.ok();
      exchange_.status = res.ok() ? res->status : 0;
      exchange_.write = p.method != "GET";
      exchange_.method = p.method;
      // The first try's round trip: the one the request's own connection
      // carried, sent by Start.
      if (!res.ok() || res->status == 429 || res->status == 503) {
        exchange_.outcome = Exchange::Outcome::kOverloaded;
        exchange_.no_answer = p.sent.ok() && !res.ok() && res.status().code() == Code::kDeadlineExceeded;
      } else if (!p.given_up && client_->connects() == p.connects && client_->read_waits() != read_waits) {
        // Waited for: the answer came while this Finish read, so the time
        // since the request went out is its round trip. One there already
        // (the caller was busy with other clusters' answers meanwhile) came
        // at an unknown moment, and is not told.
        exchange_.outcome = Exchange::Outcome::kAnswered;
        exchange_.round_trip = std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - p.sent_at);
      }
    }
    if (res.ok()) {
      KubeReply reply;
      reply.status = res->status;
      if (auto date = res->headers.find("date"); date != res->headers.end()) reply.date = date->second;
      reply.attempts = attempt;
      reply.resent = earlier_may_have_landed || res->resent;
      earlier_may_have_landed = reply.resent || res->status >= 500;
      if (p.reply_body == Body::kOnlyOnError && reply.ok()) return reply;
      reply.body = nlohmann::json::parse(res->body, nullptr, false);
      if (reply.body.is_discarded()) reply.body = nullptr;
      if (reply.ok()) return reply;
      reply.error = DecodeError(res->status, res->body, res->headers["retry-after"]);
      WithoutToken(reply.error->message, p.token);
      WithoutToken(reply.error->reason, p.token);
      if (res->status == 401) Refused(p.token);
      if (!Retryable(res->status) || attempt == options_.max_attempts) return reply;
      if (reply.error->retry_after_seconds > 0) wait = std::chrono::seconds(reply.error->retry_after_seconds);
      last_reply = std::move(reply);
    } else {
      last = res.status();
      last_reply.reset();
      if (attempt == options_.max_attempts) return last;
      if (last_sent_) earlier_may_have_landed = true;
    }
    if (StopFdSet(options_.stop_fd, std::min(wait, options_.max_backoff))) {  // the backoff between attempts
      if (last_reply) return std::move(*last_reply);
      return last;
    }
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
  return last;
}

Result<KubeReply> KubeClient::Get(const std::string& path) { return Call("GET", path, "", ""); }

Result<KubeReply> KubeClient::List(const std::string& path, const ListOptions& options) {
  std::string query;
  auto add = [&](const std::string& k, const std::string& v) { query += (query.empty() ? "?" : "&") + k + "=" + http::PercentEncode(v); };
  if (!options.label_selector.empty()) add("labelSelector", options.label_selector);
  if (options.limit > 0) add("limit", std::to_string(options.limit));
  if (!options.continue_token.empty()) add("continue", options.continue_token);
  return Call("GET", path + query, "", "");
}

Result<KubeReply> KubeClient::Create(const std::string& path, const nlohmann::json& object, Body body) {
  StartCreate(path, object, body);
  return Finish();
}

void KubeClient::StartCreate(const std::string& path, const nlohmann::json& object, Body body) {
  std::string text;
  AppendJson(text, object);
  Start("POST", path, std::move(text), "application/json", body);
}

Result<KubeReply> KubeClient::Delete(const std::string& path, const DeleteOptions& options, Body reply_body) {
  StartDelete(path, options, reply_body);
  return Finish();
}

void KubeClient::StartDelete(const std::string& path, const DeleteOptions& options, Body reply_body) {
  nlohmann::json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (!options.precondition_uid.empty()) body["preconditions"] = {{"uid", options.precondition_uid}};
  Start("DELETE", path, body.dump(), "application/json", reply_body);
}

Result<KubeReply> KubeClient::MergePatch(const std::string& path, const nlohmann::json& patch) {
  return Call("PATCH", path, patch.dump(), "application/merge-patch+json");
}

void KubeClient::StartMergePatch(const std::string& path, const nlohmann::json& patch, Body reply_body) {
  Start("PATCH", path, patch.dump(), "application/merge-patch+json", reply_body);
}

namespace {

// See Watch: the longest watch line taken, and how long a stream may run on
// past its timeoutSeconds.
constexpr std::size_t kMaxWatchLine = std::size_t{16} << 20;
constexpr std::chrono::seconds kWatchOverrun{30};

}  // namespace

Result<WatchEnd> KubeClient::Watch(const std::string& path, const WatchOptions& options,
                                   const std::function<bool(const WatchEvent&)>& handler) {
  std::string query = "?watch=true";
  if (!options.label_selector.empty()) query += "&labelSelector=" + http::PercentEncode(options.label_selector);
  if (!options.resource_version.empty()) query += "&resourceVersion=" + http::PercentEncode(options.resource_version);
  if (options.bookmarks) query += "&allowWatchBookmarks=true";
  if (options.timeout_seconds > 0) query += "&timeoutSeconds=" + std::to_string(options.timeout_seconds);
  std::string token;
  auto headers = Headers("", &token);
  if (!headers.ok()) return headers.status();
  if (!watch_client_) {
    auto conn = NewConnection();
    if (!conn.ok()) return conn.status();
    watch_client_ = std::move(*conn);
  }
  WatchEnd end;
  end.last_resource_version = options.resource_version;
  // Why the stream cannot be followed on: an ERROR event other than 410
  // (the watch cache failing, say), or a line that is not a JSON object. An
  // event skipped would stay unseen until the next list, while later events
  // move the resume point past it; and resuming from the same point would
  // meet the same error at once, again and again.
  std::string failure;
  std::string pending;  // a partial line between chunks
  std::size_t scanned = 0;  // pending holds no newline before this
  // However its bytes come (one a second keeps the idle timeout at bay), a
  // stream ends at most this long after its timeoutSeconds: a server that
  // never ends it would leave the view as it is for ever.
  const auto outlasted = std::chrono::steady_clock::now() +
                         std::chrono::seconds(options.timeout_seconds > 0 ? options.timeout_seconds : 3600) +
                         kWatchOverrun;
  auto on_data = [&](std::string_view data) {
    pending.append(data);
    if (std::chrono::steady_clock::now() > outlasted) {
      failure = fmt::format("the stream outlasted its timeoutSeconds ({}) by more than {} s", options.timeout_seconds,
                            std::chrono::duration_cast<std::chrono::seconds>(kWatchOverrun).count());
      pending.clear();
      return false;
    }
    std::size_t start = 0;
    while (true) {
      std::size_t nl = pending.find('\n', std::max(start, scanned));
      if (nl == std::string::npos) {
        scanned = pending.size();
        // One object is at most a few MiB (etcd's limit is 1.5 MiB): a
        // longer line is no event, and would grow without end.
        if (pending.size() - start > kMaxWatchLine) {
          failure = fmt::format("a watch line longer than {} MiB", kMaxWatchLine >> 20);
          pending.clear();
          return false;
        }
        break;
      }
      const std::string_view raw = std::string_view(pending).substr(start, nl - start);
      auto line = ParseWatchLine(raw, options.only_fields);
      start = nl + 1;
      if (!line.is_object()) {
        if (raw.find_first_not_of(" \t\r") == std::string_view::npos) continue;  // a blank line
        failure = fmt::format("a watch line that is not a JSON object ({} bytes)", raw.size());
        pending.clear();
        return false;
      }
      WatchEvent event;
      if (auto t = line.find("type"); t != line.end() && t->is_string()) event.type = t->get<std::string>();
      auto o = line.find("object");
      event.object = o != line.end() ? std::move(*o) : nlohmann::json::object();
      if (event.type == "ERROR") {
        const int64_t code = JsonIntAt(event.object, {"code"}, 0);
        if (code == 410) {
          end.expired = true;
        } else {
          failure = fmt::format("the server ended the watch with an error: {} {}", code,
                                CleanText(JsonStringAt(event.object, {"message"})));
          WithoutToken(failure, token);
        }
        pending.clear();
        return false;
      }
      std::string rv = JsonStringAt(event.object, {"metadata", "resourceVersion"});
      if (!rv.empty()) end.last_resource_version = rv;
      if (event.type == "BOOKMARK") continue;
      if (!handler(event)) {
        end.stopped = true;
        pending.clear();
        return false;
      }
    }
    pending.erase(0, start);
    scanned = scanned > start ? scanned - start : 0;
    return true;
  };
  bool stop_seen = false;
  std::function<bool()> stop_requested;
  if (options.stop_requested) {
    stop_requested = [&] { return stop_seen = options.stop_requested(); };
  }
  auto res = watch_client_->Stream("GET", creds_.base_path + path + query, *headers, options.idle_timeout, on_data,
                             stop_requested, options.stop_fd);
  if (!res.ok()) return res.status();
  if (stop_seen || (options.stop_fd >= 0 && options.stop_requested && options.stop_requested())) {
    end.stopped = true;
    return end;
  }
  if (res->status == 410) {
    end.expired = true;
    return end;
  }
  if (res->status < 200 || res->status >= 300) {
    if (res->status == 401) Refused(token);
    KubeError e = DecodeError(res->status, res->body, "");
    WithoutToken(e.message, token);
    const std::string cut =
        res->body_cut ? fmt::format(" (the body cut at {} KiB)", http::kStreamErrorBodyLimit >> 10) : "";
    return Status::Unavailable(
        fmt::format("watch {} answered {} {}: {}{}", path, e.code, e.reason, e.message, cut));
  }
  if (!failure.empty()) return Status::Unavailable(fmt::format("watch {}: {}", path, failure));
  return end;
}

}  // namespace gantry::kube
