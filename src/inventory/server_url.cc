#include "server_url.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "gantry/common/ascii.h"

namespace gantry::inventory::internal {

std::string RedactUrl(std::string_view url) {
  const std::size_t scheme = url.find("://");
  const std::size_t scheme_end = scheme == std::string_view::npos ? 0 : scheme + 3;
  std::string out(url.substr(0, scheme_end));
  std::string_view rest = url.substr(scheme_end);
  const std::size_t at = rest.find('@');
  if (at != std::string_view::npos && at < rest.find('/')) {
    out += "[redacted]@";
    rest.remove_prefix(at + 1);
  }
  const std::size_t query = rest.find_first_of("?#");
  out += rest.substr(0, query);
  if (query == std::string_view::npos) return out;
  out.push_back(rest[query]);
  rest.remove_prefix(query + 1);
  while (!rest.empty()) {
    const std::size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    out += pair.substr(0, pair.find('='));
    if (pair.find('=') != std::string_view::npos) out += "=[redacted]";
    if (amp == std::string_view::npos) break;
    out.push_back('&');
    rest.remove_prefix(amp + 1);
  }
  return out;
}

Result<ServerAddress> ParseServerUrl(std::string_view url) {
  const std::string quoted = RedactUrl(url);
  // The scheme is compared without regard to case, as Go's url.Parse (and
  // so kubectl) reads it: HTTPS://h is https://h.
  constexpr std::string_view kScheme = "https://";
  if (ToLowerAscii(url.substr(0, kScheme.size())) != kScheme) {
    return Status::Invalid(fmt::format("server '{}' must be an https:// URL", quoted));
  }
  std::string_view rest = url.substr(kScheme.size());
  // As Go's url.Parse (kubectl's) refuses them: a line break would put a
  // header of its own before every request gantry sends there.
  if (HasSpaceOrControl(rest)) {
    std::string shown = quoted;  // each control character shown as '?': a message must not break a log line
    std::replace_if(shown.begin(), shown.end(), IsAsciiControl, '?');
    return Status::Invalid(fmt::format("server '{}' holds a space or a control character", shown));
  }
  if (rest.find_first_of("?#@") != std::string_view::npos) {
    return Status::Invalid(
        fmt::format("server '{}' must not have user info, query or fragment", quoted));
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
      return Status::Invalid(fmt::format("server '{}': unterminated IPv6 address", quoted));
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(':')) {
      return Status::Invalid(fmt::format("server '{}': bad text after IPv6 address", quoted));
    }
    if (!after.empty()) port_text = after.substr(1);
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (out.host.empty()) return Status::Invalid(fmt::format("server '{}' has no host", quoted));
  if (!port_text.empty() || authority.ends_with(':')) {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return Status::Invalid(fmt::format("server '{}': port must be from 1 to 65535", quoted));
    }
    out.port = static_cast<uint16_t>(port);
  }
  return out;
}

}  // namespace gantry::inventory::internal
