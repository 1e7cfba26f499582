// The Chrome trace reader gives the same events, spans, counts and errors with every scanner
// implementation compiled in (structural_scan.h): the real traces of data/h200, and values whose
// quotes, escapes and brackets fall on every position of the 16-byte blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"

namespace kprof::importers {
namespace {

class RecordingSink final : public TraceEventSink {
 public:
  void on_event(const TraceEvent& e) override {
    log += fmt_event(e);
    ++events;
  }
  bool wants_category(std::string_view category) const override { return category == "kernel"; }
  void on_span(double timestamp_us, double duration_us) override {
    log += "span " + std::to_string(timestamp_us) + " " + std::to_string(duration_us) + "\n";
  }
  std::string log;
  int events = 0;

 private:
  static std::string fmt_event(const TraceEvent& e) {
    std::string line = std::string(e.category) + "|" + std::string(e.name) + "|" +
                       std::to_string(e.timestamp_us) + "|" + std::to_string(e.duration_us) + "|" +
                       std::to_string(e.pid) + "|" + std::to_string(e.tid) + "|" +
                       std::to_string(e.correlation.value_or(-1)) + "|" +
                       std::to_string(e.grid[0].value_or(-1)) + "\n";
    return line;
  }
};

struct Reading {
  std::string log;
  int events = 0;
  TraceReadStats stats;
  std::string error;
};

Reading read_with(ScanIsa isa, const std::string& text) {
  Reading reading;
  RecordingSink sink;
  try {
    reading.stats = read_chrome_trace_bytes("t.json", text, sink, {}, isa);
  } catch (const InputError& error) {
    reading.error = error.what();
  }
  reading.log = sink.log;
  reading.events = sink.events;
  return reading;
}

void expect_same_with_every_isa(const std::string& text, const std::string& what) {
  Reading scalar = read_with(ScanIsa::kScalar, text);
  for (ScanIsa isa : compiled_scan_isas()) {
    Reading other = read_with(isa, text);
    SCOPED_TRACE(what + " with " + scan_isa_name(isa));
    EXPECT_EQ(other.error, scalar.error);
    EXPECT_EQ(other.events, scalar.events);
    EXPECT_EQ(other.stats.events, scalar.stats.events);
    EXPECT_EQ(other.stats.other_events, scalar.stats.other_events);
    EXPECT_EQ(other.stats.bytes, scalar.stats.bytes);
    EXPECT_TRUE(other.log == scalar.log);
  }
}

TEST(ChromeTraceScanIsa, TheNativeImplementationIsCompiledIn) {
  std::vector<ScanIsa> isas = compiled_scan_isas();
  EXPECT_EQ(isas.front(), ScanIsa::kScalar);
#if defined(__x86_64__)
  ASSERT_EQ(isas.size(), 2u);
  EXPECT_EQ(isas.back(), ScanIsa::kSse2);
#endif
}

TEST(ChromeTraceScanIsa, RealTracesReadTheSameWithEveryImplementation) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(testing::data_path("h200"))) {
    std::string name = entry.path().filename().string();
    if (name.size() < 8 || name.substr(name.size() - 8) != ".json.gz") continue;
    if (name.find("calibration") != std::string::npos) continue;
    paths.push_back(entry.path().string());
  }
  EXPECT_GE(paths.size(), 8u);
  std::sort(paths.begin(), paths.end());
  int traces = 0;
  for (const std::string& path : testing::sanitizer_sample(paths)) {
    std::string name = std::filesystem::path(path).filename().string();
    std::string text = testing::read_gzip_text(path);
    Reading scalar = read_with(ScanIsa::kScalar, text);
    EXPECT_EQ(scalar.error, "") << name;
    EXPECT_GT(scalar.events, 0) << name;
    expect_same_with_every_isa(text, name);
    ++traces;
  }
  EXPECT_GE(traces, 2);
}

TEST(ChromeTraceScanIsa, StructuralBytesOnEveryBlockPosition) {
  // Padding moves escaped quotes, backslashes and brackets inside strings across the 16-byte
  // blocks; the names must come out whole and identical.
  for (int pad = 0; pad < 32; ++pad) {
    std::string text = R"({"traceEvents": [)" + std::string(static_cast<size_t>(pad), ' ') +
                       R"({"ph": "X", "cat": "kernel", "name": "a\"b\\\\[c]{d}\\\"", "ts": 1,)"
                       R"( "dur": 2, "args": {"x": [[{"y": "]}"}]], "grid": [4, 1, 1]}}, )"
                       R"({"ph": "X", "cat": "cpu_op", "name": "op{", "ts": 3, "dur": 4}]})";
    expect_same_with_every_isa(text, "pad " + std::to_string(pad));
    Reading scalar = read_with(ScanIsa::kScalar, text);
    EXPECT_EQ(scalar.error, "");
    EXPECT_NE(scalar.log.find(R"(kernel|a"b\\[c]{d}\"|1.0)"), std::string::npos) << scalar.log;
    // Broken the same way: unbalanced and truncated.
    expect_same_with_every_isa(text.substr(0, text.size() - 30),
                               "truncated, pad " + std::to_string(pad));
    std::string unbalanced = text;
    unbalanced.replace(unbalanced.find("[[{"), 3, "]]{");
    expect_same_with_every_isa(unbalanced, "unbalanced, pad " + std::to_string(pad));
    EXPECT_NE(read_with(ScanIsa::kScalar, unbalanced).error, "");
  }
}

TEST(ChromeTraceScanIsa, AnImplementationNotCompiledInIsRefused) {
  ScanIsa foreign = kNativeScanIsa == ScanIsa::kNeon ? ScanIsa::kSse2 : ScanIsa::kNeon;
  RecordingSink sink;
  EXPECT_THROW(read_chrome_trace_bytes("t.json", "[]", sink, {}, foreign), std::invalid_argument);
}

}  // namespace
}  // namespace kprof::importers
