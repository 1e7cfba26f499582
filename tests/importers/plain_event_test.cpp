// The Chrome trace reader's plain-event fast path (plain_event.h) against the simdjson parse it
// stands in for: every field of every event, the reading's counts and any error the same, on the
// real traces under data/ and on events written to sit at the edges of what the fast path takes
// (escapes, non-ASCII bytes, every number form, duplicate keys, odd value types, nesting, broken
// JSON). And that it does take the events profilers write, which is what it is for.
#include "importers/chrome_trace/plain_event.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"

namespace kprof::importers {
namespace {

// A double's exact bits, so that two parses agreeing to print precision are not taken as equal.
std::string exact(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%a", value);
  return text;
}

template <typename T>
std::string optional_text(const std::optional<T>& value) {
  return value ? std::to_string(*value) : "-";
}

std::string optional_double(const std::optional<double>& value) {
  return value ? exact(*value) : "-";
}

// Every field of every event and span, one line each.
class RecordingSink final : public TraceEventSink {
 public:
  explicit RecordingSink(bool spans) : spans_(spans) {}
  void on_event(const TraceEvent& e) override {
    std::string line =
        std::string(e.category) + "|" + std::string(e.name) + "|" + exact(e.timestamp_us) + "|" +
        exact(e.duration_us) + "|" + std::to_string(e.pid) + "|" + std::to_string(e.tid) + "|" +
        optional_text(e.process) + "|" + optional_text(e.device) + "|" + optional_text(e.stream) +
        "|" + optional_text(e.correlation) + "|" + optional_text(e.external_id) + "|" +
        optional_text(e.graph_id) + "|" + optional_text(e.graph_node_id) + "|" +
        optional_double(e.registers_per_thread) + "|" + optional_double(e.shared_memory) + "|" +
        std::string(e.launched_kernel);
    for (const auto& dims : {e.grid, e.block}) {
      for (int d = 0; d < 3; ++d) line += "|" + optional_text(dims[d]);
    }
    lines.push_back(line);
  }
  // With spans, the sink asks for kernels and launches only, as kprof rank's does.
  bool wants_category(std::string_view category) const override {
    return !spans_ || category == "kernel" || category == "cuda_runtime" ||
           category == "gpu_memcpy";
  }
  void on_span(double ts, double dur) override {
    lines.push_back("span|" + exact(ts) + "|" + exact(dur));
  }
  std::vector<std::string> lines;

 private:
  bool spans_;
};

// What one reading gave: every line, the counts, or the error.
std::vector<std::string> read(std::string_view bytes, EventParsing parsing, bool spans) {
  RecordingSink sink(spans);
  try {
    TraceReadStats stats =
        read_chrome_trace_bytes("t.json", bytes, sink, {}, kNativeScanIsa, parsing);
    sink.lines.push_back("stats|" + std::to_string(stats.bytes) + "|" +
                         std::to_string(stats.events) + "|" + std::to_string(stats.other_events) +
                         "|" + std::to_string(stats.skipped_events) + "|" + stats.first_skipped +
                         "|" + stats.format + "|" + std::to_string(stats.legacy_categories));
  } catch (const InputError& error) {
    sink.lines.push_back(std::string("error|") + error.what());
  }
  return sink.lines;
}

void expect_same(std::string_view bytes, const std::string& what) {
  for (bool spans : {false, true}) {
    std::vector<std::string> plain = read(bytes, EventParsing::kPlainFirst, spans);
    std::vector<std::string> reference = read(bytes, EventParsing::kSimdjsonOnly, spans);
    ASSERT_EQ(plain.size(), reference.size()) << what;
    for (std::size_t i = 0; i < plain.size(); ++i) {
      ASSERT_EQ(plain[i], reference[i]) << what << ", line " << i;
    }
  }
}

std::vector<std::string> chrome_traces() {
  std::vector<std::string> paths;
  for (const char* folder : {"h200"}) {
    for (const auto& entry : std::filesystem::directory_iterator(testing::data_path(folder))) {
      std::string path = entry.path().string();
      if (path.ends_with(".json") || path.ends_with(".json.gz")) paths.push_back(path);
    }
  }
  return paths;
}

TEST(PlainEvent, EveryTraceUnderDataReadsAsSimdjsonReadsIt) {
  std::vector<std::string> paths = chrome_traces();
  ASSERT_GE(paths.size(), 20u);
  std::sort(paths.begin(), paths.end());
  for (const std::string& path : testing::sanitizer_sample(paths)) {
    expect_same(testing::read_gzip_text(path), path);
  }
}

// The fast path is taken for what profilers write (else the test above proves nothing of it).
TEST(PlainEvent, TakesTheEventsOfRealTraces) {
  for (const char* name : {"h200/trace_eager.json.gz", "h200/tracer_two_process_a.json.gz",
                           "h200/engine_steps_vllm.json.gz", "h200/budget_graph_decode.json.gz"}) {
    std::string text = testing::read_gzip_text(testing::data_path(name));
    // Each event object of the traceEvents array, walked by its brackets outside strings (Kineto
    // writes "{" and the first key on separate lines: a search for {"ph" finds none of them).
    std::size_t events = 0, taken = 0;
    std::size_t at = text.find('[', text.find("\"traceEvents\""));
    ASSERT_NE(at, std::string::npos) << name;
    for (at = text.find('{', at); at != std::string::npos; at = text.find_first_of("{]", at + 1)) {
      if (text[at] == ']') break;  // the end of traceEvents
      std::size_t depth = 0, end = at;
      bool in_string = false;
      for (; end < text.size(); ++end) {
        char c = text[end];
        if (in_string) {
          if (c == '\\') ++end;
          if (c == '"') in_string = false;
        } else if (c == '"') {
          in_string = true;
        } else if (c == '{' || c == '[') {
          ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
          break;
        }
      }
      TraceEvent event;
      bool complete = false;
      ++events;
      taken += parse_plain_event(std::string_view(text).substr(at, end - at + 1), event, complete);
      at = end;
    }
    ASSERT_GT(events, 100u) << name;
    EXPECT_GE(taken * 100, events * 99) << name << ": " << taken << " of " << events;
  }
}

// Events at the edges of the fast path, each in a trace of its own after a plain kernel.
TEST(PlainEvent, EdgeCasesReadAsSimdjsonReadsThem) {
  const std::string kernel =
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 2,)"
      R"( "args": {"device": 0, "stream": 7, "correlation": 20, "grid": [1, 2, 3]}})";
  const std::vector<std::string> events = {
      // escapes and bytes outside printable ASCII, in each string the fields read
      R"({"ph": "X", "cat": "kernel", "name": "a\"b\\c\u0041", "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "ker\u006eel", "name": "a", "ts": 1, "dur": 1})",
      R"({"p\u0068": "X", "cat": "kernel", "name": "a", "ts": 1, "dur": 1})",
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"caf\xc3\xa9\", \"ts\": 1, \"dur\": 1}",
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"bad\xff\", \"ts\": 1, \"dur\": 1}",
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"tab\there\", \"ts\": 1, \"dur\": 1}",
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"del\x7f\", \"ts\": 1, \"dur\": 1}",
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "args": {"kernel": "\ud800"}})",
      // numbers: every form JSON has, and what it does not
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": -0, "dur": 0.0})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 5119051338627.625, "dur": 4.992})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1E+5, "dur": 2.5e-3})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1e22, "dur": 1e-22})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1e23, "dur": 0.1e-21})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 123456789012345678901, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 9007199254740993, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 0.30000000000000000004, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 0.000000000000000000000000001, "dur": 1})",
      // more than 19 digits, or an exponent of more than three: simdjson's own paths (it reads
      // the first as 0.1156 and refuses the third), which the fast path must leave to it
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1, "dur": 0.30000000000000000004})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1, "dur": 1, "args": {"shared memory":)"
      R"( 0.300000000000000000041, "registers per thread": 1.30000000000000000004}})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1.5e0000000000000000000001, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 15e-0001, "dur": 1e0002})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1e400, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1e-400, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 01, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1., "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": .5, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": -, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1e, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 12abc, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": -inf, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": "10", "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": null, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1, "dur": -1})",
      R"({"ph": "X", "cat": "kernel", "name": "n", "ts": 1, "dur": 1e300})",
      R"({"ph": "X", "cat": "cpu_op", "name": "n", "ts": 1, "dur": 1e300})",
      // ids: numbers, strings, out of range, fractions, other types
      R"({"ph": "X", "cat": "kernel", "name": "i", "pid": "7", "tid": "x", "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "i", "pid": 1.9, "tid": -3.5, "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "i", "pid": 1e19, "tid": true, "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "i", "ts": 1, "dur": 1, "args": {"Correlation ID": "12",)"
      R"( "external_id": 9.2e18, "graph id": -9.3e18, "Graph Node Id": 18446744073709551615}})",
      R"({"ph": "X", "cat": "kernel", "name": "i", "ts": 1, "dur": 1, "args": {"graph node id": "123",)"
      R"( "cuda graph id": "4", "stream": null, "device": [1]}})",
      R"({"ph": "X", "cat": "kernel", "name": "i", "ts": 1, "dur": 1, "args": {"graph node id": 1.5}})",
      R"({"ph": "X", "cat": "kernel", "name": "i", "ts": 1, "dur": 1, "args": {"graph node id": -1}})",
      R"({"ph": "X", "cat": "kernel", "name": "i", "ts": 1, "dur": 1, "args": {"graph node id": 1e400}})",
      R"({"ph": "X", "cat": "kernel", "name": "i", "ts": 1, "dur": 1, "args": {"graph node id": 18446744073709551616}})",
      R"({"ph": "X", "cat": "kernel", "name": "r", "ts": 1, "dur": 1,)"
      R"( "args": {"registers per thread": 32, "Shared_Memory": 1.5e3}})",
      R"({"ph": "X", "cat": "kernel", "name": "r", "ts": 1, "dur": 1,)"
      R"( "args": {"registers per thread": "32", "shared memory": null}})",
      // grid and block: short, long, odd elements, not arrays
      R"({"ph": "X", "cat": "kernel", "name": "g", "ts": 1, "dur": 1, "args": {"grid": [], "block": [4]}})",
      R"({"ph": "X", "cat": "kernel", "name": "g", "ts": 1, "dur": 1, "args": {"grid": [1, 2, 3, 4, [5]]}})",
      R"({"ph": "X", "cat": "kernel", "name": "g", "ts": 1, "dur": 1, "args": {"grid": [1, "2", 3.7]}})",
      R"({"ph": "X", "cat": "kernel", "name": "g", "ts": 1, "dur": 1, "args": {"grid": [1, null, 3]}})",
      R"({"ph": "X", "cat": "kernel", "name": "g", "ts": 1, "dur": 1, "args": {"grid": 5, "block": {}}})",
      // duplicate keys: the later one
      R"({"ph": "X", "cat": "kernel", "name": "a", "name": "b", "ts": 1, "ts": 2, "dur": 1, "ph": "i"})",
      R"({"ph": "i", "ph": "X", "cat": "kernel", "name": "d", "ts": 1, "dur": 1,)"
      R"( "args": {"stream": 1, "stream": 2}, "args": {"device": 3}})",
      // value types where a field is read, and args that is not an object
      R"({"ph": 1, "cat": "kernel", "name": "t", "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": null, "name": "t", "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": ["t"], "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "t", "ts": 1, "dur": 1, "args": [1]})",
      R"({"ph": "X", "cat": "kernel", "name": "t", "ts": 1, "dur": 1, "args": "x"})",
      R"({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 1, "dur": 1,)"
      R"( "args": {"kernel": 5, "correlation": 3}})",
      // skipped values of every kind, nested, and literals misspelt
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "x": {"a": [true, false, null,)"
      R"( {"b": [[], {}]}, -1.5e-3, "[{"]}, "args": {"Input Dims": [[1, 2], [3]], "y": {}}})",
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "x": tru})",
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "x": nul})",
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "x": [1 2]})",
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "x": {"a" 1}})",
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "x": [1,]})",
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "x": [}]})",
      R"({"ph": "X", "cat": "kernel", "name": "s", "ts": 1, "dur": 1, "x": {]})",
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"s\", \"ts\": 1, \"dur\": 1, \"x\": " +
          std::string(40, '[') + std::string(40, ']') + "}",
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"s\", \"ts\": 1, \"dur\": 1, \"x\": " +
          std::string(20, '[') + std::string(20, ']') + "}",
      // the object itself: empty, broken, Kineto's pretty layout
      R"({})",
      R"({"ph": "X", "cat": "kernel" "name": "b", "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "kernel", "name": "b", "ts": 1, "dur": 1,})",
      R"({"ph": "X", "cat": "kernel", "name": "b", "ts": 1, "dur": 1 , })",
      R"({"ph": "X", "cat": "kernel", name: "b", "ts": 1, "dur": 1})",
      "{\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"pretty\", \"pid\": 0, \"tid\": 7,\n"
      "    \"ts\": 5119051338690.992, \"dur\": 4.992,\n    \"args\": {\n      \"External id\": 2,"
      "\r\n\t\"device\": 0, \"stream\": 7, \"correlation\": 20,\n      \"grid\": [16, 1, 1],\n"
      "      \"block\": [32, 4, 1]\n    }\n  }",
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ctl\", \"ts\": 1,\x01 \"dur\": 1}",
      R"({"ph": "X", "cat": "Kernel", "name": "legacy", "ts": 1, "dur": 1})",
      R"({"ph": "X", "cat": "Operator", "name": "ProfilerStep#3", "ts": 1, "dur": 1})",
  };
  for (const std::string& event : events) {
    expect_same(R"({"traceEvents": [)" + kernel + ",\n" + event + "]}", event);
  }
}

// The time rule reads each event's own times: an event whose "ts" is not a number once left its
// reason behind, and the next event read as a bare span (a category the sink does not parse) was
// skipped with it.
TEST(PlainEvent, ASpanAfterAnUnreadableTimeIsKept) {
  const std::string trace =
      R"({"traceEvents": [)"
      R"({"ph": "X", "cat": "kernel", "name": "k1", "ts": 1e400, "dur": 2, "args": {}},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 5, "dur": 100, "args": {}},)"
      R"({"ph": "X", "cat": "kernel", "name": "k2", "ts": 10, "dur": 2, "args": {}}]})";
  for (EventParsing parsing : {EventParsing::kPlainFirst, EventParsing::kSimdjsonOnly}) {
    RecordingSink sink(true);
    TraceReadStats stats =
        read_chrome_trace_bytes("t.json", trace, sink, {}, kNativeScanIsa, parsing);
    EXPECT_EQ(stats.skipped_events, 1u);
    EXPECT_EQ(stats.events, 2u);
    ASSERT_EQ(sink.lines.size(), 2u);
    EXPECT_EQ(sink.lines[0], "span|" + exact(5) + "|" + exact(100));
  }
}

// The first event skipped for its time is named in the warning whether or not the sink parses
// its category (kprof rank and kprof budget read different categories and warn alike).
TEST(PlainEvent, TheFirstSkippedSpanIsNamed) {
  const std::string trace =
      R"({"traceEvents": [)"
      R"({"ph": "X", "cat": "kernel", "name": "k1", "ts": 1, "dur": 2, "args": {}},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 5, "dur": 1e300, "args": {}},)"
      R"({"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 5, "dur": -1, "args": {}}]})";
  for (bool spans : {false, true}) {
    RecordingSink sink(spans);
    TraceReadStats stats = read_chrome_trace_bytes("t.json", trace, sink);
    EXPECT_EQ(stats.skipped_events, 2u);
    EXPECT_EQ(stats.first_skipped,
              "\"aten::mm\" at byte " +
                  std::to_string(trace.find("{\"ph\": \"X\", \"cat\": \"cpu_op\"")) +
                  ": duration 1e+300 us is longer than 1e12 us (11.6 days)");
  }
}

// read_double against std::from_chars: the same end and the same bits on numbers of every shape,
// followed by what may or may not extend them.
TEST(PlainEvent, ReadDoubleReadsAsFromChars) {
  std::mt19937_64 random(38);
  std::vector<std::string> numbers = {"0",
                                      "-0",
                                      "1",
                                      "-1",
                                      "0.5",
                                      "1e22",
                                      "1e23",
                                      "9007199254740992",
                                      "9007199254740993",
                                      "1e-22",
                                      "1e-23",
                                      "123.456e-7",
                                      "00012",
                                      "1.",
                                      ".5",
                                      "1e",
                                      "1e+",
                                      "-",
                                      "inf",
                                      "-nan",
                                      "0x10",
                                      "1E5",
                                      "1e400",
                                      "1e-400",
                                      "12345678901234567890",
                                      "1234567890123456789",
                                      "0.000000000000000000001234"};
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    if (random() % 2) text += '-';
    int digits = 1 + static_cast<int>(random() % 22);
    for (int d = 0; d < digits; ++d) text += static_cast<char>('0' + random() % 10);
    if (random() % 2) {
      text += '.';
      int fraction = 1 + static_cast<int>(random() % 20);
      for (int d = 0; d < fraction; ++d) text += static_cast<char>('0' + random() % 10);
    }
    if (random() % 3 == 0) {
      text += random() % 2 ? 'e' : 'E';
      if (random() % 2) text += random() % 2 ? '-' : '+';
      text += std::to_string(random() % 40);
    }
    numbers.push_back(text);
  }
  for (const std::string& number : numbers) {
    for (const char* after : {"", ",", "}", " ", "]", ".", "e", "5", "x"}) {
      std::string text = number + after;
      const char* begin = text.data();
      const char* end = text.data() + text.size();
      double expected = 0, got = 0;
      auto [expected_end, ec] = std::from_chars(begin, end, expected);
      const char* got_end = read_double(begin, end, got);
      if (ec != std::errc()) {
        EXPECT_EQ(got_end, nullptr) << text;
        continue;
      }
      ASSERT_EQ(got_end, expected_end) << text;
      EXPECT_EQ(exact(got), exact(expected)) << text;
    }
  }
}

}  // namespace
}  // namespace kprof::importers
