#include "importers/chrome_trace/chrome_trace_reader.h"

#include <fmt/format.h>
#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <sys/stat.h>

#include "common/error.h"

namespace kprof::importers {
namespace {

// Bytes from a file (plain or gzip: zlib reads both) or from memory, in large chunks.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual size_t read(char* into, size_t capacity) = 0;  // 0 at the end
};

class GzFileSource final : public ByteSource {
 public:
  explicit GzFileSource(const std::string& path) : path_(path) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || S_ISDIR(info.st_mode)) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       S_ISDIR(info.st_mode) ? "is a directory, expected a trace file"
                                             : fmt::format("cannot open: {}", std::strerror(errno)));
    }
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("cannot open: {}", std::strerror(errno)));
    }
    gzbuffer(file_, 1 << 20);
  }
  ~GzFileSource() override { gzclose(file_); }

  size_t read(char* into, size_t capacity) override {
    int n = gzread(file_, into, static_cast<unsigned>(capacity));
    if (n < 0) {
      int code = 0;
      const char* message = gzerror(file_, &code);
      throw_invalid(path_, InputPosition::byte(static_cast<std::uint64_t>(gztell(file_))),
                    fmt::format("broken gzip stream: {}", message ? message : "read error"));
    }
    if (n == 0 && !gzeof(file_)) {
      throw_invalid(path_, InputPosition::byte(static_cast<std::uint64_t>(gztell(file_))),
                    "broken gzip stream");
    }
    return static_cast<size_t>(n);
  }

  // zlib reports a gzip member cut short as a plain end of file; gzdirect tells plain from gzip.
  bool truncated_gzip() {
    int code = Z_OK;
    gzerror(file_, &code);
    return code == Z_BUF_ERROR;
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(char* into, size_t capacity) override {
    size_t n = std::min(capacity, bytes_.size() - offset_);
    std::memcpy(into, bytes_.data() + offset_, n);
    offset_ += n;
    return n;
  }

 private:
  std::string_view bytes_;
  size_t offset_ = 0;
};

constexpr int kEnd = -1;

// A streaming JSON scanner just deep enough to find the trace events; each event object is
// copied out whole and parsed by simdjson.
class Scanner {
 public:
  Scanner(const std::string& path, ByteSource& source, TraceEventSink& sink)
      : path_(path), source_(source), sink_(sink), buffer_(1 << 20, '\0') {}

  TraceReadStats run() {
    skip_space();
    int c = peek();
    if (c == '[') {
      next();
      read_events();
    } else if (c == '{') {
      next();
      read_top_object();
    } else {
      fail(c == kEnd ? "the trace is empty" : "not a Chrome trace: expected a JSON object or array");
    }
    skip_space();
    if (peek() != kEnd) fail("unexpected text after the end of the trace");
    if (!saw_events_) fail("no \"traceEvents\" array in this JSON: not a profiler trace");
    stats_.bytes = offset();
    return stats_;
  }

 private:
  std::uint64_t offset() const { return consumed_ + position_; }

  [[noreturn]] void fail(const std::string& message) const {
    throw_invalid(path_, InputPosition::byte(offset()), message);
  }

  bool refill() {
    consumed_ += length_;
    position_ = 0;
    length_ = source_.read(buffer_.data(), buffer_.size());
    return length_ != 0;
  }
  int peek() {
    if (position_ == length_ && !refill()) return kEnd;
    return static_cast<unsigned char>(buffer_[position_]);
  }
  int next() {
    int c = peek();
    if (c != kEnd) ++position_;
    return c;
  }
  void skip_space() {
    for (;;) {
      int c = peek();
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++position_;
    }
  }
  void expect(char wanted, const char* what) {
    skip_space();
    int c = next();
    if (c != wanted) {
      fail(c == kEnd ? fmt::format("truncated: the trace ends where {} should be", what)
                     : fmt::format("expected {}", what));
    }
  }

  // A string whose opening quote was consumed, appended raw (escapes kept) to out if given.
  void read_string(std::string* out) {
    for (;;) {
      if (position_ == length_ && !refill()) fail("truncated: the trace ends inside a string");
      const char* start = buffer_.data() + position_;
      const char* end = buffer_.data() + length_;
      const char* stop = start;
      while (stop != end && *stop != '"' && *stop != '\\') ++stop;
      if (out) out->append(start, stop);
      position_ += static_cast<size_t>(stop - start);
      if (stop == end) continue;
      char c = static_cast<char>(next());
      if (out) out->push_back(c);
      if (c == '"') return;
      int escaped = next();  // the character after a backslash
      if (escaped == kEnd) fail("truncated: the trace ends inside a string");
      if (out) out->push_back(static_cast<char>(escaped));
    }
  }

  // Any JSON value, copied raw into out if given (used for event objects and skipped values).
  void read_value(std::string* out) {
    skip_space();
    int depth = 0;
    for (;;) {
      int c = next();
      if (c == kEnd) fail("truncated: the trace ends inside a value");
      if (out) out->push_back(static_cast<char>(c));
      if (c == '"') {
        read_string(out);
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth < 0) fail("unbalanced brackets");
      } else if (depth == 0 && (c == ',' )) {
        fail("expected a value");
      }
      if (depth == 0) {
        if (c == '"' || c == '}' || c == ']') return;
        // A scalar: read until a delimiter.
        for (;;) {
          int d = peek();
          if (d == kEnd || d == ',' || d == '}' || d == ']' || d == ' ' || d == '\n' ||
              d == '\r' || d == '\t') {
            return;
          }
          next();
          if (out) out->push_back(static_cast<char>(d));
        }
      }
    }
  }

  void read_top_object() {
    skip_space();
    if (peek() == '}') {
      next();
      return;
    }
    std::string key;
    for (;;) {
      expect('"', "a key");
      key.clear();
      read_string(&key);
      key.pop_back();  // closing quote
      expect(':', "':' after a key");
      if (key == "traceEvents") {
        expect('[', "the traceEvents array");
        read_events();
      } else {
        read_value(nullptr);
      }
      skip_space();
      int c = next();
      if (c == '}') return;
      if (c != ',') fail(c == kEnd ? "truncated: the trace ends inside its top-level object"
                                   : "expected ',' or '}' in the top-level object");
    }
  }

  void read_events() {
    saw_events_ = true;
    skip_space();
    if (peek() == ']') {
      next();
      return;
    }
    for (;;) {
      skip_space();
      std::uint64_t start = offset();
      if (peek() != '{') fail(peek() == kEnd ? "truncated: the trace ends inside traceEvents"
                                             : "expected an event object in traceEvents");
      event_text_.clear();
      read_value(&event_text_);
      parse_event(start);
      skip_space();
      int c = next();
      if (c == ']') return;
      if (c != ',') fail(c == kEnd ? "truncated: the trace ends inside traceEvents"
                                   : "expected ',' or ']' between events");
    }
  }

  static std::optional<std::int64_t> integer(simdjson::ondemand::value value) {
    double number;
    if (value.get_double().get(number) == simdjson::SUCCESS) {
      // Out-of-range ids are treated as absent, not wrapped (found by fuzzing).
      if (!(number >= -9.2e18 && number <= 9.2e18)) return std::nullopt;
      return static_cast<std::int64_t>(number);
    }
    std::string_view text;
    if (value.get_string().get(text) == simdjson::SUCCESS) {
      std::int64_t parsed = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), parsed);
      if (ec == std::errc() && end == text.data() + text.size()) return parsed;
    }
    return std::nullopt;
  }

  static std::optional<double> real(simdjson::ondemand::value value) {
    double number;
    if (value.get_double().get(number) == simdjson::SUCCESS) return number;
    return std::nullopt;
  }

  void read_dim3(simdjson::ondemand::value value, std::optional<std::int64_t> (&out)[3]) {
    simdjson::ondemand::array array;
    if (value.get_array().get(array) != simdjson::SUCCESS) return;
    int i = 0;
    for (auto element : array) {
      if (i == 3) break;
      simdjson::ondemand::value v;
      if (element.get(v) != simdjson::SUCCESS) return;
      out[i++] = integer(v);
    }
  }

  void parse_event(std::uint64_t start) {
    size_t size = event_text_.size();
    event_text_.append(simdjson::SIMDJSON_PADDING, ' ');
    TraceEvent event;
    bool complete = false;
    try {
      simdjson::ondemand::document document =
          parser_.iterate(event_text_.data(), size, event_text_.size());
      simdjson::ondemand::object object = document.get_object();
      for (auto field : object) {
        std::string_view key = field.unescaped_key();
        simdjson::ondemand::value value = field.value();
        if (key == "ph") {
          complete = std::string_view(value.get_string()) == "X";
        } else if (key == "cat") {
          event.category = value.get_string();
        } else if (key == "name") {
          event.name = value.get_string();
        } else if (key == "ts") {
          event.timestamp_us = value.get_double();
        } else if (key == "dur") {
          event.duration_us = value.get_double();
        } else if (key == "pid") {
          event.pid = integer(value).value_or(-1);
        } else if (key == "tid") {
          event.tid = integer(value).value_or(-1);
        } else if (key == "args") {
          simdjson::ondemand::object args;
          if (value.get_object().get(args) != simdjson::SUCCESS) continue;
          for (auto arg : args) {
            std::string_view name = arg.unescaped_key();
            simdjson::ondemand::value v = arg.value();
            if (name == "device") event.device = integer(v);
            else if (name == "stream") event.stream = integer(v);
            else if (name == "correlation") event.correlation = integer(v);
            else if (name == "External id") event.external_id = integer(v);
            else if (name == "graph id" || name == "graph_id" || name == "Graph id") event.graph_id = integer(v);
            else if (name == "registers per thread") event.registers_per_thread = real(v);
            else if (name == "shared memory") event.shared_memory = real(v);
            else if (name == "grid") read_dim3(v, event.grid);
            else if (name == "block") read_dim3(v, event.block);
          }
        }
      }
    } catch (const simdjson::simdjson_error& error) {
      throw_invalid(path_, InputPosition::byte(start),
                    fmt::format("malformed trace event: {}", error.what()));
    }
    if (complete) {
      ++stats_.events;
      sink_.on_event(event);
    } else {
      ++stats_.other_events;
    }
  }

  const std::string& path_;
  ByteSource& source_;
  TraceEventSink& sink_;
  std::string buffer_;
  size_t position_ = 0, length_ = 0;
  std::uint64_t consumed_ = 0;
  std::string event_text_;
  simdjson::ondemand::parser parser_;
  TraceReadStats stats_;
  bool saw_events_ = false;
};

}  // namespace

bool looks_like_chrome_trace(std::string_view head) {
  for (char c : head) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{' || c == '[';
  }
  return false;
}

TraceReadStats read_chrome_trace(const std::string& path, TraceEventSink& sink) {
  GzFileSource source(path);
  Scanner scanner(path, source, sink);
  TraceReadStats stats = scanner.run();
  if (source.truncated_gzip()) {
    throw_invalid(path, InputPosition::byte(stats.bytes),
                  "truncated gzip stream: the compressed file ends early");
  }
  return stats;
}

TraceReadStats read_chrome_trace_bytes(const std::string& path, std::string_view bytes,
                                       TraceEventSink& sink) {
  MemorySource source(bytes);
  Scanner scanner(path, source, sink);
  return scanner.run();
}

}  // namespace kprof::importers
