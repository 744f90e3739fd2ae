#include "gantry/inventory/token_source.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "gantry/common/ascii.h"

namespace gantry::inventory {
namespace {

namespace fs = std::filesystem;

// Service-account tokens are ~1 KiB; this bounds a misconfigured path.
constexpr std::uintmax_t kMaxTokenBytes = 64 << 10;

}  // namespace

std::string TrimToken(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t begin = s.find_first_not_of(kSpace);
  if (begin == std::string_view::npos) return "";
  return std::string(s.substr(begin, s.find_last_not_of(kSpace) - begin + 1));
}

std::string BearerTokenProblem(std::string_view token) {
  if (!HasSpaceOrControl(token)) return "";
  return std::any_of(token.begin(), token.end(), IsAsciiControl) ? "holds a line break or another control character"
                                                                  : "holds a space";
}

std::shared_ptr<TokenSource> TokenSource::Static(std::string token) {
  auto source = std::shared_ptr<TokenSource>(new TokenSource(TrimToken(token), ""));
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

void TokenSource::set_owner(std::string owner) {
  std::lock_guard lock(mu_);
  owner_ = std::move(owner);
}

std::string TokenSource::problem() const {
  std::lock_guard lock(problem_mu_);
  return problem_;
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

void TokenSource::Stop() {
  if (exec_) exec_->Stop();
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
  // A file rotated to what is no token keeps the token read before: it is
  // not read again until it changes, and the log says so once.
  auto refused = [&](std::string why) {
    if (loaded_) {
      mtime_ = mtime;
      size_ = size;
      std::string problem = why + "; the token read before is sent until the file changes";
      spdlog::warn("{}{}", owner_.empty() ? "" : owner_ + ": ", problem);
      std::lock_guard problem_lock(problem_mu_);
      problem_ = std::move(problem);
    }
    return Status::Invalid(std::move(why));
  };
  if (size > kMaxTokenBytes) {
    return refused(fmt::format("token file {}: larger than {} bytes", path_, kMaxTokenBytes));
  }
  std::ifstream in(path_, std::ios::binary);
  if (!in) return Status::Io(fmt::format("token file {}: cannot be opened", path_));
  std::ostringstream text;
  text << in.rdbuf();
  std::string token = TrimToken(text.str());
  if (token.empty()) return refused(fmt::format("token file {}: is empty", path_));
  if (std::string problem = BearerTokenProblem(token); !problem.empty()) {
    return refused(fmt::format("token file {}: {}; it must hold one token on one line", path_, problem));
  }
  {
    std::lock_guard problem_lock(problem_mu_);
    if (loaded_ && !problem_.empty()) {
      spdlog::info("{}token file {} holds a token again", owner_.empty() ? "" : owner_ + ": ", path_);
    }
    problem_.clear();
  }
  token_ = std::move(token);
  mtime_ = mtime;
  size_ = size;
  loaded_ = true;
  ++reads_;
  return Status::Ok();
}

}  // namespace gantry::inventory
