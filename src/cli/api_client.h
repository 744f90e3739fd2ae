// ApiClient: the CLI's view of the gantry REST API. Turns transport and HTTP
// failures into the CLI's exit codes and a one-line message.
#pragma once

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

class ApiClient {
 public:
  // Returns nullptr and sets *error for an unusable server URL.
  static std::unique_ptr<ApiClient> Create(const ConnectionFlags& flags, std::string* error);
  ApiResult Call(const std::string& method, const std::string& target, const std::string& body = "",
                 const std::string& content_type = "application/json");

 private:
  ApiClient(std::unique_ptr<http::Client> client, std::string token, std::string server)
      : client_(std::move(client)), token_(std::move(token)), server_(std::move(server)) {}
  std::unique_ptr<http::Client> client_;
  std::string token_;
  std::string server_;
};

// Percent-encodes a path segment or query value.
inline std::string UrlEncode(const std::string& s) { return http::PercentEncode(s); }

}  // namespace gantry::cli
