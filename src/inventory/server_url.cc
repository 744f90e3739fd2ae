#include "server_url.h"

#include <fmt/format.h>

#include <charconv>

namespace gantry::inventory::internal {

Result<ServerAddress> ParseServerUrl(std::string_view url) {
  constexpr std::string_view kScheme = "https://";
  if (!url.starts_with(kScheme)) {
    return Status::Invalid(fmt::format("server '{}' must be an https:// URL", url));
  }
  std::string_view rest = url.substr(kScheme.size());
  if (rest.find_first_of("?#@") != std::string_view::npos) {
    return Status::Invalid(
        fmt::format("server '{}' must not have user info, query or fragment", url));
  }
  ServerAddress out;
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    while (path.ends_with('/')) path.remove_suffix(1);
    out.base_path = std::string(path);
  }
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return Status::Invalid(fmt::format("server '{}': unterminated IPv6 address", url));
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) {
      return Status::Invalid(fmt::format("server '{}': bad text after IPv6 address", url));
    }
    if (!after.empty()) port_text = after.substr(1);
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) return Status::Invalid(fmt::format("server '{}' has no host", url));
  if (!port_text.empty() || authority.ends_with(':')) {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return Status::Invalid(fmt::format("server '{}': port must be from 1 to 65535", url));
    }
    out.port = static_cast<uint16_t>(port);
  }
  return out;
}

}  // namespace gantry::inventory::internal
