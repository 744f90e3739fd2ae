// Name rules shared by the API, the job document and remote object naming.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gantry {

// Kubernetes DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most max_len.
// Returns "" when valid, else a sentence saying what is wrong.
std::string CheckDns1123Label(std::string_view name, std::size_t max_len = 63);

// DNS-1123 subdomain (dots allowed between labels), at most 253 chars in
// all; as in Kubernetes, a part between dots may be longer than a label's 63.
std::string CheckDns1123Subdomain(std::string_view name);
// A worker's LocalQueue name as gantry writes it: a DNS-1123 subdomain (the
// Workload's spec.queueName) that also fits the 63 characters of the value
// of the real job's kueue.x-k8s.io/queue-name label. "" when valid.
inline constexpr std::size_t kMaxQueueNameLength = 63;
std::string CheckQueueName(std::string_view name);

// Kubernetes label key ("prefix/name" or "name") and value rules.
std::string CheckLabelKey(std::string_view key);
std::string CheckLabelValue(std::string_view value);

// An RFC 9562 version-7 UUID: unix_ms in its first 48 bits, then 74 bits
// from the OS's CSPRNG. Uids made later sort later, so the store's uid index
// grows at its end instead of at a random page (one page written per commit
// instead of one per job). Unguessable and unique like a version 4: two uids
// collide only if made in the same millisecond with the same 74 random bits.
std::string NewUid(int64_t unix_ms);

}  // namespace gantry
