// Ranking on real PyTorch profiler traces, checked against the same traces read whole by a
// different JSON parser (nlohmann) and summed independently.
#include "timeline/kernel_ranking.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

Ranking rank(const std::string& path, bool normalize) {
  static const analysis::StageTable stages = analysis::load_stage_table();
  RankingBuilder builder(stages, normalize);
  importers::read_chrome_trace(path, builder);
  return builder.finish();
}

TEST(KernelRanking, TotalsEqualTheSumOfTheTracesGpuEvents) {
  // The tracer_* files are kprof's own tracer (libkprof_tracer.so) on the H200: an eager decode
  // step, its CUDA-graph replay and the two processes of a two-process program.
  for (std::string file :
       {"h200/trace_eager.json.gz", "h200/trace_compile.json.gz", "h200/budget_eager_b1.json.gz",
        "h200/tracer_eager_decode.json.gz", "h200/tracer_graph_decode.json.gz",
        "h200/tracer_two_process_a.json.gz", "h200/tracer_two_process_b.json.gz"}) {
    SCOPED_TRACE(file);
    auto document = nlohmann::json::parse(testing::read_gzip_text(data_path(file)));
    std::map<std::string, double> expected;
    std::map<std::string, std::uint64_t> counts;
    double gpu_total = 0;
    for (const auto& event : document["traceEvents"]) {
      std::string category = event.value("cat", "");
      if (event.value("ph", "") != "X" ||
          (category != "kernel" && category != "gpu_memcpy" && category != "gpu_memset")) {
        continue;
      }
      expected[event["name"]] += event["dur"].get<double>();
      ++counts[event["name"]];
      gpu_total += event["dur"].get<double>();
    }
    ASSERT_FALSE(expected.empty());
    Ranking ranking = rank(data_path(file), /*normalize=*/false);
    ASSERT_EQ(ranking.kernels.size(), expected.size());
    EXPECT_NEAR(ranking.gpu_time_us, gpu_total, 1e-6 * gpu_total);
    double shares = 0;
    for (const KernelStats& k : ranking.kernels) {
      EXPECT_NEAR(k.total_us, expected.at(k.name), 1e-9 * expected.at(k.name) + 1e-9) << k.name;
      EXPECT_EQ(k.count, counts.at(k.name)) << k.name;
      shares += k.share_of_gpu_time;
    }
    EXPECT_NEAR(shares, 1.0, 1e-9);
    double stage_shares = 0;
    for (const StageStats& s : ranking.stages) stage_shares += s.share_of_gpu_time;
    EXPECT_NEAR(stage_shares, 1.0, 1e-9);
    // Largest first.
    for (size_t i = 1; i < ranking.kernels.size(); ++i) {
      EXPECT_GE(ranking.kernels[i - 1].total_us, ranking.kernels[i].total_us);
    }
  }
}

TEST(KernelRanking, NormalisedNamesMergeOnlyWhatDiffersInReturnTypeAndParameters) {
  EXPECT_EQ(normalize_kernel_name("void at::native::(anonymous namespace)::CatArrayBatchedCopy<int>"
                                  "(int*, unsigned int)"),
            "at::native::(anonymous namespace)::CatArrayBatchedCopy<int>");
  EXPECT_EQ(normalize_kernel_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(normalize_kernel_name("void foo<(bool)1>(float (*) [4])"), "foo<(bool)1>");
  Ranking raw = rank(data_path("h200/trace_eager.json.gz"), false);
  Ranking merged = rank(data_path("h200/trace_eager.json.gz"), true);
  EXPECT_LE(merged.kernels.size(), raw.kernels.size());
  EXPECT_NEAR(merged.gpu_time_us, raw.gpu_time_us, 1e-9);
  EXPECT_EQ(merged.kernels.front().stage, "memory");  // CatArrayBatchedCopy leads this trace
}

class CountingSink final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent&) override { ++events; }
  size_t events = 0;
};

importers::TraceReadStats read_bytes(const std::string& bytes) {
  CountingSink sink;
  return importers::read_chrome_trace_bytes("t.json", bytes, sink);
}

TEST(ChromeTrace, AcceptsObjectAndArrayFormsAndSkipsOtherKeys) {
  EXPECT_EQ(read_bytes(R"({"schemaVersion": 1, "deviceProperties": [{"name": "x"}],
      "traceEvents": [{"ph": "X", "cat": "kernel", "name": "a\"b", "ts": 1, "dur": 2},
                      {"ph": "M", "name": "process_name"}], "traceName": "t"})")
                .events,
            1u);
  EXPECT_EQ(
      read_bytes(R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5, "dur": 2}])").events, 1u);
}

class NameSink final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent& event) override { names.emplace_back(event.name); }
  std::vector<std::string> names;
};

class CorrelationSink final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent& event) override {
    correlations.push_back(event.correlation.value_or(-1));
  }
  std::vector<std::int64_t> correlations;
};

TEST(ChromeTrace, OlderAndNewerArgumentSpellings) {
  CorrelationSink sink;
  importers::read_chrome_trace_bytes("t.json",
                                     R"({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "a", "ts": 1, "dur": 1, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "b", "ts": 2, "dur": 1, "args": {"Correlation id": 8}},
        {"ph": "X", "cat": "kernel", "name": "c", "ts": 3, "dur": 1, "args": {"correlation_id": 9}}]})",
                                     sink);
  EXPECT_EQ(sink.correlations, (std::vector<std::int64_t>{7, 8, 9}));
}

TEST(ChromeTrace, BracketsQuotesAndEscapesInsideStrings) {
  NameSink sink;
  importers::read_chrome_trace_bytes(
      "t.json",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "a\\\"}{[\\", "ts": 1, "dur": 2},
                          {"ph": "X", "cat": "kernel", "name": "b]", "ts": 3, "dur": 1}]})",
      sink);
  ASSERT_EQ(sink.names.size(), 2u);
  EXPECT_EQ(sink.names[0], "a\\\"}{[\\");
  EXPECT_EQ(sink.names[1], "b]");
}

// Events straddle the reader's 4 MB buffers: a 12 MB trace of one repeated real kernel event.
TEST(ChromeTrace, EventsAcrossBufferBoundaries) {
  auto document =
      nlohmann::json::parse(testing::read_gzip_text(data_path("h200/budget_eager_b1.json.gz")));
  nlohmann::json kernel;
  for (const auto& event : document["traceEvents"]) {
    if (event.value("cat", "") == "kernel") {
      kernel = event;
      break;
    }
  }
  std::string one = kernel.dump();
  std::string trace = "{\"traceEvents\": [";
  size_t count = 0;
  while (trace.size() < (12u << 20)) {
    trace += (count++ ? ",\n" : "") + one;
  }
  trace += "]}";
  std::string path = ::testing::TempDir() + "/repeated.json";
  std::FILE* out = std::fopen(path.c_str(), "wb");
  std::fwrite(trace.data(), 1, trace.size(), out);
  std::fclose(out);
  Ranking ranking = rank(path, false);
  ASSERT_EQ(ranking.kernels.size(), 1u);
  EXPECT_EQ(ranking.kernels[0].count, count);
  EXPECT_NEAR(ranking.kernels[0].total_us, count * kernel["dur"].get<double>(), 1e-6 * count);
}

void expect_invalid(const std::string& bytes, const std::string& what) {
  try {
    read_bytes(bytes);
    ADD_FAILURE() << "no error for: " << bytes;
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
    EXPECT_NE(error.message().find(what), std::string::npos) << error.what();
  }
}

TEST(ChromeTrace, BadInputNamesTheProblemAndOffset) {
  expect_invalid("", "empty");
  expect_invalid("NVR\0", "not a Chrome trace");
  expect_invalid(R"({"traceEvents": [{"ph": "X", "name": "k", "ts": 1)", "truncated");
  expect_invalid(R"({"traceEvents": [{"ph": "X", "name": "k", "ts": ]})", "malformed trace event");
  expect_invalid(R"({"traceEvents": [1, 2]})", "expected an event object");
  expect_invalid(R"({"other": 1})", "no \"traceEvents\"");
  expect_invalid(R"({"traceEvents": []} trailing)", "after the end");
}

TEST(ChromeTrace, TruncatedGzipIsAnError) {
  std::string compressed;
  {
    std::FILE* in = std::fopen(data_path("h200/trace_eager.json.gz").c_str(), "rb");
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, in)) > 0) compressed.append(buffer, n);
    std::fclose(in);
  }
  std::string path = ::testing::TempDir() + "/truncated.json.gz";
  std::FILE* out = std::fopen(path.c_str(), "wb");
  std::fwrite(compressed.data(), 1, compressed.size() / 2, out);
  std::fclose(out);
  CountingSink sink;
  try {
    importers::read_chrome_trace(path, sink);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_NE(std::string(error.what()).find("truncated"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kprof::timeline
