// Parsing a kubeconfig `server` URL: "https://host[:port][/prefix]".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gantry/common/status.h"

namespace gantry::inventory::internal {

struct ServerAddress {
  std::string host;  // IPv6 without brackets
  uint16_t port = 443;
  std::string base_path;  // "" or "/prefix" (no trailing '/')
};

// https only: the client always speaks TLS. A query, fragment or user info is
// refused (they would be silently dropped otherwise).
Result<ServerAddress> ParseServerUrl(std::string_view url);

// url as a message may quote it: scheme, host and path kept; its user
// information and the values of its query redacted, as credentials go there.
std::string RedactUrl(std::string_view url);

}  // namespace gantry::inventory::internal
