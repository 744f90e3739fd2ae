#include "gantry/inventory/token_source.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace gantry::inventory {
namespace {

namespace fs = std::filesystem;

// Service-account tokens are ~1 KiB; this bounds a misconfigured path.
constexpr std::uintmax_t kMaxTokenBytes = 64 << 10;

std::string Trim(const std::string& s) {
  const char* kSpace = " \t\r\n";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

}  // namespace

std::shared_ptr<TokenSource> TokenSource::Static(std::string token) {
  auto source = std::shared_ptr<TokenSource>(new TokenSource(Trim(token), ""));
  source->loaded_ = true;
  return source;
}

std::shared_ptr<TokenSource> TokenSource::FromFile(std::string path) {
  return std::shared_ptr<TokenSource>(new TokenSource("", std::move(path)));
}

std::shared_ptr<TokenSource> TokenSource::FromExec(ExecConfig config, ExecOptions options) {
  auto source = std::shared_ptr<TokenSource>(new TokenSource("", ""));
  source->exec_ = std::make_unique<ExecPlugin>(std::move(config), options);
  return source;
}

TokenSource::TokenSource(std::string token, std::string path)
    : path_(std::move(path)), token_(std::move(token)) {}

int TokenSource::reads() const {
  std::lock_guard lock(mu_);
  return reads_;
}

Result<std::string> TokenSource::Token() {
  if (exec_) return exec_->Token();
  std::lock_guard lock(mu_);
  if (!path_.empty()) {
    Status s = Reload();
    if (!s.ok() && !loaded_) return s;
  }
  return token_;
}

void TokenSource::Invalidate(const std::string& token) {
  if (exec_) exec_->Invalidate(token);
}

bool TokenSource::SameSource(const TokenSource& other) const {
  if (this == &other) return true;
  if (exec_ || other.exec_) return exec_ && other.exec_ && exec_->config() == other.exec_->config();
  if (path_ != other.path_) return false;
  if (!path_.empty()) return true;  // the same file: each re-reads it on rotation
  std::scoped_lock lock(mu_, other.mu_);
  return token_ == other.token_;
}

Status TokenSource::Reload() {
  std::error_code ec;
  const fs::file_time_type mtime = fs::last_write_time(path_, ec);
  if (ec) return Status::Io(fmt::format("token file {}: {}", path_, ec.message()));
  const std::uintmax_t size = fs::file_size(path_, ec);
  if (ec) return Status::Io(fmt::format("token file {}: {}", path_, ec.message()));
  if (loaded_ && mtime == mtime_ && size == size_) return Status::Ok();
  if (size > kMaxTokenBytes) {
    return Status::Invalid(
        fmt::format("token file {}: larger than {} bytes", path_, kMaxTokenBytes));
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in) return Status::Io(fmt::format("token file {}: cannot be opened", path_));
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = Trim(text.str());
  if (token.empty()) return Status::Invalid(fmt::format("token file {}: is empty", path_));
  token_ = std::move(token);
  mtime_ = mtime;
  size_ = size;
  loaded_ = true;
  ++reads_;
  return Status::Ok();
}

}  // namespace gantry::inventory
