// Import speed of each reader on the real captures in data/h200 (Google Benchmark).
//   build/bench/bench_importers --benchmark_min_time=1
// For kprof against ncu's own readers on large reports, see bench/compare-readers.sh (needs ncu).
#include <benchmark/benchmark.h>

#include <string>

#include "analysis/verdict.h"
#include "common/file_bytes.h"
#include "importers/importer.h"

namespace {

void import_file(benchmark::State& state, const std::string& relative) {
  std::string path = std::string(KPROF_DATA_DIR) + "/" + relative;
  kprof::FileBytes file = kprof::read_input_file(path);  // decompressed once, outside the loop
  size_t metrics = 0;
  for (auto _ : state) {
    kprof::model::Report report = kprof::importers::import_bytes(path, file.bytes);
    metrics = 0;
    for (const auto& kernel : report.kernels) metrics += kernel.metrics.size();
    benchmark::DoNotOptimize(report);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * file.bytes.size()));
  state.counters["metrics"] = static_cast<double>(metrics);
  state.counters["metrics/s"] =
      benchmark::Counter(static_cast<double>(metrics) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void decompress_and_import(benchmark::State& state, const std::string& relative) {
  std::string path = std::string(KPROF_DATA_DIR) + "/" + relative;
  for (auto _ : state) {
    benchmark::DoNotOptimize(kprof::importers::import_report(path));
  }
}

// Verdicts for 1,008 kernels: big_full's 24 (--set full) repeated 42 times, to compare with the
// time to read them (import_file/ncu_rep_big_full_28MB x 42).
void analyze_1000_kernels(benchmark::State& state) {
  std::string path = std::string(KPROF_DATA_DIR) + "/h200/big_full.ncu-rep.zst";
  kprof::model::Report report = kprof::importers::import_report(path);
  std::vector<kprof::model::Kernel> base = report.kernels;
  report.kernels.clear();
  for (int copy = 0; copy < 42; ++copy) {
    report.kernels.insert(report.kernels.end(), base.begin(), base.end());
  }
  auto gpus = kprof::hardware::load_gpu_database();
  auto stages = kprof::analysis::load_stage_table();
  auto expectations = kprof::analysis::load_expectations();
  kprof::analysis::AnalysisConfig config{{}, &stages, &expectations, &gpus};
  for (auto _ : state) {
    for (const auto& kernel : report.kernels) {
      benchmark::DoNotOptimize(kprof::analysis::analyze_kernel(report, kernel, config));
    }
  }
  state.counters["kernels"] = static_cast<double>(report.kernels.size());
}

}  // namespace

BENCHMARK(analyze_1000_kernels)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(import_file, ncu_rep_big_full_28MB, std::string("h200/big_full.ncu-rep.zst"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(import_file, csv_raw_big_full, std::string("h200/big_full_raw.csv.zst"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(import_file, csv_details_big_full, std::string("h200/big_full_details.csv.zst"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decompress_and_import, ncu_rep_zst_big_full,
                  std::string("h200/big_full.ncu-rep.zst"))
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
