#include "cli/cli.h"

#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "common/utf8.h"

namespace kprof::cli {
namespace {

// Every subcommand, in the order `kprof --help` lists them.
constexpr DefineCommand kCommands[] = {
    define_analyze, define_capture, define_trace,  define_doctor,   define_k8s,
    define_inspect, define_rank,    define_budget, define_report,   define_diff,
    define_db,      define_explain, define_gpus,   define_selftest, define_calibrate,
};

constexpr const char* kDescription =
    "kprof: hardware-counter answers for GPU inference kernels, from Nsight Compute captures.\n"
    "Reads .ncu-rep reports natively (no ncu needed) and ncu's CSV exports.\n\n"
    "Exit codes: 0 ok, 1 internal error, 2 usage error, 3 input unreadable,\n"
    "            4 input invalid (not a known format, truncated, corrupted),\n"
    "            5 nothing selected (a --kernel filter matched no kernel, an unknown GPU name,\n"
    "            diff: no kernel in common, report --trace: no captured kernel in the trace),\n"
    "            6 kprof diff found a regression, or selftest a verdict other than expected,\n"
    "            7 the ncu run failed or profiled nothing (capture, explain, k8s, selftest),\n"
    "            or the traced program failed or wrote no trace (trace), 8 capture, trace or\n"
    "            selftest timed out or was interrupted (bundle marked incomplete), 9 not\n"
    "            ready: ncu, kubectl, the tracer library or libcupti missing, or unable to\n"
    "            profile (capture, trace, doctor, k8s), no NVIDIA driver or GPU (selftest,\n"
    "            calibrate), 10 a Kubernetes call failed or something kprof created is left "
    "(k8s),\n"
    "            11 output could not be written (disk full, permission denied, read-only\n"
    "            file system).";

int print_and_exit(const Output& output, ExitCode code) {
  std::fwrite(output.stdout_text.data(), 1, output.stdout_text.size(), stdout);
  std::fflush(stdout);
  std::fwrite(output.stderr_text.data(), 1, output.stderr_text.size(), stderr);
  return static_cast<int>(code);
}

int fail(ExitCode code, const std::string& message) {
  // Messages quote names and values from inputs: shown literally (line breaks kept, as some
  // messages list several lines on purpose; the sources escape the names in those lists).
  std::fprintf(stderr, "kprof: %s\n", escape_for_terminal(message, true).c_str());
  return static_cast<int>(code);
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app(kDescription, "kprof");
  app.set_version_flag("--version", std::string("kprof ") + KPROF_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);
  Runner runner;
  for (DefineCommand define : kCommands) define(app, runner);

  Output output;
  output.argv.assign(argv, argv + argc);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::printf("kprof %s\n", KPROF_VERSION);
    return 0;
  } catch (const CLI::ParseError& error) {
    // CLI11 reports help requested on a subcommand as a CallForHelp too; anything else is a
    // usage error with a pointer to --help.
    return fail(ExitCode::kUsage,
                fmt::format("{}\nRun 'kprof --help' or 'kprof COMMAND --help'.", error.what()));
  }
  if (!runner) return fail(ExitCode::kUsage, "no command given; run 'kprof --help'");
  try {
    ExitCode code = runner(output);
    return print_and_exit(output, code);
  } catch (const InputError& error) {
    return fail(error.code(), error.what());
  } catch (const UsageError& error) {
    return fail(ExitCode::kUsage, error.what());
  } catch (const K8sFailed& error) {
    return fail(ExitCode::kK8sFailed, error.what());
  } catch (const NotReady& error) {
    return fail(ExitCode::kNotReady, error.what());
  } catch (const NothingSelected& error) {
    return fail(ExitCode::kNothingSelected, error.what());
  } catch (const std::bad_alloc&) {
    return fail(ExitCode::kInternal, "out of memory");
  } catch (const std::exception& error) {
    return fail(ExitCode::kInternal,
                fmt::format("internal error (please report it): {}", error.what()));
  }
}

}  // namespace kprof::cli
