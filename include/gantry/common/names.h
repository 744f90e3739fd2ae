// Name rules shared by the API, the job document and remote object naming.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gantry {

// Kubernetes DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most max_len.
// Returns "" when valid, else a sentence saying what is wrong.
std::string CheckDns1123Label(std::string_view name, std::size_t max_len = 63);

// DNS-1123 subdomain (dots allowed between labels), at most 253 chars.
std::string CheckDns1123Subdomain(std::string_view name);

// Kubernetes label key ("prefix/name" or "name") and value rules.
std::string CheckLabelKey(std::string_view key);
std::string CheckLabelValue(std::string_view value);

// Random RFC 4122 version-4 UUID from the OS's CSPRNG (128 bits, 122 random).
std::string NewUid();

}  // namespace gantry
