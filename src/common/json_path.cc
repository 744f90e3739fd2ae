#include "gantry/common/json_path.h"

namespace gantry {

const nlohmann::json* JsonAt(const nlohmann::json& o, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &o;
  for (const char* key : path) {
    if (!at->is_object()) return nullptr;
    auto it = at->find(key);
    if (it == at->end()) return nullptr;
    at = &*it;
  }
  return at;
}

std::string JsonStringAt(const nlohmann::json& o, std::initializer_list<const char*> path) {
  const nlohmann::json* v = JsonAt(o, path);
  return v && v->is_string() ? v->get<std::string>() : "";
}

int64_t JsonIntAt(const nlohmann::json& o, std::initializer_list<const char*> path, int64_t otherwise) {
  const nlohmann::json* v = JsonAt(o, path);
  return v && v->is_number_integer() ? v->get<int64_t>() : otherwise;
}

}  // namespace gantry
