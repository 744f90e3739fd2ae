// ApiClient: the CLI's view of the gantry REST API. Turns transport and HTTP
// failures into the CLI's exit codes and a one-line message.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gantry/http/client.h"
#include "gantry/http/message.h"

namespace gantry::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRefused = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitUnreachable = 3;

struct ConnectionFlags {
  std::string server;   // --server / GANTRY_SERVER
  std::string token;    // --token / GANTRY_TOKEN
  std::string ca_file;  // --ca-file / GANTRY_CA_FILE
  int timeout_seconds = 30;
};

struct ApiResult {
  int exit_code = kExitOk;  // kExitOk when the server answered 2xx
  int http_status = 0;
  nlohmann::json body;      // parsed JSON body (null if not JSON)
  std::string error;        // message for the user when exit_code != 0
  // The texts of the answer's Warning headers (299 - "text"), unquoted.
  std::vector<std::string> warnings;
  // Every header of the answer, names lower-cased (a repeated one's values joined by ", ").
  std::map<std::string, std::string> headers;
};

// For a request to server that failed with error before any answer: a hint
// when the URL's scheme looks wrong for the daemon there (https:// to a plain
// HTTP daemon, http:// to a TLS one), "; ..." to append, else "".
std::string SchemeHint(const std::string& server, const std::string& error);

// The quoted texts of a Warning header's value (one or several, joined).
std::vector<std::string> WarningTexts(const std::string& header);

// How long an answer asks the client to wait before sending the request
// again: a 429 (Retry-After, or 1 s without one), or a 503 with a
// Retry-After (in seconds or an HTTP date, read at now_ms). Unset for any
// other answer, or one whose Retry-After cannot be read.
std::optional<std::chrono::milliseconds> RetryWait(int status, const std::map<std::string, std::string>& headers,
                                                   int64_t now_ms);

class ApiClient {
 public:
  // Returns nullptr and sets *error for an unusable server URL.
  static std::unique_ptr<ApiClient> Create(const ConnectionFlags& flags, std::string* error);
  // Every request of gantry's API may be sent again (a submission and a
  // cancel are idempotent): one the server asks to send again later
  // (RetryWait) is, as kubectl does, up to kMaxAttempts times, all within
  // --request-timeout. Then its last answer stands.
  ApiResult Call(const std::string& method, const std::string& target, const std::string& body = "",
                 const std::string& content_type = "application/json");
  static constexpr int kMaxAttempts = 10;
  // The shortest time a try after a wait is given: with less left of
  // --request-timeout, the last answer stands.
  static constexpr std::chrono::milliseconds kMinRetryTimeout{1'000};

 private:
  ApiClient(std::unique_ptr<http::Client> client, std::string token, std::string server, int timeout_seconds)
      : client_(std::move(client)),
        token_(std::move(token)),
        server_(std::move(server)),
        timeout_seconds_(timeout_seconds) {}
  ApiResult CallOnce(const std::string& method, const std::string& target, const std::string& body,
                     const std::string& content_type);
  std::unique_ptr<http::Client> client_;
  std::string token_;
  std::string server_;
  int timeout_seconds_;
};

// Percent-encodes a path segment or query value.
inline std::string UrlEncode(const std::string& s) { return http::PercentEncode(s); }

}  // namespace gantry::cli
