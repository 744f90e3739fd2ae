#include "gantry/common/clock.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>

namespace gantry {

int64_t SystemClock::NowMillis() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t SystemClock::MonotonicMillis() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string FormatRfc3339(int64_t unix_ms) {
  std::time_t secs = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

namespace {

// The value of text[at, at+width) as decimal digits; -1 if any is not a digit.
int Digits(std::string_view text, size_t at, size_t width) {
  if (at + width > text.size()) return -1;
  int value = 0;
  for (size_t i = at; i < at + width; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<int64_t> ParseRfc3339(std::string_view text) {
  // 2026-11-29T10:39:14 is 19 characters; the offset follows the seconds.
  const int year = Digits(text, 0, 4), month = Digits(text, 5, 2), day = Digits(text, 8, 2);
  const int hour = Digits(text, 11, 2), minute = Digits(text, 14, 2), second = Digits(text, 17, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return std::nullopt;
  if (text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  // A second of 60 is a leap second, which RFC 3339 allows.
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  size_t at = 19;
  int64_t millis = 0;
  if (at < text.size() && text[at] == '.') {
    const size_t first = ++at;
    // Digits past the millisecond count for nothing (scale reaches 0).
    for (int scale = 100; at < text.size() && text[at] >= '0' && text[at] <= '9';
         ++at, scale /= 10) {
      millis += (text[at] - '0') * scale;
    }
    if (at == first) return std::nullopt;
  }
  // The zone: "Z" or "+hh:mm" / "-hh:mm", and nothing after it.
  const std::string_view zone = text.substr(at);
  int64_t offset_minutes = 0;
  if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    const int oh = Digits(zone, 1, 2), om = Digits(zone, 4, 2);
    if (oh < 0 || om < 0 || oh > 23 || om > 59) return std::nullopt;
    offset_minutes = (zone[0] == '-' ? -1 : 1) * (oh * 60 + om);
  } else if (zone != "Z" && zone != "z") {
    return std::nullopt;
  }
  const int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  const int64_t seconds = days * 86'400 + hour * 3'600 + minute * 60 + second - offset_minutes * 60;
  return seconds * 1000 + millis;
}

namespace {
constexpr std::string_view kWeekdays[] = {"Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"};  // from 1970-01-01
constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
}  // namespace

std::string FormatHttpDate(int64_t unix_ms) {
  const int64_t secs = unix_ms >= 0 ? unix_ms / 1000 : (unix_ms - 999) / 1000;
  const int64_t days = secs >= 0 ? secs / 86'400 : (secs - 86'399) / 86'400;
  const int64_t in_day = secs - days * 86'400;
  const std::chrono::year_month_day date{std::chrono::sys_days(std::chrono::days(days))};
  return fmt::format("{}, {:02} {} {:04} {:02}:{:02}:{:02} GMT", kWeekdays[((days % 7) + 7) % 7],
                     static_cast<unsigned>(date.day()), kMonths[static_cast<unsigned>(date.month()) - 1],
                     static_cast<int>(date.year()), in_day / 3'600, in_day / 60 % 60, in_day % 60);
}

std::optional<int64_t> ParseHttpDate(std::string_view text) {
  // "Sun, 06 Nov 1994 08:49:37 GMT": 29 characters, fixed places.
  if (text.size() != 29 || text.substr(3, 2) != ", " || text[7] != ' ' || text[11] != ' ' || text[16] != ' ' ||
      text[19] != ':' || text[22] != ':' || text.substr(25) != " GMT") {
    return std::nullopt;
  }
  int month = 0;
  while (month < 12 && kMonths[month] != text.substr(8, 3)) ++month;
  const int day = Digits(text, 5, 2), year = Digits(text, 12, 4);
  const int hour = Digits(text, 17, 2), minute = Digits(text, 20, 2), second = Digits(text, 23, 2);
  if (month == 12 || day < 0 || year < 0 || hour < 0 || minute < 0 || second < 0) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(year), std::chrono::month(static_cast<unsigned>(month + 1)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  const int64_t days = std::chrono::sys_days(date).time_since_epoch().count();
  return (days * 86'400 + hour * 3'600 + minute * 60 + second) * 1000;
}

std::string FormatAge(int64_t age_ms) {
  if (age_ms < 0) age_ms = 0;
  int64_t s = age_ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  int64_t m = s / 60;
  if (m < 60) return s % 60 ? fmt::format("{}m{}s", m, s % 60) : fmt::format("{}m", m);
  int64_t h = m / 60;
  if (h < 24) return m % 60 ? fmt::format("{}h{}m", h, m % 60) : fmt::format("{}h", h);
  return fmt::format("{}d", h / 24);
}

}  // namespace gantry
