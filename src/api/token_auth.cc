#include "gantry/common/ascii.h"
#include "gantry/api/token_auth.h"

#include <openssl/evp.h>

#include <charconv>
#include <cstdint>
#include <set>
#include <string>

#include <sys/stat.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "gantry/common/names.h"

namespace gantry::api {

std::string TokenAuth::Sha256Hex(const std::string& token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(token.data(), token.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

Result<std::shared_ptr<const TokenAuth::Table>> TokenAuth::ReadFile(const std::string& path) {
  auto table = std::make_shared<Table>();
  // Whoever may write the file may grant themselves any namespace, admin
  // included: refused, as sshd refuses such a key file (the file itself,
  // through a symbolic link).
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 022) != 0) {
    return Status::Invalid(fmt::format("tokens file {}: writable by group or others (mode {:04o}), so anyone who may "
                                       "write it may grant themselves any namespace: chmod 600 {}",
                                       path, st.st_mode & 07777, path));
  }
  bool plain_tokens = false;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Status::Io(fmt::format("tokens file {}: cannot be read", path));
  } catch (const YAML::Exception& e) {
    return Status::Invalid(fmt::format("tokens file {}: line {}: {}", path, e.mark.line + 1, e.msg));
  }
  if (!root || !root["tokens"] || !root["tokens"].IsSequence()) {
    return Status::Invalid(fmt::format("tokens file {}: needs a 'tokens' list", path));
  }
  std::size_t i = 0;
  for (const auto& entry : root["tokens"]) {
    auto where = [&](const char* field) {
      return fmt::format("tokens file {}: line {}: tokens[{}].{}", path, entry.Mark().line + 1, i, field);
    };
    try {
      if (!entry.IsMap()) return Status::Invalid(where("") + " must be a mapping");
      std::set<std::string> seen;
      for (const auto& kv : entry) {
        std::string key = kv.first.as<std::string>();
        if (key != "subject" && key != "token" && key != "tokenSha256" && key != "namespaces" && key != "maxPriority" &&
            key != "priorityClasses") {
          return Status::Invalid(where(key.c_str()) + ": unknown field");
        }
        // yaml-cpp would read the first of two silently.
        if (!seen.insert(key).second) return Status::Invalid(where(key.c_str()) + ": given twice");
      }
      // A scalar's text; a bare key or ~ (null) is refused, not read as the
      // text "null" (a subject named null, or a namespace null granted).
      std::string null_field;
      auto text = [&](const YAML::Node& n, const char* field) {
        if (!n.IsScalar()) null_field = field;
        return n.IsScalar() ? n.as<std::string>() : std::string();
      };
      Principal p;
      p.subject = entry["subject"] ? text(entry["subject"], "subject") : "";
      if (!null_field.empty()) return Status::Invalid(where("subject") + ": must be a string");
      if (p.subject.empty()) return Status::Invalid(where("subject") + ": required");
      std::string hash;
      if (entry["tokenSha256"]) {
        hash = ToLowerAscii(entry["tokenSha256"].as<std::string>());
        if (hash.size() != 64 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
          return Status::Invalid(where("tokenSha256") + ": must be 64 hex digits");
        }
      } else if (entry["token"]) {
        std::string token = entry["token"].as<std::string>();
        plain_tokens = true;
        if (token.size() < 16) return Status::Invalid(where("token") + ": must be at least 16 characters");
        hash = Sha256Hex(token);
      } else {
        return Status::Invalid(where("tokenSha256") + ": one of tokenSha256 or token is required");
      }
      if (!entry["namespaces"] || !entry["namespaces"].IsSequence() || entry["namespaces"].size() == 0) {
        return Status::Invalid(where("namespaces") + ": a non-empty list is required (\"*\" for admin)");
      }
      for (const auto& ns : entry["namespaces"]) {
        std::string name = text(ns, "namespaces");
        if (!null_field.empty()) return Status::Invalid(where("namespaces") + ": each must be a string");
        if (name == "*") {
          p.admin = true;
        } else if (std::string e = CheckDns1123Label(name); !e.empty()) {
          return Status::Invalid(where("namespaces") + ": '" + name + "' " + e);
        } else {
          p.namespaces.insert(name);
        }
      }
      if (entry["maxPriority"]) {
        // A plain decimal integer, as spec.priority is written: not a quoted
        // string, and not YAML 1.1's 0x10 or 010 (octal), which would read as
        // another cap than the operator meant.
        const YAML::Node& cap = entry["maxPriority"];
        const std::string text = cap.IsScalar() && cap.Tag() == "?" ? cap.Scalar() : "";
        const std::string_view digits = std::string_view(text).substr(text.starts_with('+') ? 1 : 0);
        const std::size_t first = digits.starts_with('-') ? 1 : 0;  // from_chars takes a '-', not a '+'
        int32_t value = 0;
        const bool decimal = digits.size() > first && digits.find_first_not_of("0123456789", first) == std::string::npos &&
                             (digits[first] != '0' || digits.size() == first + 1);  // no leading 0: not octal
        const auto [stop, err] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (!decimal || err != std::errc() || stop != digits.data() + digits.size()) {
          return Status::Invalid(where("maxPriority") + ": must be a decimal integer (a 32-bit priority)");
        }
        p.max_priority = value;
      }
      if (entry["priorityClasses"]) {
        if (!p.max_priority) {
          return Status::Invalid(where("priorityClasses") + ": only with maxPriority (the classes a capped token may name)");
        }
        if (!entry["priorityClasses"].IsSequence()) {
          return Status::Invalid(where("priorityClasses") + ": must be a list of WorkloadPriorityClass names");
        }
        for (const auto& c : entry["priorityClasses"]) {
          std::string name = text(c, "priorityClasses");
          if (!null_field.empty()) return Status::Invalid(where("priorityClasses") + ": each must be a string");
          if (std::string e = CheckDns1123Subdomain(name); !e.empty()) {
            return Status::Invalid(where("priorityClasses") + ": '" + name + "' " + e);
          }
          p.priority_classes.insert(name);
        }
      }
      if (!table->emplace(hash, std::move(p)).second) {
        return Status::Invalid(where("token") + ": the same token appears twice");
      }
    } catch (const YAML::Exception& e) {
      return Status::Invalid(where("") + ": " + e.msg);
    }
    ++i;
  }
  if (plain_tokens && (st.st_mode & 044) != 0) {
    spdlog::warn("tokens file {}: holds tokens in the clear and is readable by group or others (mode {:04o}): "
                 "chmod 600 {}, or give each as tokenSha256",
                 path, st.st_mode & 07777, path);
  }
  return std::shared_ptr<const Table>(std::move(table));
}

Result<std::unique_ptr<TokenAuth>> TokenAuth::Load(const std::string& path) {
  auto auth = std::unique_ptr<TokenAuth>(new TokenAuth());
  auth->path_ = path;
  auth->table_ = std::make_shared<const Table>();
  if (!path.empty()) GANTRY_RETURN_IF_ERROR(auth->Reload());
  return auth;
}

Status TokenAuth::Reload() {
  if (path_.empty()) return Status::Ok();
  auto table = ReadFile(path_);
  if (!table.ok()) return table.status();
  std::lock_guard lock(mu_);
  table_ = std::move(table.value());
  return Status::Ok();
}

std::size_t TokenAuth::size() const {
  std::lock_guard lock(mu_);
  return table_->size();
}

Result<Principal> TokenAuth::Authenticate(const http::Request& request) const {
  if (path_.empty()) {
    if (!request.remote_loopback) {
      return Status(Code::kPermissionDenied,
                    "no tokens file is configured: only loopback clients are accepted");
    }
    Principal loopback;
    loopback.subject = "anonymous-loopback";
    loopback.admin = true;
    return loopback;
  }
  const std::string auth = request.Header("authorization");
  // The scheme's name is case-insensitive (RFC 9110 11.1): "bearer" is Bearer.
  constexpr std::string_view kBearer = "bearer ";
  const std::size_t token_at = auth.find_first_not_of(' ', kBearer.size());
  if (auth.size() <= kBearer.size() || ToLowerAscii(std::string_view(auth).substr(0, kBearer.size())) != kBearer ||
      token_at == std::string::npos) {
    return Status(Code::kUnauthenticated, "a bearer token is required (Authorization: Bearer ...)");
  }
  std::string hash = Sha256Hex(auth.substr(token_at));
  std::shared_ptr<const Table> table;
  {
    std::lock_guard lock(mu_);
    table = table_;
  }
  auto it = table->find(hash);
  if (it == table->end()) return Status(Code::kUnauthenticated, "the bearer token is not valid");
  return it->second;
}

}  // namespace gantry::api
