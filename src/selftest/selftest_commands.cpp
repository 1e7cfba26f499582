#include "selftest/selftest_commands.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "analysis/analysis_tables.h"
#include "capture/ncu_diagnosis.h"
#include "capture/ncu_locator.h"
#include "common/child_process.h"
#include "common/error.h"
#include "common/file_bytes.h"
#include "importers/importer.h"
#include "selftest/calibration_json.h"
#include "selftest/ptx_table.h"

namespace kprof::selftest {
namespace {

namespace fs = std::filesystem;

// The capture's folder: the user's --keep folder (made new here), or a temporary one removed
// when the selftest ends, whichever way it ends.
class WorkFolder {
 public:
  explicit WorkFolder(const std::string& keep) : keep_(!keep.empty()) {
    if (keep_) {
      std::error_code error;
      if (fs::symlink_status(keep, error).type() != fs::file_type::not_found) {
        throw std::invalid_argument(
            fmt::format("--keep {}: it already exists; give a folder that does not", keep));
      }
      if (!fs::create_directory(keep, error)) {
        throw InputError(ExitCode::kOutputUnwritable, keep, InputPosition::none(),
                         "cannot create the folder: " + error.message());
      }
      path_ = keep;
    } else {
      const char* tmp = std::getenv("TMPDIR");
      path_ = create_unique_directory(std::string(tmp && *tmp ? tmp : "/tmp") + "/kprof-selftest-");
    }
  }
  ~WorkFolder() {
    if (keep_) return;
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  WorkFolder(const WorkFolder&) = delete;
  WorkFolder& operator=(const WorkFolder&) = delete;
  const std::string& path() const { return path_; }
  bool kept() const { return keep_; }

 private:
  bool keep_;
  std::string path_;
};

std::string self_executable() {
  std::error_code error;
  fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) throw std::runtime_error("cannot find kprof's own binary: " + error.message());
  return self.string();
}

}  // namespace

bool SelftestOutcome::passed() const {
  if (ncu_failed || interrupted || judgements.empty()) return false;
  return std::all_of(judgements.begin(), judgements.end(),
                     [](const KernelJudgement& j) { return j.passed(); });
}

std::vector<std::string> selftest_ncu_argv(const std::string& ncu, const std::string& clock_control,
                                           const std::string& report_base,
                                           const std::string& self_exe,
                                           const std::string& driver_library, int gpu) {
  std::vector<std::string> argv = {ncu, "--config-file", "off", "--set", "full"};
  if (!clock_control.empty()) {
    argv.push_back("--clock-control");
    argv.push_back(clock_control);
  }
  std::vector<std::string> rest = {"--target-processes",
                                   "application-only",
                                   "-k",
                                   "regex:^k_",
                                   "-o",
                                   report_base,
                                   self_exe,
                                   kLauncherCommand,
                                   "--driver",
                                   driver_library,
                                   "--gpu",
                                   std::to_string(gpu)};
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

std::vector<KernelJudgement> judge_capture(const std::string& report_path) {
  model::Report report = importers::import_report(report_path);
  analysis::AnalysisTables tables = analysis::load_analysis_tables();
  return judge_report(load_selftest_table(), report, tables.config());
}

SelftestOutcome run_selftest(const SelftestRequest& request, const Progress& progress) {
  SelftestOutcome outcome;
  if (!request.judge_report.empty()) {
    outcome.report_path = request.judge_report;
    outcome.judgements = judge_capture(request.judge_report);
    return outcome;
  }
  if (!request.clock_control.empty() && request.clock_control != "base" &&
      request.clock_control != "none") {
    throw std::invalid_argument(fmt::format(
        "--clock-control {}: ncu takes base (lock to base clocks) or none", request.clock_control));
  }
  if (request.gpu < 0) throw std::invalid_argument("--gpu must be 0 or more");
  capture::NcuLocation ncu = capture::locate_ncu(request.ncu);
  if (ncu.path.empty()) {
    throw NcuMissing(fmt::format(
        "ncu not found ({}); install Nsight Compute, put ncu on PATH, or pass --ncu PATH — "
        "`kprof doctor` checks the whole setup",
        ncu.searched));
  }
  // The GPU is asked here, before ncu runs, so that no driver or no device is one clear line.
  auto driver = gpu::CudaDriver::load(request.driver_library);
  gpu::DeviceInfo device = gpu::query_device(*driver, request.gpu);
  if (ptx_candidates(device.cc_major, device.cc_minor).empty()) {
    throw gpu::GpuUnavailable(fmt::format(
        "{} (compute capability {}) is older than sm_80, the oldest architecture the selftest "
        "kernels are built for",
        device.name, device.compute_capability()));
  }
  outcome.device = device;
  outcome.ncu_path = ncu.path;
  outcome.ncu_version = capture::ncu_version_line(ncu.path);
  outcome.clock_control =
      request.clock_control.empty() ? "base (ncu's default)" : request.clock_control;

  WorkFolder folder(request.keep_dir);
  std::string report_base = folder.path() + "/selftest";
  std::string self = request.self_exe.empty() ? self_executable() : request.self_exe;
  outcome.ncu_argv = selftest_ncu_argv(ncu.path, request.clock_control, report_base, self,
                                       request.driver_library, request.gpu);
  std::size_t total = load_selftest_table().selftest_kernels().size();
  progress(fmt::format("selftest: {} kernels on {} (GPU {}, compute capability {}) under {} ({})",
                       total, device.name, request.gpu, device.compute_capability(), ncu.path,
                       outcome.ncu_version.empty() ? "version unknown" : outcome.ncu_version));
  progress(fmt::format("ncu's full section set, clocks {}: about a minute", outcome.clock_control));

  static const RE2 kProfiling(R"re(^==PROF== Profiling "([^"]+)")re");
  std::size_t profiled = 0;
  kprof::ChildRequest child;
  child.argv = outcome.ncu_argv;
  child.on_line = [&](const std::string& line, bool) {
    std::string kernel;
    if (RE2::PartialMatch(line, kProfiling, &kernel)) {
      progress(fmt::format("profiling {} ({} of {})", kernel, ++profiled, total));
    } else if (line.rfind("==ERROR==", 0) == 0) {
      progress(line);
    }
    return false;
  };
  kprof::ChildResult ran = kprof::run_child(child);
  if (folder.kept()) write_file_atomically(folder.path() + "/ncu.log", ran.combined);
  outcome.ncu_exit = ran.exit_code;
  outcome.interrupted = ran.interrupted;
  std::string report_path = report_base + ".ncu-rep";
  capture::NcuRun run{outcome.ncu_argv, ran.started ? ran.combined : ran.start_error,
                      ran.started ? ran.exit_code : 127, ran.interrupted};
  for (const capture::Diagnosis& d : capture::diagnose(run)) {
    if (d.failure) outcome.ncu_diagnoses.push_back(d.what + " — " + d.next);
  }
  std::error_code error;
  if (!ran.started || ran.interrupted || ran.exit_code != 0 || !outcome.ncu_diagnoses.empty() ||
      !fs::is_regular_file(report_path, error)) {
    outcome.ncu_failed = !ran.interrupted;
    if (outcome.ncu_diagnoses.empty()) {
      outcome.ncu_diagnoses.push_back(
          ran.started ? fmt::format("ncu exited {} without writing {}", ran.exit_code, report_path)
                      : "ncu could not be started: " + ran.start_error);
    }
    return outcome;
  }
  outcome.judgements = judge_capture(report_path);
  if (folder.kept()) outcome.report_path = report_path;
  return outcome;
}

std::vector<store::MeasuredCeilingRow> measured_ceiling_rows(const Calibration& c,
                                                             const std::string& source) {
  std::vector<store::MeasuredCeilingRow> rows;
  for (const Ceiling& x : c.ceilings) {
    store::MeasuredCeilingRow row;
    row.gpu = c.device.name;
    row.cc = c.device.cc_major ? c.device.compute_capability() : "";
    row.driver_cuda = c.device.driver_version ? c.device.driver_cuda_version() : "";
    row.driver_nvidia = c.nvidia_driver;
    row.measured_at = c.date;
    row.kprof_version = c.kprof_version;
    row.source = source;
    row.ceiling = x.name;
    row.figure = x.figure;
    row.unit = x.unit;
    row.method = x.method;
    row.kernel = x.kernel;
    row.repeats = x.repeats;
    if (x.best_seconds > 0) row.best_seconds = x.best_seconds;
    if (x.median_seconds > 0) row.median_seconds = x.median_seconds;
    rows.push_back(std::move(row));
  }
  return rows;
}

CalibrateOutcome run_calibrate(const CalibrateRequest& request, const Progress& progress) {
  if (request.from.empty() && request.repeats < 1) {
    throw std::invalid_argument("--repeats must be at least 1");
  }
  std::optional<store::FindingsDb> db;
  if (!request.db.empty())
    db.emplace(request.db, store::FindingsDb::Access::kWrite, request.db_schema);
  CalibrateOutcome outcome;
  if (request.from.empty()) {
    RunOptions options;
    options.driver_library = request.driver_library;
    options.device = request.gpu;
    options.cublaslt = request.cublaslt;
    // Asked first, so that no driver or no device is one line before anything is said.
    gpu::DeviceInfo device =
        gpu::query_device(*gpu::CudaDriver::load(request.driver_library), request.gpu);
    progress(fmt::format(
        "calibrate: {} (GPU {}): each ceiling the best of {} runs after a warm-up, clocks as found",
        device.name, request.gpu, request.repeats));
    outcome.calibration = calibrate(request.repeats, options);
    outcome.source = "measured";
  } else {
    outcome.calibration = read_calibration_file(request.from);
    outcome.source = request.from;
  }
  if (!request.output.empty()) {
    write_file_atomically(request.output, calibration_to_json(outcome.calibration).dump(1) + "\n");
    outcome.written = request.output;
  }
  if (db) {
    std::string source = request.from.empty()
                             ? (request.output.empty() ? std::string("kprof calibrate")
                                                       : "kprof calibrate -o " + request.output)
                             : request.from;
    outcome.stored =
        db->store_measured_ceilings(measured_ceiling_rows(outcome.calibration, source));
  }
  return outcome;
}

}  // namespace kprof::selftest
