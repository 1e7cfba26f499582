// kprof selftest / kprof calibrate: parse, call selftest::run_selftest / run_calibrate, print.
// `kprof selftest-kernels` (hidden) is the program ncu profiles for the selftest: kprof itself,
// so that nothing beside the kprof binary has to be installed or found.
#include <cstdio>
#include <memory>

#include "cli/capture_support.h"
#include "cli/command.h"
#include "hardware/gpu_specs.h"
#include "render/report_json.h"
#include "selftest/calibration_json.h"
#include "selftest/runner.h"
#include "selftest/selftest_commands.h"
#include "selftest/selftest_render.h"

namespace kprof::cli {
namespace {

struct SelftestOptions {
  selftest::SelftestRequest request;
  bool json = false;
};

struct CalibrateOptions {
  selftest::CalibrateRequest request;
  bool json = false;
};

// The library's reasons for "no GPU here" become the CLI's "not ready" (exit 9).
template <typename Body>
ExitCode not_ready_on_missing_gpu(Body body) {
  try {
    return body();
  } catch (const gpu::GpuUnavailable& error) {
    throw NotReady(error.what());
  } catch (const selftest::NcuMissing& error) {
    throw NotReady(error.what());
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

ExitCode run_selftest(const SelftestOptions& options, Output& output) {
  return not_ready_on_missing_gpu([&] {
    selftest::SelftestOutcome outcome = selftest::run_selftest(options.request, note);
    if (options.json) {
      output.stdout_text = render::json_text(selftest::selftest_json(outcome, output.argv));
    } else if (outcome.ncu_failed || outcome.interrupted) {
      output.stderr_text = selftest::selftest_text(outcome);
    } else {
      output.stdout_text = selftest::selftest_text(outcome);
    }
    if (outcome.interrupted) return ExitCode::kIncomplete;
    if (outcome.ncu_failed) return ExitCode::kCaptureFailed;
    return outcome.passed() ? ExitCode::kOk : ExitCode::kRegression;
  });
}

ExitCode run_launcher(const selftest::SelftestRequest& request, Output& output) {
  return not_ready_on_missing_gpu([&] {
    selftest::RunOptions options;
    options.driver_library = request.driver_library;
    options.device = request.gpu;
    selftest::RunResult result = selftest::run_kernels({}, 1, options);
    output.stdout_text = selftest::launches_text(result);
    output.stderr_text = selftest::launch_notes_text(result);
    return ExitCode::kOk;
  });
}

ExitCode run_calibrate(const CalibrateOptions& options, Output& output) {
  return not_ready_on_missing_gpu([&] {
    selftest::CalibrateOutcome outcome = selftest::run_calibrate(options.request, note);
    if (options.json) {
      output.stdout_text = render::json_text(selftest::calibration_to_json(outcome.calibration));
    } else {
      hardware::GpuDatabase gpus = hardware::load_gpu_database();
      output.stdout_text = selftest::calibration_text(
          outcome, gpus.find_for_device(outcome.calibration.device.name));
    }
    return ExitCode::kOk;
  });
}

void add_gpu_options(CLI::App* command, selftest::SelftestRequest& request) {
  command->add_option("--gpu", request.gpu, "The GPU's ordinal, as CUDA numbers them (default 0)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--driver", request.driver_library,
                      "The CUDA driver library to load (default libcuda.so.1, found as the "
                      "dynamic loader finds it)");
}

}  // namespace

void define_selftest(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<SelftestOptions>();
  CLI::App* command = parent.add_subcommand(
      "selftest", "Check kprof's verdicts on this GPU: known-bottleneck kernels under ncu");
  command->footer(
      "Runs kprof's built-in kernels with known bottlenecks (DRAM copy, L2 re-read, FP32 and\n"
      "FP64 FMA loops, a BF16 mma.sync loop, a pointer chase, too few blocks, tiny blocks,\n"
      "shared-memory and register hogs, hot atomics) once each under ncu (--set full), analyses\n"
      "the capture as `kprof analyze` does and prints, per kernel, the verdict, the binding unit\n"
      "and the occupancy limiter: what was measured, or expected / measured (!) where they\n"
      "differ. A pass means kprof's thresholds and unit mapping give the right answer on this\n"
      "GPU, driver and ncu; a mismatch says where not to trust a verdict.\n\n"
      "The kernels ship inside kprof as PTX (sm_80, sm_89, sm_90, sm_100, sm_120; the driver "
      "JIT-compiles the\n"
      "newest one the GPU takes) and libcuda is loaded at run time: no compiler or CUDA toolkit\n"
      "is needed, only the NVIDIA driver and ncu. ncu runs kprof itself (the hidden command\n"
      "`kprof selftest-kernels`) and profiles only its k_* kernels. Clocks: ncu's default\n"
      "(locked to base) unless --clock-control none; percentages of peak are of the peak at the\n"
      "clock ncu ran at, so verdicts hold either way. Progress goes to stderr; the run takes\n"
      "about a minute.\n\n"
      "Exit: 0 every kernel as expected, 6 a mismatch or a kernel missing from the capture,\n"
      "7 the ncu run failed (diagnoses on stderr), 8 interrupted, 9 not ready (no ncu, no NVIDIA\n"
      "driver, no GPU, a GPU older than sm_80), 2 usage, 3/4 --judge report unreadable/invalid,\n"
      "11 --keep folder not writable.\n\n"
      "Examples:\n"
      "  kprof selftest\n"
      "  kprof selftest --gpu 1 --keep selftest-capture    # keep the .ncu-rep and ncu's log\n"
      "  kprof selftest --json > selftest.json\n"
      "  kprof selftest --judge selftest-capture/selftest.ncu-rep   # judge a capture again");
  command->add_option("--ncu", options->request.ncu,
                      "The ncu to run (default: $KPROF_NCU, PATH, /usr/local/cuda/bin/ncu)");
  command->add_option("--clock-control", options->request.clock_control,
                      "Passed to ncu: base (lock to base clocks, ncu's default) or none");
  command->add_option("--keep", options->request.keep_dir,
                      "Keep the capture (selftest.ncu-rep) and ncu's log in this new folder");
  command->add_option("--judge", options->request.judge_report,
                      "Judge this capture of the selftest kernels instead of running them (no "
                      "GPU needed)");
  add_gpu_options(command, options->request);
  command->add_flag("--json", options->json, "Print JSON (kprof.selftest/1) instead");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_selftest(*options, output); };
  });

  auto launcher = std::make_shared<selftest::SelftestRequest>();
  CLI::App* kernels = parent.add_subcommand(
      selftest::kLauncherCommand,
      "Launch each selftest kernel once (what `kprof selftest` runs under ncu)");
  kernels->group("");  // internal: not listed in --help
  add_gpu_options(kernels, *launcher);
  kernels->callback([&runner, launcher] {
    runner = [launcher](Output& output) { return run_launcher(*launcher, output); };
  });
}

void define_calibrate(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* command = parent.add_subcommand(
      "calibrate", "Measure this GPU's ceilings (bandwidths, FLOP rates, launch latency)");
  command->footer(
      "Measures what this GPU reaches, as opposed to its datasheet: DRAM bandwidth (a copy: read\n"
      "+ write bytes), L2 bandwidth, FP32 and FP64 FMA rates, BF16, FP16 and FP8 tensor rates,\n"
      "and launch latency (back to back, and to completion). A ceiling is what the best code\n"
      "reaches, so each is the fastest of the codes measured: the DRAM copy of kprof's kernel\n"
      "and of the driver (cuMemcpyDtoD, the copy a framework's tensor copy runs); the tensor\n"
      "rates of kprof's mma.sync kernels and of cuBLASLt's large GEMMs (4096-16384 squared, its\n"
      "first 8 heuristics each), where a cuBLASLt is found (--cublaslt PATH, $KPROF_CUBLASLT,\n"
      "libcublasLt.so.13/.12, /usr/local/cuda/lib64). The file names the code that reached\n"
      "each figure and lists the others. Each figure is the best of --repeats runs after a "
      "warm-up,\n"
      "with the clocks as found: kprof neither locks nor resets them, so the figures are what\n"
      "your workloads meet at the clocks the GPU runs them at (close other work on the GPU\n"
      "first). No ncu is needed.\n\n"
      "The table compares each ceiling with kprof's datasheet figure. -o writes the\n"
      "kprof.calibration/1 file (docs/kprof.calibration.schema.json), which `kprof analyze\n"
      "--gpus FILE` takes to report, per kernel, % of the measured ceiling beside % of peak;\n"
      "--db stores the figures in the findings database with the GPU, driver and date\n"
      "(`kprof db facts` lists them). --from reads a calibration file instead of measuring (no\n"
      "GPU needed), to store or show one recorded elsewhere.\n\n"
      "Exit: 0 done, 2 usage, 3/4 --from or --db file unreadable/invalid, 9 not ready (no\n"
      "NVIDIA driver, no GPU, a GPU older than sm_80), 11 -o or --db not writable, 1 a driver\n"
      "call failed.\n\n"
      "Examples:\n"
      "  kprof calibrate -o h200_calibration.json\n"
      "  kprof calibrate --repeats 50 -o h200_calibration.json --db findings.db\n"
      "  kprof analyze --gpus h200_calibration.json run.ncu-rep\n"
      "  kprof calibrate --from h200_calibration.json --db findings.db   # store a recorded one");
  command
      ->add_option("--repeats", options->request.repeats,
                   "Runs per measurement; the best counts (default 20)")
      ->check(CLI::PositiveNumber);
  command->add_option("-o,--output", options->request.output,
                      "Write the calibration file (kprof.calibration/1 JSON) here");
  command->add_option("--db", options->request.db,
                      "Store the figures in this findings database (created when missing)");
  command
      ->add_option("--db-schema", options->request.db_schema,
                   "--db on PostgreSQL: the schema holding kprof's tables")
      ->capture_default_str();
  command->add_option("--from", options->request.from,
                      "Read this calibration file instead of measuring");
  command->add_option("--gpu", options->request.gpu, "The GPU's ordinal (default 0)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--driver", options->request.driver_library,
                      "The CUDA driver library to load (default libcuda.so.1)");
  command->add_option("--cublaslt", options->request.cublaslt,
                      "The cuBLASLt library to time the vendor's GEMMs with, or none for kprof's "
                      "own kernels only (default: found on the usual paths)");
  command->add_flag("--json", options->json,
                    "Print the calibration (kprof.calibration/1 JSON) instead of the table");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_calibrate(*options, output); };
  });
}

}  // namespace kprof::cli
