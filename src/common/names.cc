#include "gantry/common/names.h"

#include <openssl/rand.h>

#include <array>
#include <fmt/format.h>

namespace gantry {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z'); }

}  // namespace

std::string CheckDns1123Label(std::string_view name, std::size_t max_len) {
  if (name.empty()) return "must not be empty";
  if (name.size() > max_len) return fmt::format("must be at most {} characters", max_len);
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '-') {
      return "must consist of lower case alphanumeric characters or '-'";
    }
  }
  if (name.front() == '-' || name.back() == '-') {
    return "must start and end with an alphanumeric character";
  }
  return "";
}

std::string CheckDns1123Subdomain(std::string_view name) {
  if (name.empty()) return "must not be empty";
  if (name.size() > 253) return "must be at most 253 characters";
  std::size_t start = 0;
  while (true) {
    std::size_t dot = name.find('.', start);
    std::string_view part = name.substr(start, dot == std::string_view::npos ? name.npos : dot - start);
    // Kubernetes (IsDNS1123Subdomain) limits only the whole name, not each
    // part to a label's 63.
    if (std::string e = CheckDns1123Label(part, 253); !e.empty()) return "each dot-separated part " + e;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return "";
}

std::string CheckQueueName(std::string_view name) {
  if (std::string e = CheckDns1123Subdomain(name); !e.empty()) return e;
  if (name.size() > kMaxQueueNameLength) {
    return fmt::format("must be at most {} characters (it is the value of the worker job's "
                       "kueue.x-k8s.io/queue-name label)",
                       kMaxQueueNameLength);
  }
  return "";
}

std::string CheckLabelValue(std::string_view value) {
  if (value.empty()) return "";
  if (value.size() > 63) return "must be at most 63 characters";
  for (char c : value) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') {
      return "must consist of alphanumeric characters, '-', '_' or '.'";
    }
  }
  if (!IsAlnum(value.front()) || !IsAlnum(value.back())) {
    return "must start and end with an alphanumeric character";
  }
  return "";
}

std::string CheckLabelKey(std::string_view key) {
  std::string_view name = key;
  if (auto slash = key.find('/'); slash != std::string_view::npos) {
    if (std::string e = CheckDns1123Subdomain(key.substr(0, slash)); !e.empty()) {
      return "prefix " + e;
    }
    name = key.substr(slash + 1);
  }
  if (name.empty()) return "name part must not be empty";
  if (std::string e = CheckLabelValue(name); !e.empty()) return "name part " + e;
  return "";
}

std::string NewUid(int64_t unix_ms) {
  // Drawn from the CSPRNG 32 uids at a time: one RAND_bytes call costs about
  // as much as the rest of a small request's validation. The pool is per
  // thread, so no two threads ever hand out the same bytes.
  constexpr std::size_t kUidBytes = 16;
  constexpr std::size_t kPooled = 32 * kUidBytes;
  thread_local std::array<unsigned char, kPooled> pool{};
  thread_local std::size_t used = kPooled;
  if (used == kPooled) {
    if (RAND_bytes(pool.data(), static_cast<int>(pool.size())) != 1) {
      // The CSPRNG failing is not an input error; there is nothing sane to do.
      std::abort();
    }
    used = 0;
  }
  unsigned char* b = pool.data() + used;  // handed out once: used moves past it
  used += kUidBytes;
  // RFC 9562 version 7: the time in milliseconds, big-endian, in the first
  // 48 bits; the version and variant bits; 74 random bits in the rest.
  const uint64_t ms = unix_ms < 0 ? 0 : static_cast<uint64_t>(unix_ms);
  for (std::size_t i = 0; i < 6; ++i) b[i] = static_cast<unsigned char>(ms >> (8 * (5 - i)));
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x70);  // version 7
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 9562 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(36);
  for (std::size_t i = 0; i < kUidBytes; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex.push_back('-');
    hex.push_back(kHex[b[i] >> 4]);
    hex.push_back(kHex[b[i] & 0x0f]);
  }
  return hex;
}

}  // namespace gantry
