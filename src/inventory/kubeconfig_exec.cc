#include "kubeconfig_exec.h"

#include <fmt/format.h>

#include <filesystem>
#include <utility>
#include <vector>

namespace gantry::inventory::internal {
namespace {

namespace fs = std::filesystem;

// The field of `key` in `map`: on the key's line when present, else on the
// mapping's.
Field At(const YAML::Node& map, const Field& parent, std::string_view key) {
  const YAML::Node n = map[std::string(key)];
  return parent.Child(key, n ? LineOf(n) : parent.line);
}

// A scalar as written, the empty string included: an argument or an env
// value may be "".
Result<std::string> ReadScalar(const YAML::Node& node, const Field& field) {
  if (!node.IsScalar()) return FieldError(field, "must be a string");
  return node.Scalar();
}

// `args`: a list of strings, kept in order; repeats are allowed ("-v -v").
Status ReadArgs(const YAML::Node& node, const Field& field, std::vector<std::string>& out) {
  if (node.IsNull()) return Status::Ok();
  if (!node.IsSequence()) return FieldError(field, "must be a list of strings");
  size_t index = 0;
  for (const YAML::Node& item : node) {
    Result<std::string> arg = ReadScalar(item, field.Item(index++, LineOf(item)));
    if (!arg.ok()) return arg.status();
    out.push_back(std::move(arg).value());
  }
  return Status::Ok();
}

// `env`: a list of {name, value}; a missing value is "".
Status ReadEnv(const YAML::Node& node, const Field& field,
               std::vector<std::pair<std::string, std::string>>& out) {
  if (node.IsNull()) return Status::Ok();
  if (!node.IsSequence()) return FieldError(field, "must be a list of {name, value} entries");
  size_t index = 0;
  for (const YAML::Node& item : node) {
    const Field item_field = field.Item(index++, LineOf(item));
    if (!item.IsMap()) return FieldError(item_field, "must be a mapping with name and value");
    Result<std::string> name = ReadOptionalString(item, item_field, "name");
    if (!name.ok()) return name.status();
    const Field name_field = At(item, item_field, "name");
    if (name->empty()) return FieldError(name_field, "is missing");
    if (name->find('=') != std::string::npos) return FieldError(name_field, "must not contain '='");
    std::string value;
    if (const YAML::Node v = item["value"]; v && !v.IsNull()) {
      Result<std::string> read = ReadScalar(v, At(item, item_field, "value"));
      if (!read.ok()) return read.status();
      value = std::move(read).value();
    }
    out.emplace_back(std::move(name).value(), std::move(value));
  }
  return Status::Ok();
}

// `interactiveMode`: required by v1 (as client-go checks), IfAvailable by
// default for v1beta1. Always would need a terminal for the plugin to ask
// its user something; a daemon has none.
Result<std::string> ReadInteractiveMode(const YAML::Node& exec, const Field& f,
                                        const std::string& api_version) {
  Result<std::string> mode = ReadOptionalString(exec, f, "interactiveMode");
  if (!mode.ok()) return mode.status();
  const Field mode_field = At(exec, f, "interactiveMode");
  if (mode->empty()) {
    if (api_version == kExecApiV1) {
      return FieldError(mode_field,
                        fmt::format("is missing, and {} requires it; use Never", kExecApiV1));
    }
    return std::string("IfAvailable");
  }
  if (*mode == "Always") {
    return FieldError(mode_field,
                      "Always is refused: the plugin would need a terminal to ask its user, and "
                      "gantry serve has none; use Never or IfAvailable");
  }
  if (*mode != "Never" && *mode != "IfAvailable") {
    return FieldError(mode_field, "must be Never or IfAvailable");
  }
  return mode;
}

}  // namespace

Result<ExecConfig> ReadExecConfig(const YAML::Node& exec, const Field& f,
                                  const std::string& base_dir) {
  if (!exec.IsMap()) return FieldError(f, "must be a mapping");
  ExecConfig out;
  Result<std::string> version = ReadOptionalString(exec, f, "apiVersion");
  if (!version.ok()) return version.status();
  const Field version_field = At(exec, f, "apiVersion");
  if (version->empty()) {
    return FieldError(version_field, fmt::format("is missing; use {}", kExecApiV1));
  }
  if (*version != kExecApiV1 && *version != kExecApiV1beta1) {
    return FieldError(version_field, fmt::format("'{}' is not supported; use {} or {}", *version,
                                                 kExecApiV1, kExecApiV1beta1));
  }
  out.api_version = std::move(version).value();

  Result<std::string> command = ReadOptionalString(exec, f, "command");
  if (!command.ok()) return command.status();
  if (command->empty()) return FieldError(At(exec, f, "command"), "is missing");
  out.command = std::move(command).value();
  if (out.command.find('/') != std::string::npos && fs::path(out.command).is_relative()) {
    out.command = (fs::path(base_dir) / out.command).lexically_normal().string();
  }

  if (const YAML::Node n = exec["args"]; n) {
    GANTRY_RETURN_IF_ERROR(ReadArgs(n, At(exec, f, "args"), out.args));
  }
  if (const YAML::Node n = exec["env"]; n) {
    GANTRY_RETURN_IF_ERROR(ReadEnv(n, At(exec, f, "env"), out.env));
  }
  Result<std::string> hint = ReadOptionalString(exec, f, "installHint");
  if (!hint.ok()) return hint.status();
  out.install_hint = std::move(hint).value();
  if (const YAML::Node n = exec["provideClusterInfo"]; n && !n.IsNull()) {
    Result<bool> provide = ReadBool(n, At(exec, f, "provideClusterInfo"));
    if (!provide.ok()) return provide.status();
    if (*provide) out.cluster.emplace();
  }
  Result<std::string> mode = ReadInteractiveMode(exec, f, out.api_version);
  if (!mode.ok()) return mode.status();
  out.interactive_mode = std::move(mode).value();
  return out;
}

}  // namespace gantry::inventory::internal
