// Import speed of each reader on the real captures in data/h200 (Google Benchmark).
//   build/bench/bench_importers --benchmark_min_time=1
// For kprof against ncu's own readers on large reports, see bench/compare-readers.sh (needs ncu).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "analysis/analysis_tables.h"
#include "analysis/verdict.h"
#include "common/file_bytes.h"
#include "importers/importer.h"
#include "store/findings_db.h"

namespace {

// The process's peak resident set so far (getrusage), in MB: reported next to each timing.
double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// state.range(0): decoding threads (0: one per hardware thread); state.range(1): 1 to read
// per-instance values (inspect), 0 to skip them (analyze, diff, db).
void import_file(benchmark::State& state, const std::string& relative) {
  std::string path = std::string(KPROF_DATA_DIR) + "/" + relative;
  kprof::FileBytes file = kprof::read_input_file(path);  // decompressed once, outside the loop
  kprof::importers::ImportOptions options;
  options.threads = static_cast<unsigned>(state.range(0));
  options.instances = state.range(1) != 0;
  size_t metrics = 0;
  for (auto _ : state) {
    kprof::model::Report report = kprof::importers::import_bytes(path, file.bytes, options);
    metrics = 0;
    for (const auto& kernel : report.kernels) metrics += kernel.metrics.size();
    benchmark::DoNotOptimize(report);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * file.bytes.size()));
  state.counters["metrics"] = static_cast<double>(metrics);
  state.counters["metrics/s"] =
      benchmark::Counter(static_cast<double>(metrics) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["peak_rss_MB"] = peak_rss_mb();
}

void decompress_and_import(benchmark::State& state, const std::string& relative) {
  std::string path = std::string(KPROF_DATA_DIR) + "/" + relative;
  for (auto _ : state) {
    benchmark::DoNotOptimize(kprof::importers::import_report(path));
  }
}

// 1,000 reports read and imported into a findings database (verdicts computed, one
// transaction per batch of 50 as `kprof db import` does per command): big_basic (24 kernels,
// --set basic, 1.6 MB), the same bytes each time, read as analysis reads them.
void import_1000_reports_into_db(benchmark::State& state) {
  std::string path = std::string(KPROF_DATA_DIR) + "/h200/big_basic.ncu-rep.zst";
  kprof::FileBytes file = kprof::read_input_file(path);
  kprof::importers::ImportOptions options;
  options.instances = false;
  auto tables = kprof::analysis::load_analysis_tables();
  auto config = tables.config();
  std::string db_path = std::filesystem::temp_directory_path() /
                        ("kprof-bench-" + std::to_string(getpid()) + ".sqlite");
  constexpr int kReports = 1000, kBatch = 50;
  for (auto _ : state) {
    std::filesystem::remove(db_path);
    kprof::store::FindingsDb db(db_path, kprof::store::FindingsDb::Access::kWrite);
    for (int done = 0; done < kReports; done += kBatch) {
      std::vector<kprof::model::Report> batch;
      for (int i = 0; i < kBatch; ++i) {
        batch.push_back(kprof::importers::import_bytes(path, file.bytes, options));
      }
      db.import_reports(batch, {}, config);
    }
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(db_path + suffix);
  state.counters["reports/s"] =
      benchmark::Counter(static_cast<double>(kReports) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["peak_rss_MB"] = peak_rss_mb();
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
// Args: {threads, instances}. Real time: decoding runs on several threads.
BENCHMARK_CAPTURE(import_file, ncu_rep_big_full_28MB, std::string("h200/big_full.ncu-rep.zst"))
    ->ArgNames({"threads", "instances"})
    ->Args({1, 1})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({0, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(import_file, ncu_rep_big_basic_1_6MB, std::string("h200/big_basic.ncu-rep.zst"))
    ->ArgNames({"threads", "instances"})
    ->Args({0, 1})
    ->Args({0, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(import_file, csv_raw_big_full, std::string("h200/big_full_raw.csv.zst"))
    ->Args({0, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(import_file, csv_details_big_full, std::string("h200/big_full_details.csv.zst"))
    ->Args({0, 1})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(import_1000_reports_into_db)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decompress_and_import, ncu_rep_zst_big_full,
                  std::string("h200/big_full.ncu-rep.zst"))
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
