// What `kprof selftest` and `kprof calibrate` do, end to end, so that the CLI only parses options
// and prints: selftest runs kprof's own selftest kernels (the hidden `kprof selftest-kernels`)
// under ncu, reads the capture and judges each kernel against data/selftest_expectations.json;
// calibrate measures this GPU's ceilings (or reads a calibration file), writes the
// kprof.calibration/1 file and stores the figures in the findings database.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/cuda_driver.h"
#include "selftest/judge.h"
#include "selftest/runner.h"
#include "store/findings_db.h"

namespace kprof::selftest {

// Lines for the user while a long step runs ("profiling k_fp32_fma (3 of 11)").
using Progress = std::function<void(const std::string&)>;

// ncu cannot be found: "not ready", as for `kprof capture`.
class NcuMissing : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The hidden subcommand ncu runs: `kprof selftest-kernels`.
inline constexpr const char* kLauncherCommand = "selftest-kernels";

struct SelftestRequest {
  std::string ncu;            // --ncu; empty: $KPROF_NCU, PATH, /usr/local/cuda/bin/ncu
  std::string clock_control;  // --clock-control; empty: ncu's default (base: clocks locked)
  std::string keep_dir;       // a new folder for the capture and ncu's log; empty: removed
  int gpu = 0;
  std::string driver_library = gpu::kDefaultDriverLibrary;
  std::string self_exe;      // the kprof ncu runs; empty: /proc/self/exe
  std::string judge_report;  // judge this capture instead of running anything
};

struct SelftestOutcome {
  std::optional<gpu::DeviceInfo> device;  // when the kernels ran here
  std::string ncu_path, ncu_version;
  std::vector<std::string> ncu_argv;
  std::string clock_control;  // as ncu ran: "base (ncu's default)" or what was asked
  std::string report_path;    // the judged capture (kept or given), empty when removed
  // The ncu run failed: its diagnoses (what and what next) and exit status; nothing judged.
  bool ncu_failed = false;
  bool interrupted = false;
  int ncu_exit = 0;
  std::vector<std::string> ncu_diagnoses;
  std::vector<KernelJudgement> judgements;

  bool passed() const;  // ran, and every selftest kernel was in the capture as expected
};

// ncu's command line for the selftest: the full section set (the judge needs the breakdowns,
// occupancy limits and tensor counters), only kprof's k_ kernels, only the launcher process.
// Pure.
std::vector<std::string> selftest_ncu_argv(const std::string& ncu, const std::string& clock_control,
                                           const std::string& report_base,
                                           const std::string& self_exe,
                                           const std::string& driver_library, int gpu);

// Checks the request (a --keep folder that exists, a --clock-control value ncu does not take:
// std::invalid_argument), finds ncu (NcuMissing), the GPU (gpu::GpuUnavailable), runs the
// kernels under ncu and judges the capture. With judge_report, only judges that file.
SelftestOutcome run_selftest(const SelftestRequest& request, const Progress& progress);

// The judgements of a capture of the selftest kernels (InputError for an unreadable report).
std::vector<KernelJudgement> judge_capture(const std::string& report_path);

struct CalibrateRequest {
  int repeats = 20;
  std::string output;               // -o: write the kprof.calibration/1 file here
  std::string db;                   // --db: store the figures in this findings database
  std::string db_schema = "kprof";  // --db-schema: PostgreSQL's schema of kprof's tables
  std::string from;  // --from: a calibration file instead of measuring (no GPU needed)
  int gpu = 0;
  std::string driver_library = gpu::kDefaultDriverLibrary;
  std::string cublaslt;  // --cublaslt: "" the usual places, "none" kprof's kernels only, or a path
};

struct CalibrateOutcome {
  Calibration calibration;
  std::string source;  // "measured" or the --from file
  std::string written;
  std::size_t stored = 0;  // rows written to the database
};

// Opens the database first (a file that is not kprof's fails before minutes of measuring),
// measures or reads, writes -o, stores. Throws std::invalid_argument (repeats < 1),
// gpu::GpuUnavailable, gpu::DriverError, InputError (files).
CalibrateOutcome run_calibrate(const CalibrateRequest& request, const Progress& progress);

// A calibration's ceilings as database rows (source: the file, or "kprof calibrate").
std::vector<store::MeasuredCeilingRow> measured_ceiling_rows(const Calibration& calibration,
                                                             const std::string& source);

}  // namespace kprof::selftest
