// Small text helpers shared by importers and renderers.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kprof {

std::string_view trim(std::string_view text);

// Splits on runs of ASCII white space.
std::vector<std::string> split_whitespace(std::string_view text);

// Parses a whole string as a finite double / unsigned integer (no sign, no spaces, no suffix).
std::optional<double> parse_double(std::string_view text);
std::optional<std::uint64_t> parse_uint(std::string_view text);

// Parses a number as ncu prints it in CSV: optional '-', digits grouped with ',' thousands
// separators ("1,980,000"), optional fraction ("24,133.10"). Returns nullopt for anything else,
// including strings such as "n/a" or "PolicySpread".
std::optional<double> parse_ncu_number(std::string_view text);

// A parsed number as a whole number of type T: nullopt when it is not finite, has a fraction or
// lies outside T's range, where a cast would be undefined behaviour (the fuzzers found such casts
// on numbers read from CSV exports twice: convert through this, never with a bare static_cast).
template <typename T>
std::optional<T> whole_number(double value) {
  static_assert(std::numeric_limits<T>::is_integer);
  // 2^digits is exactly representable; T's own maximum may not be (2^64 - 1 rounds up).
  const double above_max = std::ldexp(1.0, std::numeric_limits<T>::digits);
  const double lowest = std::numeric_limits<T>::is_signed ? -above_max : 0.0;
  if (!std::isfinite(value) || value != std::floor(value) || value < lowest || value >= above_max) {
    return std::nullopt;
  }
  return static_cast<T>(value);
}

// A short human number: 3 significant digits past the point for small values, grouping for
// large ones ("1,980,000", "28.74", "0.146").
std::string format_number(double value);

// The current time in UTC, formatted with strftime (default ISO 8601, "2026-11-29T21:54:05Z").
std::string utc_time(const char* format = "%Y-%m-%dT%H:%M:%SZ");

// The last component of a path ("python3" for "/usr/bin/python3").
std::string_view path_basename(std::string_view path);

// argv shown quoted where a shell would need it: every command kprof prints for a person to run
// or read (the fix list's `kprof source …`, ncu's export, kubectl's calls) goes through this one
// function (nothing is ever run this way): `ncu --kernel-name 'regex:a|b'`.
std::string quoted_command(const std::vector<std::string>& argv);

}  // namespace kprof
