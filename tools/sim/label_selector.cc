#include "label_selector.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "gantry/common/names.h"

namespace gantry::sim {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits on commas outside parentheses.
Result<std::vector<std::string_view>> SplitTerms(std::string_view text) {
  std::vector<std::string_view> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ',';
    if (c == '(') ++depth;
    if (c == ')' && --depth < 0) return Status::Invalid("unbalanced parenthesis");
    if (c == ',' && depth == 0) {
      out.push_back(Trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (depth != 0) return Status::Invalid("unbalanced parenthesis");
  return out;
}

Status CheckKey(std::string_view key) {
  std::string err = CheckLabelKey(key);
  if (!err.empty()) return Status::Invalid(fmt::format("invalid label key \"{}\": {}", key, err));
  return Status::Ok();
}

Result<LabelSelector::Requirement> ParseSet(std::string_view term, std::size_t op_pos, std::size_t op_len,
                                            LabelSelector::Op op) {
  LabelSelector::Requirement r;
  r.key = std::string(Trim(term.substr(0, op_pos)));
  r.op = op;
  std::string_view rest = Trim(term.substr(op_pos + op_len));
  if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')') {
    return Status::Invalid(fmt::format("\"{}\": expected a parenthesized value list", term));
  }
  rest = rest.substr(1, rest.size() - 2);
  std::size_t start = 0;
  for (std::size_t i = 0; i <= rest.size(); ++i) {
    if (i == rest.size() || rest[i] == ',') {
      std::string v(Trim(rest.substr(start, i - start)));
      std::string err = CheckLabelValue(v);
      if (!err.empty()) return Status::Invalid(fmt::format("invalid label value \"{}\": {}", v, err));
      r.values.push_back(std::move(v));
      start = i + 1;
    }
  }
  return r;
}

Result<LabelSelector::Requirement> ParseTerm(std::string_view term) {
  using Op = LabelSelector::Op;
  LabelSelector::Requirement r;
  for (std::string_view word : {std::string_view(" notin "), std::string_view(" in ")}) {
    std::size_t pos = term.find(word);
    if (pos != std::string_view::npos) {
      auto set = ParseSet(term, pos, word.size(), word == " in " ? Op::kIn : Op::kNotIn);
      if (!set.ok()) return set.status();
      GANTRY_RETURN_IF_ERROR(CheckKey(set->key));
      return set;
    }
  }
  std::size_t pos;
  std::size_t len = 0;
  if ((pos = term.find("!=")) != std::string_view::npos) {
    r.op = Op::kNotEquals, len = 2;
  } else if ((pos = term.find("==")) != std::string_view::npos) {
    r.op = Op::kEquals, len = 2;
  } else if ((pos = term.find('=')) != std::string_view::npos) {
    r.op = Op::kEquals, len = 1;
  }
  if (len == 0) {
    bool negated = !term.empty() && term.front() == '!';
    r.key = std::string(Trim(negated ? term.substr(1) : term));
    r.op = negated ? Op::kDoesNotExist : Op::kExists;
  } else {
    r.key = std::string(Trim(term.substr(0, pos)));
    std::string v(Trim(term.substr(pos + len)));
    std::string err = CheckLabelValue(v);
    if (!err.empty()) return Status::Invalid(fmt::format("invalid label value \"{}\": {}", v, err));
    r.values.push_back(std::move(v));
  }
  GANTRY_RETURN_IF_ERROR(CheckKey(r.key));
  return r;
}

}  // namespace

Result<LabelSelector> LabelSelector::Parse(std::string_view text) {
  LabelSelector sel;
  if (Trim(text).empty()) return sel;
  auto terms = SplitTerms(text);
  if (!terms.ok()) return terms.status();
  for (std::string_view term : *terms) {
    if (term.empty()) return Status::Invalid("empty requirement in label selector");
    auto r = ParseTerm(term);
    if (!r.ok()) return r.status();
    sel.reqs_.push_back(std::move(*r));
  }
  return sel;
}

bool LabelSelector::MatchesValues(const std::function<const std::string*(const std::string&)>& value_of) const {
  for (const Requirement& r : reqs_) {
    const std::string* value = value_of(r.key);
    bool has = value != nullptr;
    bool in = has && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
    switch (r.op) {
      case Op::kEquals:
      case Op::kIn:
        if (!in) return false;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        if (in) return false;
        break;
      case Op::kExists:
        if (!has) return false;
        break;
      case Op::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  return MatchesValues([&](const std::string& key) -> const std::string* {
    auto it = labels.find(key);
    return it == labels.end() ? nullptr : &it->second;
  });
}

bool LabelSelector::MatchesLabels(const nlohmann::json& labels) const {
  if (reqs_.empty()) return true;
  // Looked up in place: building a map of every label per call showed in
  // profiles (each watch event and listed object is matched).
  return MatchesValues([&](const std::string& key) -> const std::string* {
    if (!labels.is_object()) return nullptr;
    auto it = labels.find(key);
    return it == labels.end() ? nullptr : it->get_ptr<const std::string*>();  // non-strings: absent
  });
}

bool LabelSelector::MatchesObject(const nlohmann::json& object) const {
  if (reqs_.empty()) return true;
  static const nlohmann::json kNoLabels;
  auto md = object.find("metadata");
  if (md == object.end() || !md->is_object()) return MatchesLabels(kNoLabels);
  auto labels = md->find("labels");
  return MatchesLabels(labels == md->end() ? kNoLabels : *labels);
}

}  // namespace gantry::sim
