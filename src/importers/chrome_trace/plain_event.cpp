#include "importers/chrome_trace/plain_event.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kprof::importers {
namespace {

// Characters that could continue a number std::from_chars is reading: where one follows a JSON
// number, from_chars might read further than the JSON grammar did, so it is asked.
bool extends_number(char c) {
  return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-';
}

// Powers of ten that a double holds exactly (10^22 is the last).
constexpr double kExactPowers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

bool is_digit_at(const char* p, const char* end) {
  return p < end && static_cast<unsigned char>(*p - '0') < 10;
}

// Eight ASCII digits at p as a number (the digits checked by the caller), in a few multiplies
// (fast_float's parse_eight_digits_unrolled; little-endian, as x86-64 and aarch64 Linux are).
std::uint64_t eight_digits(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, 8);
  x -= 0x3030303030303030ULL;
  x = (x * 10) + (x >> 8);
  x = (((x & 0x000000FF000000FFULL) * (100 + (1000000ULL << 32))) +
       (((x >> 16) & 0x000000FF000000FFULL) * (1 + (10000ULL << 32)))) >>
      32;
  return static_cast<std::uint32_t>(x);
}

bool eight_are_digits(const char* p) {
  std::uint64_t x;
  std::memcpy(&x, p, 8);
  return ((x & 0xF0F0F0F0F0F0F0F0ULL) |
          (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) == 0x3333333333333333ULL;
}

// The digits at p (up to end) into mantissa; the end of them. At most 19 digits are summed
// exactly, `count` counts them all.
const char* digits(const char* p, const char* end, std::uint64_t& mantissa, int& count) {
  while (end - p >= 8 && eight_are_digits(p)) {
    mantissa = mantissa * 100000000 + eight_digits(p);
    p += 8;
    count += 8;
  }
  while (is_digit_at(p, end)) {
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(*p - '0');
    ++p;
    ++count;
  }
  return p;
}

// A strict JSON number at [p, end) read exactly (Clinger's fast path: a mantissa up to 2^53 and a
// power of ten a double holds make one correctly rounded operation); nullptr when the text is not
// one or the fast path does not apply. With `simdjson_bounds`, also nullptr for a number that
// simdjson_rounds_as_from_chars (below) declines: more than 19 digits before the exponent
// (leading zeros included) or more than three in it.
const char* fast_json_number(const char* p, const char* end, double& value,
                             bool simdjson_bounds = false) {
  const bool negative = p < end && *p == '-';
  p += negative;
  if (!is_digit_at(p, end)) return nullptr;
  std::uint64_t mantissa = 0;
  int count = 0;  // digits summed into mantissa, leading zeros included (harmless: they add 0)
  int exponent = 0;
  const bool leading_zero = *p == '0';
  if (leading_zero) {
    ++p;  // JSON: a leading zero stands alone
  } else {
    p = digits(p, end, mantissa, count);
  }
  if (p < end && *p == '.') {
    ++p;
    const char* fraction = p;
    p = digits(p, end, mantissa, count);
    if (p == fraction) return nullptr;
    exponent = -static_cast<int>(p - fraction);
  }
  // Up to 19 digits a uint64 holds; more (rare: timestamps have 16 or 17) go to from_chars.
  if (count > 19 || (simdjson_bounds && count + leading_zero > 19)) return nullptr;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool negative_exponent = false;
    if (p < end && (*p == '+' || *p == '-')) negative_exponent = *p++ == '-';
    if (!is_digit_at(p, end)) return nullptr;
    int explicit_exponent = 0;
    const char* exponent_digits = p;
    for (; is_digit_at(p, end); ++p) {
      if (explicit_exponent > 1000) return nullptr;
      explicit_exponent = explicit_exponent * 10 + (*p - '0');
    }
    if (simdjson_bounds && p - exponent_digits > 3) return nullptr;
    exponent += negative_exponent ? -explicit_exponent : explicit_exponent;
  }
  if (p < end && extends_number(*p)) return nullptr;
  if (mantissa > (std::uint64_t{1} << 53) || exponent < -22 || exponent > 22) return nullptr;
  double m = static_cast<double>(mantissa);
  value = exponent >= 0 ? m * kExactPowers[exponent] : m / kExactPowers[-exponent];
  if (negative) value = -value;
  return p;
}

// The first byte at or after p (before end) that ends a plain string's content: a quote (the
// string ends there), a backslash, or a byte below 0x20 or above 0x7f (not plain: declined); end
// when there is none.
const char* string_stop(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  for (; end - p >= 16; p += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed: bytes above 0x7f are negative, so one comparison finds them and the controls.
    const __m128i hits =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)),
                     _mm_cmplt_epi8(bytes, space));
    const int mask = _mm_movemask_epi8(hits);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  for (; p < end; ++p) {
    const auto c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20 || c > 0x7f) return p;
  }
  return p;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// key equals canonical (lower case, spaces) ignoring case and reading '_' as ' ': the reader's
// rule for args' keys, whose spelling differs between PyTorch versions.
bool same_key(std::string_view key, std::string_view canonical) {
  if (key.size() != canonical.size()) return false;
  for (std::size_t i = 0; i < key.size(); ++i) {
    char c = key[i];
    if (c == '_') c = ' ';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != canonical[i]) return false;
  }
  return true;
}

// The args the reader keeps, each with the rule of its value.
enum class Arg {
  kOther,
  kDevice,
  kStream,
  kCorrelation,
  kExternalId,
  kGraphId,
  kGraphNodeId,
  kRegisters,
  kSharedMemory,
  kGrid,
  kBlock,
  kKernel
};

// Which arg a key names (the reader's same_key rule), found by the key's length first: most
// keys of a kernel's args ("queued", "context", "blocks per SM", …) are none of them.
Arg arg_of(std::string_view key) {
  switch (key.size()) {
    case 4:
      return same_key(key, "grid") ? Arg::kGrid : Arg::kOther;
    case 5:
      return same_key(key, "block") ? Arg::kBlock : Arg::kOther;
    case 6:
      if (same_key(key, "device")) return Arg::kDevice;
      if (same_key(key, "stream")) return Arg::kStream;
      return same_key(key, "kernel") ? Arg::kKernel : Arg::kOther;
    case 8:
      return same_key(key, "graph id") ? Arg::kGraphId : Arg::kOther;
    case 11:
      if (same_key(key, "correlation")) return Arg::kCorrelation;
      return same_key(key, "external id") ? Arg::kExternalId : Arg::kOther;
    case 13:
      if (same_key(key, "cuda graph id")) return Arg::kGraphId;
      if (same_key(key, "graph node id")) return Arg::kGraphNodeId;
      return same_key(key, "shared memory") ? Arg::kSharedMemory : Arg::kOther;
    case 14:
      return same_key(key, "correlation id") ? Arg::kCorrelation : Arg::kOther;
    case 20:
      return same_key(key, "registers per thread") ? Arg::kRegisters : Arg::kOther;
    default:
      return Arg::kOther;
  }
}

// A JSON number's end, checked against JSON's grammar (std::from_chars reads more: "01", "1.");
// nullptr where the text is not one.
const char* json_number_end(const char* p, const char* end) {
  if (p < end && *p == '-') ++p;
  if (!is_digit_at(p, end)) return nullptr;
  if (*p == '0') {
    ++p;
  } else {
    while (is_digit_at(p, end)) ++p;
  }
  if (p < end && *p == '.') {
    ++p;
    if (!is_digit_at(p, end)) return nullptr;
    while (is_digit_at(p, end)) ++p;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    if (!is_digit_at(p, end)) return nullptr;
    while (is_digit_at(p, end)) ++p;
  }
  if (p < end && extends_number(*p)) return nullptr;
  return p;
}

// Whether simdjson reads the JSON number [p, end) as std::from_chars does: at most 19 digits
// before its exponent (leading zeros included) and at most three in the exponent.
bool simdjson_rounds_as_from_chars(const char* p, const char* end) {
  int mantissa = 0, exponent = 0;
  bool in_exponent = false;
  for (; p < end; ++p) {
    if (*p == 'e' || *p == 'E') in_exponent = true;
    if (*p >= '0' && *p <= '9') ++(in_exponent ? exponent : mantissa);
  }
  return mantissa <= 19 && exponent <= 3;
}

// What a value was, as far as the fields need: the reader's simdjson parse asks a value for a
// double, then for a string.
enum class Kind { kString, kNumber, kOther };

class PlainParser {
 public:
  PlainParser(const char* begin, const char* end) : p_(begin), end_(end) {}

  bool parse(TraceEvent& event, bool& complete) {
    skip_space();
    if (!take('{')) return false;
    skip_space();
    if (take('}')) return at_end();
    for (;;) {
      std::string_view key;
      if (!string(key)) return false;
      skip_space();
      if (!take(':')) return false;
      skip_space();
      if (!top_field(key, event, complete)) return false;
      skip_space();
      if (take('}')) return at_end();
      if (!take(',')) return false;
      skip_space();
    }
  }

 private:
  bool at_end() {
    skip_space();
    return p_ == end_;
  }
  bool take(char c) {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  char peek() const { return p_ < end_ ? *p_ : '\0'; }
  void skip_space() {
    while (p_ < end_ && is_space(*p_)) ++p_;
  }

  // A plain string at the cursor (its opening quote), its content in out.
  bool string(std::string_view& out) {
    if (!take('"')) return false;
    const char* stop = string_stop(p_, end_);
    if (stop == end_ || *stop != '"') return false;
    out = std::string_view(p_, static_cast<std::size_t>(stop - p_));
    p_ = stop + 1;
    return true;
  }

  // A JSON number at the cursor with a finite value, read as the simdjson parse reads it
  // (correctly rounded, as std::from_chars is); its text in token. Declined where simdjson reads
  // a number on paths of its own that do not agree with from_chars — and the fast path must give
  // what simdjson gives: more than 19 digits (Debian 12's simdjson 3.0.1 reads
  // 0.30000000000000000004 as 0.1156), or an exponent of more than three digits (it refuses
  // 1.5e0000000000000000000001). Profilers write neither.
  bool number(double& value, std::string_view& token) {
    const char* begin = p_;
    // Most numbers take Clinger's fast path, which checks JSON's grammar on its way (where it
    // gives a value, json_number_end gives the same end) and simdjson's bounds: one pass instead
    // of four.
    if (const char* fast = fast_json_number(begin, end_, value, true)) {
      token = std::string_view(begin, static_cast<std::size_t>(fast - begin));
      p_ = fast;
      return true;
    }
    const char* stop = json_number_end(begin, end_);
    if (stop == nullptr || !simdjson_rounds_as_from_chars(begin, stop)) return false;
    if (fast_json_number(begin, stop, value) != stop) {
      auto [read_to, ec] = std::from_chars(begin, stop, value);
      if (ec != std::errc() || read_to != stop || !std::isfinite(value)) return false;
    }
    token = std::string_view(begin, static_cast<std::size_t>(stop - begin));
    p_ = stop;
    return true;
  }

  // A string or a number (the values the fields read), else kOther.
  Kind scalar(std::string_view& text, double& number_value) {
    char c = peek();
    if (c == '"') return string(text) ? Kind::kString : Kind::kOther;
    if (c == '-' || (c >= '0' && c <= '9')) {
      return number(number_value, text) ? Kind::kNumber : Kind::kOther;
    }
    return Kind::kOther;
  }

  // The reader's integer(): a number within ±9.2e18 truncated, a string that is all an int64,
  // else absent.
  bool integer(std::optional<std::int64_t>& out) {
    std::string_view text;
    double number = 0;
    switch (scalar(text, number)) {
      case Kind::kNumber:
        if (number >= -9.2e18 && number <= 9.2e18) {
          out = static_cast<std::int64_t>(number);
        } else {
          out.reset();
        }
        return true;
      case Kind::kString: {
        std::int64_t parsed = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
        if (ec == std::errc() && end == text.data() + text.size()) {
          out = parsed;
        } else {
          out.reset();
        }
        return true;
      }
      case Kind::kOther:
        break;
    }
    return false;
  }

  // The reader's unsigned_integer(): the JSON text of a number, or a string's content, that is
  // all a uint64 (so ids above 2^53 stay exact), else absent.
  bool unsigned_integer(std::optional<std::uint64_t>& out) {
    std::string_view text;
    double number = 0;
    if (scalar(text, number) == Kind::kOther) return false;
    std::uint64_t parsed = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      out.reset();
    } else {
      out = parsed;
    }
    return true;
  }

  // Any JSON value, skipped; false where it is not plain JSON (or nests too deep).
  bool skip(int depth) {
    if (depth > 32) return false;
    char c = peek();
    if (c == '"') {
      std::string_view ignored;
      return string(ignored);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      const char* stop = json_number_end(p_, end_);
      if (stop == nullptr) return false;
      p_ = stop;
      return true;
    }
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++p_;
      skip_space();
      if (take(close)) return true;
      for (;;) {
        if (c == '{') {
          std::string_view key;
          if (!string(key)) return false;
          skip_space();
          if (!take(':')) return false;
          skip_space();
        }
        if (!skip(depth + 1)) return false;
        skip_space();
        if (take(close)) return true;
        if (!take(',')) return false;
        skip_space();
      }
    }
    for (std::string_view literal : {"true", "false", "null"}) {
      if (static_cast<std::size_t>(end_ - p_) >= literal.size() &&
          std::memcmp(p_, literal.data(), literal.size()) == 0) {
        p_ += literal.size();
        return true;
      }
    }
    return false;
  }

  bool top_field(std::string_view key, TraceEvent& event, bool& complete) {
    std::string_view text;
    double number = 0;
    // The keys compared by length first: every parsed event has a dozen.
    switch (key.size()) {
      case 2:
        if (key == "ph") {
          if (scalar(text, number) != Kind::kString) return false;
          complete = text == "X";
          return true;
        }
        if (key == "ts") {
          // A time that is not a finite number is the simdjson parse's to describe (time rule).
          if (scalar(text, number) != Kind::kNumber) return false;
          event.timestamp_us = number;
          return true;
        }
        break;
      case 3:
        if (key == "cat") {
          if (scalar(text, number) != Kind::kString) return false;
          event.category = text;
          return true;
        }
        if (key == "dur") {
          if (scalar(text, number) != Kind::kNumber) return false;
          event.duration_us = number;
          return true;
        }
        if (key == "pid" || key == "tid") {
          std::optional<std::int64_t> id;
          if (!integer(id)) return false;
          (key == "pid" ? event.pid : event.tid) = id.value_or(-1);
          return true;
        }
        break;
      case 4:
        if (key == "name") {
          if (scalar(text, number) != Kind::kString) return false;
          event.name = text;
          return true;
        }
        if (key == "args") return args(event);
        break;
      default:
        break;
    }
    return skip(0);
  }

  bool dim3(std::optional<std::int64_t> (&out)[3]) {
    if (!take('[')) return false;
    skip_space();
    if (take(']')) return true;
    for (int i = 0;; ++i) {
      if (i < 3) {
        if (!integer(out[i])) return false;
      } else if (!skip(2)) {  // the reader reads three and leaves the rest
        return false;
      }
      skip_space();
      if (take(']')) return true;
      if (!take(',')) return false;
      skip_space();
    }
  }

  bool args(TraceEvent& event) {
    if (!take('{')) return false;
    skip_space();
    if (take('}')) return true;
    for (;;) {
      std::string_view name;
      if (!string(name)) return false;
      skip_space();
      if (!take(':')) return false;
      skip_space();
      if (!arg(arg_of(name), event)) return false;
      skip_space();
      if (take('}')) return true;
      if (!take(',')) return false;
      skip_space();
    }
  }

  bool arg(Arg which, TraceEvent& event) {
    std::string_view text;
    double number = 0;
    switch (which) {
      case Arg::kDevice:
        return integer(event.device);
      case Arg::kStream:
        return integer(event.stream);
      case Arg::kCorrelation:
        return integer(event.correlation);
      case Arg::kExternalId:
        return integer(event.external_id);
      case Arg::kGraphId:
        return integer(event.graph_id);
      case Arg::kGraphNodeId:
        return unsigned_integer(event.graph_node_id);
      case Arg::kRegisters:
      case Arg::kSharedMemory:
        if (scalar(text, number) != Kind::kNumber) return false;
        (which == Arg::kSharedMemory ? event.shared_memory : event.registers_per_thread) = number;
        return true;
      case Arg::kGrid:
        return peek() == '[' && dim3(event.grid);
      case Arg::kBlock:
        return peek() == '[' && dim3(event.block);
      case Arg::kKernel:
        if (scalar(text, number) != Kind::kString) return false;
        event.launched_kernel = text;
        return true;
      case Arg::kOther:
        break;
    }
    return skip(1);
  }

  const char* p_;
  const char* const end_;
};

// Past the digits at p: eight at a time, then one by one.
const char* skip_digits(const char* p, const char* end) {
  while (end - p >= 8 && eight_are_digits(p)) p += 8;
  while (is_digit_at(p, end)) ++p;
  return p;
}

}  // namespace

const char* read_double(const char* p, const char* end, double& value) {
  if (const char* stop = fast_json_number(p, end, value)) return stop;
  auto [stop, ec] = std::from_chars(p, end, value);
  return ec == std::errc() ? stop : nullptr;
}

const char* quote_or_backslash(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  for (; end - p >= 16; p += 16) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int mask = _mm_movemask_epi8(
        _mm_or_si128(_mm_cmpeq_epi8(bytes, quote), _mm_cmpeq_epi8(bytes, backslash)));
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  while (p < end && *p != '"' && *p != '\\') ++p;
  return p;
}

const char* double_end(const char* p, const char* end) {
  const char* q = p;
  if (q < end && *q == '-') ++q;
  const char* digits_start = q;
  if (is_digit_at(q, end) && *q == '0') {
    ++q;
  } else {
    q = skip_digits(q, end);
  }
  if (q != digits_start) {
    std::ptrdiff_t count = q - digits_start;
    if (q < end && *q == '.') {
      const char* fraction = ++q;
      q = skip_digits(q, end);
      count += q - fraction;
      if (q == fraction) count = -1;  // "1.": from_chars's to judge
    }
    if (count > 0 && count <= 300 && !(q < end && extends_number(*q))) return q;
  }
  double ignored = 0;
  return read_double(p, end, ignored);
}

bool parse_plain_event(std::string_view text, TraceEvent& event, bool& complete) {
  return PlainParser(text.data(), text.data() + text.size()).parse(event, complete);
}

}  // namespace kprof::importers
