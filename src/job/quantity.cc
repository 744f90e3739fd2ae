// Kubernetes quantity grammar (k8s.io/apimachinery/pkg/api/resource):
//   <quantity> ::= <sign><digits>[.<digits>]<suffix>
//   <suffix>   ::= "" | n | u | m | k | M | G | T | P | E | Ki | Mi | Gi | Ti | Pi | Ei
//                | (e|E)<signed integer>
// The value is converted exactly to milli-units and rounded up, as Kubernetes
// rounds a request to its milli precision ("1u" cpu -> 1m).
#include "gantry/job/quantity.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

namespace gantry {
namespace {

using Int128 = __int128;

// Significant digits kept from the mantissa. With a binary suffix the
// mantissa is shifted left by up to 60 bits, so it keeps fewer digits to
// stay inside 128 bits (10^18 * 2^60 < 2^127). Digits beyond these only
// matter below the milli precision, where the result rounds up anyway.
constexpr std::size_t kMaxDecimalDigits = 36;
constexpr std::size_t kMaxBinaryDigits = 18;
// Exponents beyond these are certainly overflow or certainly below 1m.
constexpr int kMaxExponent = 1000;
constexpr Int128 kMaxMilli = kMaxQuantityMilli;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Sets dec_exp (power of ten) and bin_exp (power of 1024) for a suffix.
bool ParseSuffix(std::string_view suffix, int& dec_exp, int& bin_exp) {
  static constexpr std::pair<std::string_view, int> kDecimal[] = {
      {"", 0},  {"n", -9}, {"u", -6}, {"m", -3}, {"k", 3},
      {"M", 6}, {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18}};
  static constexpr std::pair<std::string_view, int> kBinary[] = {{"Ki", 1}, {"Mi", 2}, {"Gi", 3},
                                                                 {"Ti", 4}, {"Pi", 5}, {"Ei", 6}};
  for (const auto& [s, e] : kDecimal) {
    if (suffix == s) return dec_exp = e, true;
  }
  for (const auto& [s, e] : kBinary) {
    if (suffix == s) return bin_exp = e, true;
  }
  if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return false;
  std::string_view digits = suffix.substr(1);
  bool negative = digits[0] == '-';
  if (digits[0] == '-' || digits[0] == '+') digits.remove_prefix(1);
  if (digits.empty()) return false;
  int value = 0;
  for (char c : digits) {
    if (!IsDigit(c)) return false;
    value = std::min(kMaxExponent, value * 10 + (c - '0'));
  }
  dec_exp = negative ? -value : value;
  return true;
}

Status Malformed(std::string_view text) {
  return Status::Invalid(fmt::format(
      "invalid quantity \"{}\": want a number with an optional suffix like 500m, 2, 4Gi, 1e3",
      text));
}

Status TooLarge(std::string_view text) {
  return Status::Invalid(fmt::format("quantity \"{}\" is too large", text));
}

// What a value beyond int64 milli-units reads as.
enum class Overflow { kRefuse, kSaturate };

// *rounded (when given) is set when the value is not a whole number of
// milli-units and was rounded up to one.
Result<int64_t> ParseText(std::string_view text, Overflow overflow, bool* rounded = nullptr) {
  auto too_large = [&]() -> Result<int64_t> {
    if (overflow == Overflow::kSaturate) return kMaxQuantityMilli;
    return TooLarge(text);
  };
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  std::string_view int_digits = s.substr(0, i);
  std::string_view frac_digits;
  if (i < s.size() && s[i] == '.') {
    std::size_t j = i + 1;
    while (j < s.size() && IsDigit(s[j])) ++j;
    frac_digits = s.substr(i + 1, j - i - 1);
    i = j;
  }
  if (int_digits.empty() && frac_digits.empty()) return Malformed(text);
  int dec_exp = 0;
  int bin_exp = 0;
  if (!ParseSuffix(s.substr(i), dec_exp, bin_exp)) return Malformed(text);

  // Mantissa as an integer of significant digits times 10^exp10.
  std::string digits = std::string(int_digits) + std::string(frac_digits);
  int exp10 = 3 + dec_exp - static_cast<int>(frac_digits.size());
  std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return int64_t{0};
  digits.erase(0, first);
  while (digits.back() == '0') {
    digits.pop_back();
    ++exp10;
  }
  if (negative) {
    return Status::Invalid(fmt::format("quantity \"{}\" must not be negative", text));
  }
  bool inexact = false;
  std::size_t max_digits = bin_exp > 0 ? kMaxBinaryDigits : kMaxDecimalDigits;
  if (digits.size() > max_digits) {
    exp10 += static_cast<int>(digits.size() - max_digits);
    inexact = true;  // the dropped digits are not all zero: trailing zeros were stripped
    digits.resize(max_digits);
  }
  Int128 n = 0;
  for (char c : digits) n = n * 10 + (c - '0');
  n <<= 10 * bin_exp;

  if (exp10 >= 0) {
    if (n > kMaxMilli) return too_large();
    for (int k = 0; k < exp10; ++k) {
      n *= 10;
      if (n > kMaxMilli) return too_large();
    }
    if (inexact) ++n;
    if (rounded) *rounded = inexact;
  } else {
    constexpr int kMaxPow10 = 38;  // 10^38 < 2^127; n < 10^37 so a larger divisor gives 1
    if (-exp10 > kMaxPow10) {
      if (rounded) *rounded = true;
      return int64_t{1};
    }
    Int128 divisor = 1;
    for (int k = 0; k < -exp10; ++k) divisor *= 10;
    Int128 q = n / divisor;
    const bool up = n % divisor != 0 || inexact;
    if (up) ++q;
    if (rounded) *rounded = up;
    n = q;
  }
  if (n > kMaxMilli) return too_large();
  return static_cast<int64_t>(n);
}

Result<int64_t> ParseJson(const nlohmann::json& value, Overflow overflow) {
  if (value.is_string()) return ParseText(value.get_ref<const std::string&>(), overflow);
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() / 1000)) {
      if (overflow == Overflow::kSaturate) return kMaxQuantityMilli;
      return TooLarge(value.dump());
    }
    return static_cast<int64_t>(u) * 1000;
  }
  if (value.is_number_integer()) {
    if (value.get<int64_t>() < 0) {
      return Status::Invalid(fmt::format("quantity {} must not be negative", value.dump()));
    }
  }
  if (value.is_number_float()) {
    if (!std::isfinite(value.get<double>())) return Malformed(value.dump());
    // dump() prints the shortest text that reads back as the same double.
    return ParseText(value.dump(), overflow);
  }
  if (value.is_number()) return ParseText(value.dump(), overflow);
  return Status::Invalid(fmt::format("quantity must be a string or a number, got {}",
                                     value.is_null() ? "null" : value.type_name()));
}

}  // namespace

Result<int64_t> ParseQuantityMilli(std::string_view text) {
  return ParseText(text, Overflow::kRefuse);
}

Result<int64_t> ParseQuantityMilli(const nlohmann::json& value) {
  return ParseJson(value, Overflow::kRefuse);
}

std::optional<int64_t> ExactQuantityMilli(const nlohmann::json& value) {
  if (value.is_number_integer() || value.is_number_unsigned()) {
    Result<int64_t> milli = ParseJson(value, Overflow::kRefuse);
    return milli.ok() ? std::optional<int64_t>(*milli) : std::nullopt;
  }
  if (!value.is_string() && !value.is_number_float()) return std::nullopt;
  if (value.is_number_float() && !std::isfinite(value.get<double>())) return std::nullopt;
  bool rounded = false;
  Result<int64_t> milli = ParseText(value.is_string() ? value.get_ref<const std::string&>() : value.dump(),
                                    Overflow::kRefuse, &rounded);
  if (!milli.ok() || rounded) return std::nullopt;
  return *milli;
}

Result<int64_t> ParseQuantityMilliSaturating(const nlohmann::json& value) {
  return ParseJson(value, Overflow::kSaturate);
}

std::string FormatQuantityMilli(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

namespace {

// The members of obj[key] that are non-integer numbers, as strings.
void NumbersToStrings(nlohmann::json& obj, const char* key) {
  auto map = obj.find(key);
  if (map == obj.end() || !map->is_object()) return;
  for (auto& [name, value] : map->items()) {
    if (!value.is_number_float()) continue;
    Result<int64_t> milli = ParseQuantityMilli(value);
    if (!milli.ok()) continue;
    // The canonical form when it is exact; else the number's own text
    // (shortest that reads back as the same double), which the job holds too.
    const bool exact = static_cast<double>(*milli) / 1000 == value.get<double>();
    value = exact ? FormatQuantityMilli(*milli) : value.dump();
  }
}

}  // namespace

void QuantityNumbersToStrings(nlohmann::json& pod_template) {
  if (!pod_template.is_object()) return;
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return;
  NumbersToStrings(*spec, "overhead");
  for (const char* list : {"containers", "initContainers"}) {
    auto containers = spec->find(list);
    if (containers == spec->end() || !containers->is_array()) continue;
    for (nlohmann::json& container : *containers) {
      if (!container.is_object()) continue;
      auto resources = container.find("resources");
      if (resources == container.end() || !resources->is_object()) continue;
      NumbersToStrings(*resources, "requests");
      NumbersToStrings(*resources, "limits");
    }
  }
}

}  // namespace gantry
