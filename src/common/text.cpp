#include "common/text.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <ctime>

namespace kprof {

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::vector<std::string> split_whitespace(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !is_space(text[i])) ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

std::optional<double> parse_double(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::uint64_t> parse_uint(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> parse_ncu_number(std::string_view text) {
  std::string digits;
  digits.reserve(text.size());
  size_t i = 0;
  if (i < text.size() && text[i] == '-') digits.push_back(text[i++]);
  // Integer part: either plain digits or groups of three after a leading group of 1-3.
  size_t group_len = 0;
  bool grouped = false;
  size_t int_digits = 0;
  for (; i < text.size() && text[i] != '.' && text[i] != 'e' && text[i] != 'E'; ++i) {
    char c = text[i];
    if (c == ',') {
      if (group_len == 0 || (grouped && group_len != 3) || (!grouped && group_len > 3)) {
        return std::nullopt;
      }
      grouped = true;
      group_len = 0;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    digits.push_back(c);
    ++group_len;
    ++int_digits;
  }
  if (int_digits == 0 || (grouped && group_len != 3)) return std::nullopt;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == ',') return std::nullopt;
    digits.push_back(c);
  }
  return parse_double(digits);
}

std::string format_number(double value) {
  if (!std::isfinite(value)) return fmt::format("{}", value);
  double magnitude = std::fabs(value);
  if (magnitude != 0 && magnitude < 0.001) return fmt::format("{:.3g}", value);
  if (magnitude >= 1000) {
    std::string whole = fmt::format("{:.0f}", std::fabs(value));
    std::string grouped;
    for (size_t i = 0; i < whole.size(); ++i) {
      if (i != 0 && (whole.size() - i) % 3 == 0) grouped.push_back(',');
      grouped.push_back(whole[i]);
    }
    return value < 0 ? "-" + grouped : grouped;
  }
  if (value == std::floor(value)) return fmt::format("{:.0f}", value);
  if (magnitude >= 100) return fmt::format("{:.1f}", value);
  if (magnitude >= 1) return fmt::format("{:.2f}", value);
  return fmt::format("{:.3f}", value);
}

std::string utc_time(const char* format) {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[64];
  size_t length = std::strftime(text, sizeof text, format, &tm);
  return std::string(text, length);
}

std::string_view path_basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string quoted_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& arg : argv) {
    // Only words of characters no shell (sh, bash, zsh) reads specially stay bare; any other is
    // single-quoted, a quote inside written '\''.
    bool plain = !arg.empty() &&
                 arg.find_first_not_of(
                     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@%") ==
                     std::string::npos;
    std::string shown = plain ? arg : "'" + [&] {
      std::string escaped;
      for (char c : arg) escaped += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return escaped;
    }() + "'";
    out += (out.empty() ? "" : " ") + shown;
  }
  return out;
}

}  // namespace kprof
