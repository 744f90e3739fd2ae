#include "api_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "gantry/common/clock.h"
#include "gantry/common/cut_text.h"
#include "gantry/common/json_fast.h"

namespace gantry::cli {

std::unique_ptr<ApiClient> ApiClient::Create(const ConnectionFlags& flags, std::string* error) {
  http::ClientOptions options;
  options.ca_file = flags.ca_file;
  options.untrusted_hint = flags.ca_file.empty()
                               ? "the daemon's certificate is not signed by a CA this host trusts: pass its CA with "
                                 "--ca-file or GANTRY_CA_FILE"
                               : "the daemon's certificate is not signed by the CA in " + flags.ca_file +
                                     " (--ca-file or GANTRY_CA_FILE)";
  options.request_timeout = std::chrono::seconds(flags.timeout_seconds);
  // The daemon serves its API at the root: a path (a proxy's prefix) would
  // be dropped, and the requests would go to whatever the root is.
  if (const auto scheme = flags.server.find("://"); scheme != std::string::npos) {
    // Nor a query, a fragment or credentials: they would be taken for the
    // host's name or port, and a password written back in the error.
    if (flags.server.find_first_of("?#@", scheme + 3) != std::string::npos) {
      *error = fmt::format("server URL '{}' may hold only the scheme, host and port (no query, fragment or user)",
                           flags.server.substr(0, scheme + 3) + "...");
      return nullptr;
    }
    const auto slash = flags.server.find('/', scheme + 3);
    if (slash != std::string::npos && flags.server.find_first_not_of('/', slash) != std::string::npos) {
      *error = fmt::format("server URL '{}' has a path ('{}'): gantry serves its API at the root; give the "
                           "scheme, host and port alone",
                           flags.server, flags.server.substr(slash));
      return nullptr;
    }
  }
  auto client = http::Client::Create(flags.server, options);
  if (!client.ok()) {
    *error = client.status().message();
    return nullptr;
  }
  return std::unique_ptr<ApiClient>(
      new ApiClient(std::move(client.value()), flags.token, flags.server, flags.timeout_seconds));
}

std::optional<std::chrono::milliseconds> RetryWait(int status, const std::map<std::string, std::string>& headers,
                                                   int64_t now_ms) {
  if (status != 429 && status != 503) return std::nullopt;
  auto it = headers.find("retry-after");
  if (it == headers.end()) {
    if (status == 429) return std::chrono::seconds(1);
    return std::nullopt;  // a 503 that does not say when: no reason to think it passes
  }
  const std::string& value = it->second;
  if (!value.empty() && value.size() < 6 && value.find_first_not_of("0123456789") == std::string::npos) {
    return std::chrono::seconds(std::stoi(value));
  }
  if (const std::optional<int64_t> at = ParseHttpDate(value)) {
    return std::chrono::milliseconds(std::max<int64_t>(0, *at - now_ms));
  }
  return std::nullopt;
}

ApiResult ApiClient::Call(const std::string& method, const std::string& target, const std::string& body,
                          const std::string& content_type) {
  using std::chrono::milliseconds;
  const milliseconds timeout = std::chrono::seconds(timeout_seconds_);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  client_->set_request_timeout(timeout);  // a call before this one may have cut it
  for (int attempt = 1;; ++attempt) {
    ApiResult result = CallOnce(method, target, body, content_type);
    const auto wait = RetryWait(result.http_status, result.headers, SystemClock().NowMillis());
    // A try after a wait gets what is left of --request-timeout, and at
    // least kMinRetryTimeout: the whole call ends within the flag's time,
    // not a full timeout past its last wait.
    if (!wait || attempt >= kMaxAttempts) return result;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now() - *wait);
    if (left < kMinRetryTimeout) return result;
    std::this_thread::sleep_for(*wait);
    client_->set_request_timeout(left);
  }
}

ApiResult ApiClient::CallOnce(const std::string& method, const std::string& target, const std::string& body,
                              const std::string& content_type) {
  std::vector<std::pair<std::string, std::string>> headers = {{"Accept", "application/json"}};
  if (!token_.empty()) headers.emplace_back("Authorization", "Bearer " + token_);
  if (!body.empty()) headers.emplace_back("Content-Type", content_type);
  ApiResult result;
  auto res = client_->Do(method, target, body, headers);
  if (!res.ok()) {
    result.exit_code = kExitUnreachable;
    result.error = fmt::format("cannot reach gantry at {}: {}{}", server_, res.status().message(),
                               SchemeHint(server_, res.status().message()));
    return result;
  }
  result.http_status = res->status;
  if (auto w = res->headers.find("warning"); w != res->headers.end()) result.warnings = WarningTexts(w->second);
  result.headers = res->headers;
  // simdjson first: a list page of 500 jobs is most of a megabyte
  // (json_fast.h); what it refuses, nlohmann judges.
  if (std::optional<nlohmann::json> fast = FastParseJson(res->body)) {
    result.body = std::move(*fast);
  } else {
    result.body = nlohmann::json::parse(res->body, nullptr, false);
    if (result.body.is_discarded()) result.body = nullptr;
  }
  if (res->status >= 200 && res->status < 300) return result;
  result.exit_code = kExitRefused;
  // What reaches the terminal is cleaned (CleanText): a field's value the
  // server quotes back, or a body from something that is not gantry, must
  // not drive the terminal or fake a line of the answer.
  std::string answer = res->body;
  while (!answer.empty() && (answer.back() == '\n' || answer.back() == '\r')) answer.pop_back();
  std::string message = CleanText(answer);
  if (result.body.is_object() && result.body.contains("message") && result.body["message"].is_string()) {
    message = CleanText(result.body["message"].get<std::string>());
    if (auto causes = result.body.value("/details/causes"_json_pointer, nlohmann::json());
        causes.is_array()) {
      const std::string said = message;
      for (const auto& c : causes) {
        if (!c.is_object()) continue;
        const auto text = [&](const char* key) {
          return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : std::string();
        };
        // One the message tells already (a single cause usually is the message) is not told twice.
        // (One with no field, such as the count of those not listed, is its message.)
        const std::string cause = CleanText(
            text("field").empty() ? text("message") : fmt::format("{}: {}", text("field"), text("message")));
        if (said.find(cause) == std::string::npos) message += "\n  " + cause;
      }
    }
  }
  while (!message.empty() && message.back() == '\n') message.pop_back();
  result.error = fmt::format("Error from server ({}): {}", res->status, message);
  return result;
}

std::string SchemeHint(const std::string& server, const std::string& error) {
  constexpr std::string_view kHttps = "https://";
  constexpr std::string_view kHttp = "http://";
  auto has = [&](std::string_view text) { return error.find(text) != std::string::npos; };
  if (server.starts_with(kHttps)) {
    // OpenSSL's words for an answer that is no TLS record: plain HTTP.
    if (has("wrong version number") || has("packet length too long") || has("http request")) {
      return fmt::format("; the server there does not speak TLS: if the daemon serves plain HTTP (no tls in its "
                         "gantry.yaml), use http://{}",
                         server.substr(kHttps.size()));
    }
  } else if (server.starts_with(kHttp)) {
    // A TLS server reads the request as a broken handshake and closes, or
    // answers with a TLS alert, which is no HTTP status line.
    if (has("end of stream") || has("connection reset") || has("bad version") || has("bad status")) {
      return fmt::format("; the server closed the connection without an HTTP answer: if the daemon serves HTTPS "
                         "(tls in its gantry.yaml), use https://{}",
                         server.substr(kHttp.size()));
    }
  }
  return "";
}

std::vector<std::string> WarningTexts(const std::string& header) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while ((i = header.find('"', i)) != std::string::npos) {
    std::string text;
    for (++i; i < header.size() && header[i] != '"'; ++i) {
      if (header[i] == '\\' && i + 1 < header.size()) ++i;
      text += header[i];
    }
    ++i;  // the closing quote
    out.push_back(std::move(text));
  }
  return out;
}

}  // namespace gantry::cli
