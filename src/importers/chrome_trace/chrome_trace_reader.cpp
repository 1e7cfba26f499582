#include "importers/chrome_trace/chrome_trace_reader.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/text.h"
#include "common/utf8.h"
#include "importers/chrome_trace/graph_node_table_reader.h"
#include "importers/chrome_trace/plain_event.h"
#include "importers/chrome_trace/structural_scan.h"
#include "importers/nsys_sqlite/nsys_sqlite_reader.h"

namespace kprof::importers {
namespace {

// Bytes from a file (plain or gzip: zlib reads both) or from memory, in large chunks: copied
// into the reader's buffer (read), or, from a source whose bytes lie in memory already (a mapped
// file), handed out in place (view_next) — on a 2-core VM the kernel's copy of read() alone ran
// at 0.2-0.8 GB/s, under the speed of the rest of the reader.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual size_t read(char* into, size_t capacity) = 0;  // 0 at the end
  // Whether view_next is to be used instead of read.
  virtual bool in_place() const { return false; }
  // The next at most `capacity` bytes, where they lie (empty at the end): valid while the source
  // lives. Byte k of the input is at base() + k.
  virtual std::string_view view_next(size_t /*capacity*/) { return {}; }
  virtual const char* base() const { return nullptr; }
  // The bytes before `offset` will not be looked at again: a mapped file gives their pages back,
  // so that memory stays a few buffers whatever the file's size.
  virtual void release_before(std::uint64_t /*offset*/) {}
};

// A plain (not compressed) regular file, mapped: its bytes are read where the page cache holds
// them, without read()'s copy.
class MappedFileSource final : public ByteSource {
 public:
  // nullptr where the file is not one to map — stdin, not a regular file, empty, gzip or zstd,
  // not openable — and GzFileSource reads it (and says what is wrong with it) as before.
  static std::unique_ptr<MappedFileSource> open(const std::string& path) {
    if (is_stdin_path(path)) return nullptr;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat info {};
    std::array<unsigned char, 4> head{};
    const bool plain =
        ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0 &&
        ::pread(fd, head.data(), head.size(), 0) >= 2 && !(head[0] == 0x1f && head[1] == 0x8b) &&
        !has_zstd_magic(std::string_view(reinterpret_cast<const char*>(head.data()), head.size()));
    std::unique_ptr<MappedFileSource> source;
    try {
      if (plain) {
        source = std::make_unique<MappedFileSource>(
            map_input_descriptor(path, fd, static_cast<size_t>(info.st_size)));
      }
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return source;
  }
  explicit MappedFileSource(InputBytes bytes) : bytes_(std::move(bytes)) {}

  size_t read(char* into, size_t capacity) override {
    std::string_view next = view_next(capacity);
    std::memcpy(into, next.data(), next.size());
    return next.size();
  }
  bool in_place() const override { return true; }
  std::string_view view_next(size_t capacity) override {
    std::string_view next = bytes_.view().substr(offset_, capacity);
    offset_ += next.size();
    return next;
  }
  const char* base() const override { return bytes_.view().data(); }
  void release_before(std::uint64_t offset) override {
    // In steps of 1 MiB (page-aligned, so that nothing is left between two releases): a few
    // hundred madvise calls a gigabyte.
    constexpr std::uint64_t kStep = 1u << 20;
    offset = std::min<std::uint64_t>(offset, bytes_.view().size()) / kStep * kStep;
    if (offset <= released_) return;
    bytes_.release(bytes_.view().substr(released_, offset - released_));
    released_ = offset;
  }

 private:
  InputBytes bytes_;
  std::size_t offset_ = 0;
  std::uint64_t released_ = 0;
};

class GzFileSource final : public ByteSource {
 public:
  explicit GzFileSource(const std::string& path) : path_(path) {
    if (is_stdin_path(path)) {
      // zlib reads gzip or plain bytes alike, so stdin is told apart by content, as files are.
      claim_stdin(path);
      int fd = ::dup(STDIN_FILENO);
      file_ = fd < 0 ? nullptr : gzdopen(fd, "rb");
      if (!file_) {
        if (fd >= 0) ::close(fd);
        throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                         fmt::format("cannot read stdin: {}", std::strerror(errno)));
      }
      gzbuffer(file_, 1 << 20);
      from_stdin_ = true;
      return;
    }
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0 || S_ISDIR(info.st_mode)) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       S_ISDIR(info.st_mode)
                           ? "is a directory, expected a trace file"
                           : fmt::format("cannot open: {}", std::strerror(errno)));
    }
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("cannot open: {}", std::strerror(errno)));
    }
    gzbuffer(file_, 1 << 20);
    file_size_ = static_cast<std::uint64_t>(info.st_size);
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
    if (from_stdin_ && first_read_)
      check_stdin_head(std::string_view(into, static_cast<size_t>(n)));
    first_read_ = false;
    // gzip is held to zstd's bound: a few hundred KB that expand to gigabytes are refused once
    // they pass it (stdin's compressed size is what was read of it so far).
    decompressed_ += static_cast<std::uint64_t>(n);
    if (!gzdirect(file_)) {
      const auto read_so_far = static_cast<std::uint64_t>(std::max<z_off_t>(0, gzoffset(file_)));
      check_decompressed_size(path_, "gzip", std::max(file_size_, read_so_far), decompressed_);
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
  // What files are told by before opening them: an Nsight Systems export is read by SQLite,
  // which needs a file; an empty stdin is most likely nothing piped in.
  void check_stdin_head(std::string_view head) const {
    if (head.empty()) {
      throw_invalid(path_, InputPosition::none(),
                    "stdin is empty: pipe the trace in (`kprof ... - < FILE`) or give its path");
    }
    if (looks_like_sqlite(head)) {
      throw InputError(ExitCode::kInputUnreadable, path_, InputPosition::none(),
                       "an Nsight Systems export (SQLite) cannot be read from stdin: SQLite "
                       "reads files; give its path");
    }
  }

  std::string path_;
  gzFile file_ = nullptr;
  bool from_stdin_ = false;
  bool first_read_ = true;
  std::uint64_t file_size_ = 0;  // of a file (compressed); stdin: 0
  std::uint64_t decompressed_ = 0;
};

class MemorySource final : public ByteSource {
 public:
  MemorySource(std::string_view bytes, ReadChunks chunks) : bytes_(bytes), chunks_(chunks) {}
  size_t read(char* into, size_t capacity) override {
    std::string_view next = view_next(capacity);
    std::memcpy(into, next.data(), next.size());
    return next.size();
  }
  bool in_place() const override { return chunks_.in_place; }
  std::string_view view_next(size_t capacity) override {
    size_t limit = offset_ == 0 && chunks_.first_read ? chunks_.first_read : chunks_.max_read;
    if (limit) capacity = std::min(capacity, limit);
    size_t n = std::min(capacity, bytes_.size() - offset_);
    std::string_view next = bytes_.substr(offset_, n);
    offset_ += n;
    return next;
  }
  const char* base() const override { return bytes_.data(); }

 private:
  std::string_view bytes_;
  ReadChunks chunks_;
  size_t offset_ = 0;
};

constexpr int kEnd = -1;
// No profiler writes an event this large (the longest seen, a cpu_op with thousands of input
// shapes, is tens of KB): one is skipped under the time rule's warning, never held, so a small
// compressed trace cannot make kprof hold gigabytes for one name.
constexpr size_t kMaxEventBytes = 16u << 20;
// kprof's tracer's summary (the top-level "kprof") carries the graph node table: at its bounds
// (a million rows and a million clone pairs, graph_node_table.h) some 100 MB of JSON. Held whole
// while it is read; past this it is skipped, said once.
constexpr size_t kMaxTracerSummaryBytes = 256u << 20;

// A value's JSON text as a message quotes it: trimmed, at most 40 bytes, safe for a terminal.
std::string quoted_token(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                            token.back() == '\t')) {
    token.remove_suffix(1);
  }
  constexpr size_t kMaxQuoted = 40;
  std::string text = to_valid_utf8(token.substr(0, kMaxQuoted));
  if (token.size() > kMaxQuoted) text += "…";
  return escape_for_terminal(text);
}

// PyTorch 1.8/1.9 wrote capitalised categories ("Kernel", "Runtime", "Memcpy", "Memset",
// "Operator"); every consumer compares the modern names, so they are mapped on reading, as the
// TensorBoard plugin maps them (pytorch/kineto tb_plugin, profiler/trace.py EventTypeMap). Views
// of static strings; anything else is returned as given.
std::string_view modern_category(std::string_view category) {
  if (category == "Kernel") return "kernel";
  if (category == "Runtime" || category == "runtime") return "cuda_runtime";
  if (category == "Memcpy" || category == "memcpy") return "gpu_memcpy";
  if (category == "Memset" || category == "memset") return "gpu_memset";
  if (category == "Operator" || category == "operator") return "cpu_op";
  return category;
}

bool is_legacy_operator(std::string_view category) {
  return category == "Operator" || category == "operator";
}

// The 1.8/1.9 trace has no user_annotation: torch.profiler's step ranges are operators.
bool is_step_operator(std::string_view name) { return name.rfind("ProfilerStep#", 0) == 0; }

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// JSON text with each \u escape of a lone surrogate (a high one not followed by a low one, or a
// low one alone) replaced by \ufffd; simdjson refuses them, Python's json module writes them.
std::string replace_lone_surrogate_escapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto unit_at = [&](size_t at) -> int {  // the code unit of a \uXXXX escape at `at`, or -1
    if (at + 6 > text.size() || text[at] != '\\' || text[at + 1] != 'u') return -1;
    for (size_t k = 2; k < 6; ++k) {
      if (!is_hex(text[at + k])) return -1;
    }
    return std::stoi(std::string(text.substr(at + 2, 4)), nullptr, 16);
  };
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out.push_back(text[i++]);
      continue;
    }
    int unit = unit_at(i);
    if (unit < 0) {  // another escape: copy it whole so "\\u" is not read as an escape
      out.append(text.substr(i, 2));
      i += 2;
      continue;
    }
    if (unit >= 0xD800 && unit <= 0xDBFF) {
      int low = unit_at(i + 6);
      if (low >= 0xDC00 && low <= 0xDFFF) {
        out.append(text.substr(i, 12));
        i += 12;
        continue;
      }
      out += "\\ufffd";
    } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
      out += "\\ufffd";
    } else {
      out.append(text.substr(i, 6));
    }
    i += 6;
  }
  return out;
}

// A category's length and first and last eight bytes: what tells the handful of a trace's
// categories apart without comparing texts (count_category runs for every event on the thread
// that hands them over, and the categories alternate, so comparing with each known one — a call
// to memcmp each — was 4-6 % of the time). Equal keys are equal texts up to 16 bytes. Made by
// the parsing threads, which read the text anyway.
struct CategoryKey {
  std::uint64_t size = 0, head = 0, tail = 0;
  bool operator==(const CategoryKey&) const = default;
};
CategoryKey category_key(std::string_view text) {
  CategoryKey key;
  key.size = text.size();
  if (text.size() >= 8) {
    std::memcpy(&key.head, text.data(), 8);
    std::memcpy(&key.tail, text.data() + text.size() - 8, 8);
  } else {
    for (char c : text) key.head = key.head << 8 | static_cast<unsigned char>(c);
  }
  return key;
}

// What the sink is handed for one event, worked out by EventParser (on the parsing thread) from
// the event's text alone; Scanner::apply() then counts it and calls the sink, in file order.
struct ParsedEvent {
  std::uint64_t start = 0;  // byte offset of the event in the trace
  bool quick = false;       // quick_fields() read it
  bool span = false;        // quick, of a category the sink does not parse: a bare span
  std::string_view phase, quick_category;
  CategoryKey quick_key;       // category_key(quick_category)
  double ts = 0, dur = 0;      // a span's, as quick_fields() read them
  std::string_view skip_name;  // a span's name, looked up only when its time is impossible
  std::uint32_t full = 0;      // not a span: its FullEvent in the batch
};
// An event parsed whole (a third of a PyTorch trace's: kept apart from the spans' records, so
// that a batch in flight holds a few megabytes).
struct FullEvent {
  TraceEvent event;
  bool complete = false;
  simdjson::error_code error = simdjson::SUCCESS;
  std::string time_problem;
};

// Parses events' texts; one per parsing thread (its simdjson parser and buffers are its own).
class EventParser {
 public:
  EventParser(TraceEventSink& sink, bool plain_first) : sink_(sink), plain_first_(plain_first) {}

  // Everything about one event that does not depend on the events before it. The views of
  // `out` point into text or into `owned` (strings the simdjson parse left in its buffers).
  void parse(std::uint64_t start, std::string_view text, ParsedEvent& out,
             std::vector<FullEvent>& full, std::deque<std::string>& owned) {
    out.start = start;
    std::string_view ts, dur;
    out.quick = quick_fields(text, out.phase, out.quick_category, ts, dur, out.ts, out.dur);
    if (out.quick) out.quick_key = category_key(out.quick_category);
    if (out.quick && !wanted(out.quick_category)) {
      out.span = true;
      if (out.phase != "X") return;  // counted, never handed over
      // quick_fields() read both numbers' values (as std::from_chars reads them).
      // The first event skipped is named in the warning, whatever its category: parsed for that
      // (which one is first is the reader's to say, in order).
      TraceEvent named;
      bool complete = false;
      if (!implausible_time(out.ts, out.dur).empty() &&
          parse_any(text, named, complete) == simdjson::SUCCESS) {
        out.skip_name = keep(named.name, text, owned);
      }
      return;
    }
    out.full = static_cast<std::uint32_t>(full.size());
    FullEvent& parsed = full.emplace_back();
    time_problem_.clear();
    parsed.error = parse_any(text, parsed.event, parsed.complete);
    parsed.time_problem = time_problem_;
    parsed.event.category = keep(parsed.event.category, text, owned);
    parsed.event.name = keep(parsed.event.name, text, owned);
    parsed.event.launched_kernel = keep(parsed.event.launched_kernel, text, owned);
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

  // A uint64 id read from its JSON text, so values above 2^53 stay exact (a double would round
  // them); a quoted number is accepted, anything else (negative, fractional, too large) is absent.
  static std::optional<std::uint64_t> unsigned_integer(simdjson::ondemand::value value) {
    std::string_view token = value.raw_json_token();
    while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                              token.back() == '\t')) {
      token.remove_suffix(1);
    }
    if (token.size() >= 2 && token.front() == '"' && token.back() == '"') {
      token = token.substr(1, token.size() - 2);
    }
    std::uint64_t parsed = 0;
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), parsed);
    if (token.empty() || ec != std::errc() || end != token.data() + token.size()) {
      return std::nullopt;
    }
    return parsed;
  }

  // key equals canonical (lower case, spaces) ignoring case and reading '_' as ' '.
  static bool same_key(std::string_view key, std::string_view canonical) {
    if (key.size() != canonical.size()) return false;
    for (size_t i = 0; i < key.size(); ++i) {
      char c = key[i];
      if (c == '_') c = ' ';
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (c != canonical[i]) return false;
    }
    return true;
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

  // The top-level "ph", "cat", "ts" and "dur" of an event read in one forward pass over its
  // text, stopping at the first value that is not a plain string or number (PyTorch writes these
  // before "args"); false sends the event to the full parser.
  // The numbers' texts, and the values of "ts" and "dur" (read once, as std::from_chars reads
  // them: what the events handed over as spans carry).
  static bool quick_fields(std::string_view text, std::string_view& phase,
                           std::string_view& category, std::string_view& ts, std::string_view& dur,
                           double& ts_value, double& dur_value) {
    bool have_phase = false, have_category = false, have_ts = false, have_dur = false;
    const char* p = text.data() + 1;  // after '{'
    const char* const end = text.data() + text.size();
    auto skip_space = [&] {
      while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
    };
    auto read_plain_string = [&](std::string_view& out) {
      if (p >= end || *p != '"') return false;
      const char* close = quote_or_backslash(p + 1, end);  // one pass for both
      if (close == end || *close != '"') return false;
      out = std::string_view(p + 1, static_cast<size_t>(close - p - 1));
      p = close + 1;
      return true;
    };
    // The keys compared by length and bytes: this runs for every event of the trace.
    auto is = [](std::string_view key, const char(&word)[3]) {
      return key.size() == 2 && key[0] == word[0] && key[1] == word[1];
    };
    auto is3 = [](std::string_view key, const char(&word)[4]) {
      return key.size() == 3 && key[0] == word[0] && key[1] == word[1] && key[2] == word[2];
    };
    while (!(have_phase && have_category && have_ts &&
             (have_dur || (have_phase && !(phase.size() == 1 && phase[0] == 'X'))))) {
      skip_space();
      std::string_view key, value;
      if (!read_plain_string(key)) return false;
      skip_space();
      if (p >= end || *p != ':') return false;
      ++p;
      skip_space();
      if (p >= end) return false;
      if (*p == '"') {
        if (!read_plain_string(value)) return false;
        if (is(key, "ph")) phase = value, have_phase = true;
        if (is3(key, "cat")) category = value, have_category = true;
      } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
        // Where std::from_chars would stop, or nullptr (read_double's end is double_end's).
        const bool is_ts = is(key, "ts"), is_dur = is3(key, "dur");
        double value = 0;
        const char* after = is_ts || is_dur ? read_double(p, end, value) : double_end(p, end);
        if (after == nullptr) return false;
        std::string_view number(p, static_cast<size_t>(after - p));
        p = after;
        if (is_ts) ts = number, ts_value = value, have_ts = true;
        if (is_dur) dur = number, dur_value = value, have_dur = true;
      } else {
        return false;  // an object, array or literal before the fields we need
      }
      skip_space();
      if (p >= end || *p != ',') return false;
      ++p;
    }
    return true;
  }

  // Whether the sink wants this category's events parsed; asked again only when the category
  // differs from the previous event's (a trace has a handful, in runs).
  bool wanted(std::string_view category) {
    if (!wanted_known_ || category != last_wanted_category_) {
      // An Operator of the 1.8/1.9 trace may be its step range (a user_annotation once mapped).
      last_wanted_ = sink_.wants_category(modern_category(category)) ||
                     (is_legacy_operator(category) && sink_.wants_category("user_annotation"));
      last_wanted_category_.assign(category);
      wanted_known_ = true;
    }
    return last_wanted_;
  }

  // Parses one event into `event` (default constructed): the plain-event fast path, else simdjson
  // — and where the bytes are not UTF-8 (names as the program spelled them) or hold lone
  // surrogate escapes, simdjson again over a copy with U+FFFD in their place, so that every
  // output can print the name. Its views point into text, event_text_ or repaired_text_.
  simdjson::error_code parse_any(std::string_view text, TraceEvent& event, bool& complete) {
    if (plain_first_ && parse_plain_event(text, event, complete)) return simdjson::SUCCESS;
    event = TraceEvent{};
    complete = false;
    simdjson::error_code error = parse_full(text, event, complete);
    if (error == simdjson::UTF8_ERROR || error == simdjson::STRING_ERROR) {
      event = TraceEvent{};
      complete = false;
      time_problem_.clear();
      repaired_text_ = replace_lone_surrogate_escapes(to_valid_utf8(text));
      error = parse_full(repaired_text_, event, complete);
    }
    return error;
  }

  // Parses one event fully into `event`; its views point into event_text_.
  simdjson::error_code parse_full(std::string_view text, TraceEvent& event, bool& complete) {
    event_text_.assign(text);  // simdjson reads past the end: give it a padded copy
    size_t size = event_text_.size();
    event_text_.append(simdjson::SIMDJSON_PADDING, ' ');
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
        } else if (key == "ts" || key == "dur") {
          // A time that is not a finite JSON number (a string, 1e400) skips this event under
          // the time rule, never the whole trace.
          double& time = key == "ts" ? event.timestamp_us : event.duration_us;
          if (value.get_double().get(time) != simdjson::SUCCESS) {
            time = std::numeric_limits<double>::quiet_NaN();
            time_problem_ = fmt::format("\"{}\" is not a finite number ({})", key,
                                        quoted_token(value.raw_json_token()));
          }
        } else if (key == "pid") {
          event.pid = integer(value).value_or(-1);
        } else if (key == "tid") {
          event.tid = integer(value).value_or(-1);
        } else if (key == "args") {
          simdjson::ondemand::object args;
          if (value.get_object().get(args) != simdjson::SUCCESS) continue;
          for (auto arg : args) {
            // Spellings differ between PyTorch versions ("External id", "external id",
            // "correlation id", "graph id", "graph_id"): compared case-folded, '_' as ' '.
            std::string_view name = arg.unescaped_key();
            simdjson::ondemand::value v = arg.value();
            auto is = [&](std::string_view canonical) { return same_key(name, canonical); };
            if (is("device"))
              event.device = integer(v);
            else if (is("stream"))
              event.stream = integer(v);
            else if (is("correlation") || is("correlation id"))
              event.correlation = integer(v);
            else if (is("external id"))
              event.external_id = integer(v);
            else if (is("graph id") || is("cuda graph id"))
              event.graph_id = integer(v);
            else if (is("graph node id"))
              event.graph_node_id = unsigned_integer(v);
            else if (is("registers per thread"))
              event.registers_per_thread = real(v);
            else if (is("shared memory"))
              event.shared_memory = real(v);
            else if (is("grid"))
              read_dim3(v, event.grid);
            else if (is("block"))
              read_dim3(v, event.block);
            else if (is("kernel") && v.get_string().get(event.launched_kernel) != simdjson::SUCCESS)
              event.launched_kernel = {};
          }
        }
      }
    } catch (const simdjson::simdjson_error& error) {
      return error.error();
    }
    return simdjson::SUCCESS;
  }

 private:
  // A view into text as it is; one into this parser's buffers copied into owned (the next parse
  // reuses them).
  static std::string_view keep(std::string_view view, std::string_view text,
                               std::deque<std::string>& owned) {
    if (view.empty()) return {};
    if (view.data() >= text.data() && view.data() + view.size() <= text.data() + text.size()) {
      return view;
    }
    return owned.emplace_back(view);
  }

  TraceEventSink& sink_;
  bool plain_first_;  // events go to parse_plain_event first (EventParsing)
  simdjson::ondemand::parser parser_;
  std::string event_text_;
  std::string repaired_text_;
  std::string time_problem_;          // why this event's "ts" or "dur" could not be read, if so
  std::string last_wanted_category_;  // wanted()'s last question and answer
  bool last_wanted_ = false, wanted_known_ = false;
};

// Events handed from the scanning thread to the parsing one: the texts of a run of consecutive
// events (in a read buffer handed over whole, or copied out of one that was read over), then what
// parsing them gave.
struct EventBatch {
  std::string buffer;  // the read buffer the events lie in, when handed over
  std::string arena;   // events copied out of a buffer that was read over
  // An in-place source's byte 0: its events (not in the arena) lie there, offsets from the start.
  const char* in_place_base = nullptr;
  struct Pending {
    std::uint64_t start;
    std::size_t offset, length;
    bool in_arena;
  };
  std::vector<Pending> pending;
  std::size_t in_read_buffer = 0;  // bytes of pending events still in the scanner's buffer
  std::vector<ParsedEvent> parsed;
  // A vector, kept with its capacity when the batch is reused (Scanner::recycle): a deque
  // allocated each record apart (one per node, at their size).
  std::vector<FullEvent> full;
  std::deque<std::string> owned;
  std::exception_ptr failure;  // what parsing threw (never an InputError: those are recorded)
  bool parsed_all = false;     // under EventPipeline's mutex

  // Empty again for reuse, the vectors' capacity kept; the read buffer is given up.
  void reset() {
    std::string().swap(buffer);
    arena.clear();
    in_place_base = nullptr;
    pending.clear();
    in_read_buffer = 0;
    parsed.clear();
    full.clear();
    owned.clear();
    failure = nullptr;
    parsed_all = false;
  }

  std::string_view text(const Pending& event) const {
    const char* base =
        event.in_arena ? arena.data() : (in_place_base ? in_place_base : buffer.data());
    return std::string_view(base + event.offset, event.length);
  }
  void parse(EventParser& parser) {
    try {
      parsed.resize(pending.size());
      for (std::size_t i = 0; i < pending.size(); ++i) {
        parser.parse(pending[i].start, text(pending[i]), parsed[i], full, owned);
      }
    } catch (...) {
      failure = std::current_exception();
    }
  }
};

// The parsing threads: batches in, parsed batches out, in order. Two (on a machine of two
// cores or more): this thread's share (scanning, counting, the sink) is a third of the work,
// parsing the rest. A trace of a few megabytes never starts them (its one batch is parsed where
// it was read), nor does a machine of one core.
class EventPipeline {
 public:
  EventPipeline(TraceEventSink& sink, bool plain_first)
      : sink_(sink), plain_first_(plain_first), inline_parser_(sink, plain_first) {}
  ~EventPipeline() { stop(); }

  // Queues a batch; a large one (a read buffer handed over whole) starts the threads.
  void submit(std::unique_ptr<EventBatch> batch, bool large) {
    if (large && workers_.empty() && std::thread::hardware_concurrency() >= 2) start(2);
    if (workers_.empty()) {
      batch->parse(inline_parser_);
      batch->parsed_all = true;
      done_.push_back(std::move(batch));
      return;
    }
    std::lock_guard lock(mutex_);
    queue_.push_back(batch.get());
    done_.push_back(std::move(batch));
    wake_.notify_one();
  }
  std::size_t in_flight() const { return done_.size(); }
  // The oldest batch submitted and not yet taken out (parsed or not), or nullptr.
  const EventBatch* oldest() const { return done_.empty() ? nullptr : done_.front().get(); }
  // The oldest batch once parsed (waiting for it, or not), taken out; nullptr when none is
  // queued or, not waiting, the oldest is not parsed yet.
  std::unique_ptr<EventBatch> next(bool wait) {
    if (done_.empty()) return nullptr;
    if (!workers_.empty()) {
      std::unique_lock lock(mutex_);
      if (!wait && !done_.front()->parsed_all) return nullptr;
      parsed_.wait(lock, [&] { return done_.front()->parsed_all; });
    }
    std::unique_ptr<EventBatch> batch = std::move(done_.front());
    done_.pop_front();
    if (batch->failure) std::rethrow_exception(batch->failure);
    return batch;
  }

 private:
  void start(int count) {
    for (int i = 0; i < count; ++i) {
      workers_.emplace_back([this] {
        EventParser parser(sink_, plain_first_);
        for (;;) {
          EventBatch* batch = nullptr;
          {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
            if (queue_.empty()) return;
            batch = queue_.front();
            queue_.pop_front();
          }
          batch->parse(parser);
          std::lock_guard lock(mutex_);
          batch->parsed_all = true;
          parsed_.notify_all();
        }
      });
    }
  }
  void stop() {
    if (workers_.empty()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
      queue_.clear();
      wake_.notify_all();
    }
    for (std::thread& worker : workers_) worker.join();
  }

  TraceEventSink& sink_;
  bool plain_first_;
  EventParser inline_parser_;
  std::deque<std::unique_ptr<EventBatch>> done_;  // submitted, in order (parsed or not)
  std::deque<EventBatch*> queue_;                 // waiting for a thread
  std::mutex mutex_;
  std::condition_variable wake_, parsed_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// A streaming JSON scanner just deep enough to find the trace events. Their texts go in batches
// to the parsing threads (EventPipeline: the plain-event fast path, else simdjson), and what that
// gives comes back to this thread, which counts it and hands it to the sink in file order.
class Scanner {
 public:
  Scanner(const std::string& path, ByteSource& source, TraceEventSink& sink, ScanIsa isa,
          EventParsing parsing)
      : path_(path),
        source_(source),
        sink_(sink),
        isa_(isa),
        pipeline_(sink, parsing == EventParsing::kPlainFirst),
        in_place_(source.in_place()),
        buffer_(in_place_ ? 0 : kReadBuffer, '\0'),
        data_(buffer_.data()) {}

  TraceReadStats run() {
    skip_space();
    int c = peek();
    if (c == '[') {
      next();
      top_level_array_ = true;
      read_events();
    } else if (c == '{') {
      next();
      read_top_object();
    } else {
      fail(c == kEnd ? "the trace is empty"
                     : "not a Chrome trace: expected a JSON object or array");
    }
    skip_space();
    // Nsight Systems' own JSON export is one protobuf message per line ({"type": "String", …}
    // {"Type": …}); its layout changes between releases, its SQLite export's does not.
    if (!saw_events_ && (peek() == '{' || saw_export_key_)) {
      throw_invalid(path_, InputPosition::byte(0),
                    "an Nsight Systems JSON export (one JSON object per line), not a Chrome "
                    "trace: give kprof the SQLite export instead (`nsys export --type sqlite "
                    "REPORT.nsys-rep`)");
    }
    if (peek() != kEnd) fail("unexpected text after the end of the trace");
    if (!saw_events_) fail("no \"traceEvents\" array in this JSON: not a profiler trace");
    stats_.bytes = offset();
    describe_format();
    // After every event, and only for a trace read to its end.
    if (graph_nodes_) sink_.on_graph_nodes(std::move(graph_nodes_));
    return stats_;
  }

 private:
  std::uint64_t offset() const { return consumed_ + position_; }

  // Categories are counted (a handful of distinct ones per trace; a hostile file's thousands of
  // made-up ones stop being counted at kMaxCategories) to tell what a file without GPU work is.
  void count_category(std::string_view category) {
    count_category(category, category_key(category));
  }
  void count_category(std::string_view category, const CategoryKey& key) {
    for (std::size_t i = 0; i < categories_.size(); ++i) {
      if (category_keys_[i] == key && (key.size <= 16 || categories_[i].first == category)) {
        ++categories_[i].second;
        return;
      }
    }
    constexpr std::size_t kMaxCategories = 64;
    if (categories_.size() < kMaxCategories) {
      categories_.emplace_back(std::string(category), 1);
      category_keys_.push_back(key);
    }
  }
  std::uint64_t category_count(std::string_view category) const {
    for (const auto& [name, count] : categories_) {
      if (name == category) return count;
    }
    return 0;
  }

  void describe_format() {
    const std::uint64_t kernels = category_count("kernel") + category_count("Kernel");
    if (top_level_array_) {
      stats_.format = "Chrome trace (a JSON array of events)";
    } else if (!schema_version_.empty()) {
      stats_.format = "Kineto trace, schemaVersion " + schema_version_;
    } else {
      stats_.format = "Chrome trace";
    }
    if (stats_.legacy_categories) {
      stats_.format += " (PyTorch 1.8/1.9 categories: Kernel, Runtime, Operator, Memcpy, Memset)";
    }
    if (kernels != 0) return;
    // nsightful and nsys2json convert an Nsight Systems export into an array of events whose
    // categories are "cuda" (kernels), "cuda_api" and "nvtx"/"nvtx-kernel".
    if (category_count("cuda") + category_count("cuda_api") != 0) {
      stats_.not_a_timeline =
          "a Chrome-JSON conversion of an Nsight Systems export (nsightful or nsys2json: "
          "categories \"cuda\", \"cuda_api\", \"nvtx\"), whose kernels carry no stream, "
          "device or launch correlation: give kprof the SQLite export it was made from (`nsys "
          "export --type sqlite REPORT.nsys-rep`)";
    } else if (category_count("cuda_profiler_range") != 0) {
      // libkineto's CuptiRangeProfiler: one event per kernel holding counter values, its times
      // made up ("split the total span up per range"), never recorded with kernel activity.
      stats_.not_a_timeline =
          "a CUPTI counter-range trace (Kineto's cuda_profiler_range activity, as HTA's counter "
          "analysis records): per-kernel counter values on synthetic times, not a timeline; "
          "record a trace with CUDA activities for kprof rank and budget, or give kprof "
          "analyze an ncu report for counters";
    }
  }

  [[noreturn]] void fail(const std::string& message) const {
    throw_invalid(path_, InputPosition::byte(offset()), message);
  }

  bool refill() {
    if (capturing_) {  // keep the part of the event being captured that this buffer holds
      if (spill_.size() + (length_ - capture_start_) > capture_limit_) {
        oversized_ = true;  // the rest is skipped, not kept
        std::string().swap(spill_);
      } else if (!oversized_) {
        spill_.append(data_ + capture_start_, length_ - capture_start_);
      }
      capture_start_ = 0;
    }
    hand_over_batch(false);
    consumed_ += length_;
    position_ = 0;
    if (in_place_) {
      const std::string_view next = source_.view_next(kReadBuffer);
      data_ = next.data();
      length_ = next.size();
    } else {
      length_ = source_.read(buffer_.data(), buffer_.size());
      data_ = buffer_.data();
    }
    return length_ != 0;
  }
  int peek() {
    if (position_ == length_ && !refill()) return kEnd;
    return static_cast<unsigned char>(data_[position_]);
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
      const char* start = data_ + position_;
      const char* end = data_ + length_;
      // memchr is vectorised: find the closing quote, then any backslash before it.
      const char* quote =
          static_cast<const char*>(std::memchr(start, '"', static_cast<size_t>(end - start)));
      const char* limit = quote ? quote : end;
      const char* backslash =
          static_cast<const char*>(std::memchr(start, '\\', static_cast<size_t>(limit - start)));
      const char* stop = backslash ? backslash : limit;
      if (out) out->append(start, static_cast<size_t>(stop - start));
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

  // Skips one JSON value (an event object, or a top-level value the trace reader does not
  // need). Most bytes of a trace are inside events, so this loop is the reader's speed: it
  // classifies 16 bytes at a time (structural_scan.h: SSE2, NEON or plain C++) and walks only the
  // quotes, backslashes and brackets.
  void skip_value() {
    switch (isa_) {
#if defined(__SSE2__)
      case ScanIsa::kSse2:
        return skip_value_with<ScanIsa::kSse2>();
#endif
#if defined(__ARM_NEON)
      case ScanIsa::kNeon:
        return skip_value_with<ScanIsa::kNeon>();
#endif
      default:
        return skip_value_with<ScanIsa::kScalar>();
    }
  }

  template <ScanIsa Isa>
  void skip_value_with() {
    skip_space();
    int first = peek();
    if (first == kEnd) fail("truncated: the trace ends where a value should be");
    if (first != '{' && first != '[' && first != '"') {
      for (;;) {  // a scalar: up to the next delimiter
        int c = peek();
        if (c == kEnd || c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' ||
            c == '\t') {
          return;
        }
        next();
      }
    }
    int depth = 0;
    bool in_string = false;
    std::uint64_t escaped_at = ~std::uint64_t{0};  // absolute offset of an escaped character
    // Returns true when the value ends with the structural character at buffer index i.
    auto step = [&](size_t i) {
      char c = data_[i];
      std::uint64_t at = consumed_ + i;
      if (at == escaped_at) return false;
      if (in_string) {
        if (c == '"')
          in_string = false;
        else if (c == '\\')
          escaped_at = at + 1;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (--depth < 0) {
        fail("unbalanced brackets");
      }
      return depth == 0 && !in_string;
    };
    // An object or array (every event): whole 64-byte blocks without a backslash are walked by
    // their brackets outside strings alone; a block with one, or right after an escaping one,
    // goes character by character below, so escapes keep step()'s exact rules.
    const bool bracketed = first != '"';
    for (;;) {
      if (position_ == length_ && !refill()) fail("truncated: the trace ends inside a value");
      const char* base = data_;
      size_t i = position_;
      const size_t n = length_;
      for (; bracketed && i + 64 <= n; i += 64) {
        const BlockMasks m = block_masks64<Isa>(base + i);
        if (m.backslash == 0 && escaped_at != consumed_ + i) {
          const std::uint64_t inside = prefix_xor(m.quote) ^ (in_string ? ~std::uint64_t{0} : 0);
          for (std::uint64_t brackets = (m.open | m.close) & ~inside; brackets != 0;
               brackets &= brackets - 1) {
            const int bit = __builtin_ctzll(brackets);
            if ((m.open >> bit & 1) != 0) {
              ++depth;
            } else if (--depth == 0) {  // depth is 1 or more until the value's own close
              position_ = i + static_cast<size_t>(bit) + 1;
              return;
            }
          }
          in_string = (inside >> 63) != 0;
          continue;
        }
        for (std::uint64_t all = m.quote | m.backslash | m.open | m.close; all != 0;
             all &= all - 1) {
          const size_t at = i + static_cast<size_t>(__builtin_ctzll(all));
          if (step(at)) {
            position_ = at + 1;
            return;
          }
        }
      }
      for (; i + 16 <= n; i += 16) {
        std::uint32_t mask = structural_mask16<Isa>(base + i);
        while (mask != 0) {
          size_t at = i + static_cast<size_t>(__builtin_ctz(mask));
          mask &= mask - 1;
          if (step(at)) {
            position_ = at + 1;
            return;
          }
        }
      }
      for (; i < n; ++i) {
        if (kStructuralByte[static_cast<unsigned char>(base[i])] && step(i)) {
          position_ = i + 1;
          return;
        }
      }
      position_ = n;
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
      } else if (key == "kprof") {
        skip_space();
        capture_limit_ = kMaxTracerSummaryBytes;
        std::string_view text = capture_value();
        capture_limit_ = kMaxEventBytes;
        if (oversized_) {
          stats_.graph_nodes_ignored = fmt::format(
              "the tracer's summary (top-level \"kprof\") is over {} MiB: neither its drop "
              "counts nor a graph node table in it are read",
              kMaxTracerSummaryBytes >> 20);
        } else if (!text.empty()) {
          read_tracer_summary(text);
        }
      } else if (key == "schemaVersion" || key == "deviceProperties") {
        skip_space();
        std::string_view text = capture_value();
        if (key == "schemaVersion") {
          // A number (1) or a string ("1.0.1"); shown without JSON's quotes.
          std::string_view version = text;
          while (!version.empty() && std::isspace(static_cast<unsigned char>(version.back())))
            version.remove_suffix(1);
          if (version.size() >= 2 && version.front() == '"' && version.back() == '"')
            version = version.substr(1, version.size() - 2);
          schema_version_ = quoted_token(version);
        } else if (!text.empty()) {
          read_device_properties(text);
        }
      } else {
        if (key == "type" || key == "Type" || key == "data") saw_export_key_ = true;
        skip_value();
      }
      skip_space();
      int c = next();
      if (c == '}') return;
      if (c != ',')
        fail(c == kEnd ? "truncated: the trace ends inside its top-level object"
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
    // The events are parsed and handed to the sink as their batches come back; whatever stops the
    // scan (a truncated file, bytes that are not JSON) is raised only after every event before it
    // has been handed over, as a reader that parsed each event as it found it would.
    try {
      for (;;) {
        skip_space();
        std::uint64_t start = offset();
        if (peek() != '{')
          fail(peek() == kEnd ? "truncated: the trace ends inside traceEvents"
                              : "expected an event object in traceEvents");
        std::string_view text = capture_value();
        if (oversized_) {
          skip_oversized(start);
        } else {
          add_event(start, text);
        }
        if (!next_event()) break;
      }
    } catch (const InputError&) {
      if (!stopped_) finish_events();  // unless it is an event's own error, raised in order
      throw;
    }
    finish_events();
  }

  // One event's text into the open batch: a view into the read buffer (or the in-place source),
  // or a copy when it lies in spill_ (it straddled two reads).
  void add_event(std::uint64_t start, std::string_view text) {
    if (!batch_) {
      if (spare_batches_.empty()) {
        batch_ = std::make_unique<EventBatch>();
        batch_->pending.reserve(kPendingReserve);
      } else {
        batch_ = std::move(spare_batches_.back());
        spare_batches_.pop_back();
      }
    }
    if (text.data() >= data_ && text.data() < data_ + length_) {
      const char* base = in_place_ ? source_.base() : data_;
      batch_->in_place_base = in_place_ ? base : nullptr;
      batch_->pending.push_back(
          {start, static_cast<std::size_t>(text.data() - base), text.size(), false});
      batch_->in_read_buffer += text.size();
    } else {
      batch_->pending.push_back({start, batch_->arena.size(), text.size(), true});
      batch_->arena.append(text);
    }
  }

  // Before the read buffer is read over (or at the end of the events): the open batch takes the
  // buffer whole when its events fill most of it, else a copy of its events in it; a whole one
  // goes to the parsing thread. Then batches already parsed are handed to the sink, waiting for
  // the oldest while too many are in flight (memory stays a few buffers).
  void hand_over_batch(bool last) {
    if (in_place_) {
      // The events stay where they lie until the reading ends: never copied, handed over once a
      // batch holds enough of them.
      if (!last && batch_ && batch_->in_read_buffer >= kHandOverBytes) {
        pipeline_.submit(std::move(batch_), true);
      }
    } else if (!last && batch_ && batch_->in_read_buffer >= kHandOverBytes) {
      // Only a buffer read to its end is handed over (at the end of the events it still holds
      // what follows them).
      batch_->buffer = std::move(buffer_);
      buffer_ = spare_buffers_.empty() ? std::string(kReadBuffer, '\0')
                                       : std::move(spare_buffers_.back());
      if (!spare_buffers_.empty()) spare_buffers_.pop_back();
      batch_->in_read_buffer = 0;
      pipeline_.submit(std::move(batch_), true);
    } else if (batch_ && batch_->in_read_buffer != 0) {
      for (EventBatch::Pending& event : batch_->pending) {
        if (event.in_arena) continue;
        const std::size_t at = batch_->arena.size();
        batch_->arena.append(buffer_.data() + event.offset, event.length);
        event.offset = at;
        event.in_arena = true;
      }
      batch_->in_read_buffer = 0;
    }
    if (last && batch_) pipeline_.submit(std::move(batch_), false);
    while (std::unique_ptr<EventBatch> done = pipeline_.next(pipeline_.in_flight() > kInFlight)) {
      apply(*done);
      if (!done->buffer.empty() && spare_buffers_.size() < kInFlight) {
        spare_buffers_.push_back(std::move(done->buffer));
      }
      recycle(std::move(done));
    }
    if (in_place_) source_.release_before(oldest_needed());
  }

  // The first byte an in-place source must still hold: the first event of the oldest batch not
  // handed to the sink yet, else the start of the part being scanned.
  std::uint64_t oldest_needed() const {
    std::uint64_t needed = consumed_;
    if (batch_ && !batch_->pending.empty())
      needed = std::min(needed, batch_->pending.front().start);
    const EventBatch* oldest = pipeline_.oldest();
    if (oldest && !oldest->pending.empty())
      needed = std::min(needed, oldest->pending.front().start);
    return needed;
  }

  // A batch handed to the sink, kept for the next events (its vectors' memory reused: allocating
  // and faulting in fresh ones for each read buffer was some 4 % of the time), or dropped past a
  // few.
  void recycle(std::unique_ptr<EventBatch> batch) {
    if (spare_batches_.size() > kInFlight) return;
    batch->reset();
    spare_batches_.push_back(std::move(batch));
  }

  // The last batch submitted and every batch handed to the sink.
  void finish_events() {
    hand_over_batch(true);
    while (std::unique_ptr<EventBatch> done = pipeline_.next(true)) apply(*done);
  }

  // What the sink gets for each parsed event, in file order: the counts, the time rule, the
  // categories' modern names.
  void apply(EventBatch& batch) {
    for (const ParsedEvent& parsed : batch.parsed) apply(parsed, batch);
  }

  void apply(const ParsedEvent& p, EventBatch& batch) {
    // Each event's time rule reads its own times: the reason left by an event whose "ts" was not
    // a number must not skip the span after it.
    FullEvent* full = p.span ? nullptr : &batch.full[p.full];
    if (full) {
      time_problem_ = full->time_problem;
    } else {
      time_problem_.clear();
    }
    if (p.quick) count_category(p.quick_category, p.quick_key);
    if (p.span) {
      if (p.phase != "X") {
        ++stats_.other_events;
      } else if (plausible(p.start, p.skip_name, p.ts, p.dur)) {
        ++stats_.events;
        sink_.on_span(p.ts, p.dur);
      }
      return;
    }
    if (full->error) {
      stopped_ = true;
      throw_invalid(path_, InputPosition::byte(p.start),
                    fmt::format("malformed trace event: {}", simdjson::error_message(full->error)));
    }
    // Completed where it lies (the batch is done with once applied): a copy of each was 1 %.
    TraceEvent& event = full->event;
    const bool complete = full->complete;
    if (!p.quick) count_category(event.category);
    std::string_view modern = modern_category(event.category);
    if (modern.data() != event.category.data()) {
      if (complete) stats_.legacy_categories = true;
      if (is_legacy_operator(event.category) && is_step_operator(event.name)) {
        modern = "user_annotation";
      }
      event.category = modern;
    }
    // Kineto's GPU rows carry the device as their pid; every other row, its process.
    if (event.category != "kernel" && event.category != "gpu_memcpy" &&
        event.category != "gpu_memset" && event.category != "gpu_user_annotation" &&
        event.category != "cuda_sync") {
      event.process = event.pid;
    }
    if (!complete) {
      ++stats_.other_events;
    } else if (plausible(p.start, event.name, event.timestamp_us, event.duration_us)) {
      ++stats_.events;
      sink_.on_event(event);
    }
  }

  // The next value's text, without copying it when it lies within one buffer (nearly always);
  // empty, with oversized_ set, past kMaxEventBytes. Valid until the next read.
  std::string_view capture_value() {
    spill_.clear();
    oversized_ = false;
    capturing_ = true;
    capture_start_ = position_;
    skip_value();
    capturing_ = false;
    if (oversized_) return {};
    if (spill_.empty()) {
      return std::string_view(data_ + capture_start_, position_ - capture_start_);
    }
    spill_.append(data_ + capture_start_, position_ - capture_start_);
    return spill_;
  }

  // Kineto's top-level "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-40GB", …}, …].
  // Only the ids and names are kept (trace diff warns when two traces ran on different GPUs); a
  // shape that is not this is ignored, as the rest of the top level is.
  void read_device_properties(std::string_view text) {
    event_text_.assign(text);
    size_t size = event_text_.size();
    event_text_.append(simdjson::SIMDJSON_PADDING, ' ');
    try {
      simdjson::ondemand::document document =
          parser_.iterate(event_text_.data(), size, event_text_.size());
      simdjson::ondemand::array devices;
      if (document.get_array().get(devices) != simdjson::SUCCESS) return;
      for (auto element : devices) {
        simdjson::ondemand::object device;
        if (element.get_object().get(device) != simdjson::SUCCESS) continue;
        std::optional<std::int64_t> id;
        std::string name;
        for (auto field : device) {
          std::string_view key = field.unescaped_key();
          simdjson::ondemand::value value = field.value();
          std::string_view text_value;
          if (key == "id") {
            id = EventParser::integer(value);
          } else if (key == "name" && value.get_string().get(text_value) == simdjson::SUCCESS) {
            name = to_valid_utf8(text_value.substr(0, 200));
          }
        }
        if (id && !name.empty()) stats_.device_names.emplace_back(*id, std::move(name));
      }
    } catch (const simdjson::simdjson_error&) {
      stats_.device_names.clear();  // a malformed deviceProperties costs only the GPU names
    }
  }

  // kprof's tracer's own summary (top-level "kprof", kprof.trace/1): its "dropped" counts, each
  // one not zero said as the tracer's ("kprof tracer: 12 cupti dropped records"), and its graph
  // node table ("graph_nodes", read by graph_node_table_reader). Another shape under that key is
  // ignored, as the rest of the top level is; a table that is not one is said once and ignored.
  void read_tracer_summary(std::string_view text) {
    // Padded for simdjson in place when the text was gathered over several reads (a large
    // table), else copied.
    std::string& padded = text.data() == spill_.data() ? spill_ : event_text_;
    if (&padded == &event_text_) event_text_.assign(text);
    size_t size = text.size();
    padded.append(simdjson::SIMDJSON_PADDING, ' ');
    read_tracer_drops(padded, size);
    read_graph_nodes(padded, size);
    if (&padded == &spill_) std::string().swap(spill_);
  }

  void read_tracer_drops(const std::string& padded, size_t size) {
    std::vector<std::string> drops;
    try {
      simdjson::ondemand::document document = parser_.iterate(padded.data(), size, padded.size());
      simdjson::ondemand::object summary;
      if (document.get_object().get(summary) != simdjson::SUCCESS) return;
      simdjson::ondemand::object dropped;
      if (summary.find_field_unordered("dropped").get_object().get(dropped) != simdjson::SUCCESS) {
        return;
      }
      for (auto field : dropped) {
        std::string_view key = field.unescaped_key();
        std::uint64_t count = 0;
        if (field.value().get_uint64().get(count) != simdjson::SUCCESS || count == 0) continue;
        std::string what = to_valid_utf8(key.substr(0, 60));
        std::replace(what.begin(), what.end(), '_', ' ');
        drops.push_back(fmt::format("kprof tracer: {} {}", count, escape_for_terminal(what)));
      }
    } catch (const simdjson::simdjson_error&) {
      return;  // a malformed summary says nothing about drops
    }
    stats_.producer_counts_drops = true;
    for (std::string& drop : drops) stats_.producer_drops.push_back(std::move(drop));
  }

  // The summary's "graph_nodes", in a reading of its own: a table that is not one costs the table
  // alone, never the drop counts.
  void read_graph_nodes(const std::string& padded, size_t size) {
    try {
      simdjson::ondemand::document document = parser_.iterate(padded.data(), size, padded.size());
      simdjson::ondemand::object summary;
      if (document.get_object().get(summary) != simdjson::SUCCESS) return;
      simdjson::ondemand::value value;
      auto field = summary.find_field_unordered("graph_nodes");
      if (field.error() == simdjson::NO_SUCH_FIELD) return;  // an older tracer's: none
      if (field.get(value) != simdjson::SUCCESS) {
        stats_.graph_nodes_ignored = "the tracer's summary is not valid JSON";
        return;
      }
      auto table = std::make_shared<GraphNodeTable>(read_graph_node_table(value));
      stats_.has_graph_nodes = true;
      stats_.graph_node_rows = table->nodes.size();
      stats_.graph_node_clones = table->clones.size();
      graph_nodes_ = std::move(table);
    } catch (const GraphNodeTableError& error) {
      stats_.graph_nodes_ignored = error.what();
    } catch (const simdjson::simdjson_error& error) {
      stats_.graph_nodes_ignored = fmt::format("not valid JSON ({})", error.what());
    } catch (const std::bad_alloc&) {
      stats_.graph_nodes_ignored = "out of memory while reading it";
    }
  }

  // After an event: true when another follows, false at the end of traceEvents.
  bool next_event() {
    skip_space();
    int c = next();
    if (c == ']') return false;
    if (c != ',')
      fail(c == kEnd ? "truncated: the trace ends inside traceEvents"
                     : "expected ',' or ']' between events");
    return true;
  }

  void skip_oversized(std::uint64_t start) {
    if (stats_.oversized_events++ == 0) stats_.first_oversized_at = start;
  }

  // Applies the time rule; false when the event is skipped (and counted).
  bool plausible(std::uint64_t start, std::string_view name, double ts, double dur) {
    std::string reason = time_problem_.empty() ? implausible_time(ts, dur) : time_problem_;
    if (reason.empty()) return true;
    if (stats_.skipped_events++ == 0) {
      stats_.first_skipped = name.empty() ? fmt::format("at byte {}: {}", start, reason)
                                          : fmt::format("\"{}\" at byte {}: {}",
                                                        escape_for_terminal(name), start, reason);
    }
    return false;
  }

  // Read buffers of 2 MiB; a batch takes its buffer whole from 512 KiB of events in it, and at
  // most three wait or are parsed (one per thread, and the next) while the next is read.
  static constexpr std::size_t kReadBuffer = 2u << 20, kHandOverBytes = 512u << 10, kInFlight = 3;
  // A batch's events: a read buffer of PyTorch's holds some 4,500 (growing the vector was 1 % of
  // the time).
  static constexpr std::size_t kPendingReserve = 8192;

  const std::string& path_;
  ByteSource& source_;
  TraceEventSink& sink_;
  ScanIsa isa_;
  EventPipeline pipeline_;
  std::unique_ptr<EventBatch> batch_;  // events found, not yet submitted
  std::vector<std::string> spare_buffers_;
  std::vector<std::unique_ptr<EventBatch>> spare_batches_;  // handed to the sink, to reuse
  bool stopped_ = false;  // an event's error was raised: nothing more is handed to the sink
  const bool in_place_;   // the source's bytes are scanned where they lie (ByteSource::in_place)
  std::string buffer_;    // the read buffer, unless in place
  const char* data_;      // the bytes being scanned: buffer_'s, or the in-place source's
  size_t position_ = 0, length_ = 0;
  std::uint64_t consumed_ = 0;
  std::string event_text_;    // deviceProperties, padded for simdjson
  std::string time_problem_;  // the event being applied: why its "ts" or "dur" could not be read
  std::string spill_;         // an event that straddles two buffers
  bool capturing_ = false;
  bool oversized_ = false;  // the event being captured passed capture_limit_
  size_t capture_limit_ = kMaxEventBytes;
  std::shared_ptr<const GraphNodeTable> graph_nodes_;  // read from the tracer's summary
  size_t capture_start_ = 0;
  simdjson::ondemand::parser parser_;  // deviceProperties
  TraceReadStats stats_;
  bool saw_events_ = false;
  bool top_level_array_ = false;
  bool saw_export_key_ = false;  // a top-level key of Nsight Systems' JSON export
  std::string schema_version_;
  std::vector<std::pair<std::string, std::uint64_t>> categories_;
  std::vector<CategoryKey> category_keys_;  // category_key() of each of categories_
};

}  // namespace

std::string_view ChromeTraceReader::looks_like(std::string_view head) const {
  if (head.size() >= 2 && head[0] == '\x1f' && head[1] == '\x8b') {
    return "gzip-compressed, as profiler traces are (.json.gz)";
  }
  return looks_like_chrome_trace(head) ? "JSON, as profiler traces are (Chrome trace format)" : "";
}

bool looks_like_chrome_trace(std::string_view head) {
  for (char c : head) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{' || c == '[';
  }
  return false;
}

TraceReadStats read_chrome_trace(const std::string& path, TraceEventSink& sink) {
  if (std::unique_ptr<MappedFileSource> mapped = MappedFileSource::open(path)) {
    Scanner scanner(path, *mapped, sink, kNativeScanIsa, EventParsing::kPlainFirst);
    return scanner.run();
  }
  GzFileSource source(path);
  Scanner scanner(path, source, sink, kNativeScanIsa, EventParsing::kPlainFirst);
  TraceReadStats stats = scanner.run();
  if (source.truncated_gzip()) {
    throw_invalid(path, InputPosition::byte(stats.bytes),
                  "truncated gzip stream: the compressed file ends early");
  }
  return stats;
}

TraceReadStats read_chrome_trace_bytes(const std::string& path, std::string_view bytes,
                                       TraceEventSink& sink, ReadChunks chunks, ScanIsa isa,
                                       EventParsing parsing) {
  if (isa != ScanIsa::kScalar && isa != kNativeScanIsa) {
    throw std::invalid_argument(fmt::format("scan ISA {} is not compiled in", scan_isa_name(isa)));
  }
  MemorySource source(bytes, chunks);
  Scanner scanner(path, source, sink, isa, parsing);
  return scanner.run();
}

}  // namespace kprof::importers
