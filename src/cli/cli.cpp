#include "cli/cli.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string_view>
#include <vector>

#include "cli/command.h"
#include "common/build_info.h"
#include "common/utf8.h"

namespace kprof::cli {
namespace {

// Every subcommand, in the order `kprof --help` lists them.
constexpr DefineCommand kCommands[] = {
    define_analyze,  define_capture,   define_plan,   define_trace,   define_doctor,
    define_k8s,      define_inspect,   define_source, define_rank,    define_budget,
    define_report,   define_diff,      define_db,     define_explain, define_gpus,
    define_selftest, define_calibrate, define_load,   define_mcp,     define_completion,
};

// Installed as kubectl-kprof too, kprof is a kubectl plugin: kubectl runs `kubectl kprof VERB
// ARGS…` as `kubectl-kprof VERB ARGS…` (argv[0] its path), the verbs being those of `kprof k8s`.
constexpr std::string_view kKubectlPluginName = "kubectl-kprof";

bool invoked_as_kubectl_plugin(const char* argv0) {
  return argv0 != nullptr && std::filesystem::path(argv0).filename() == kKubectlPluginName;
}

// `kprof --version`: the version, the commit it was built from and the build type.
std::string version_text() {
  return fmt::format("kprof {} ({}, {})", KPROF_VERSION, build_commit(), build_type());
}

// Help printed for the plugin names its commands the way the user types them.
std::string plugin_help(std::string text) {
  for (size_t at = 0; (at = text.find("kprof k8s", at)) != std::string::npos;) {
    text.replace(at, 9, "kubectl kprof");
    at += 13;
  }
  return text;
}

constexpr const char* kDescription =
    "kprof: hardware-counter answers for GPU inference kernels, from Nsight Compute captures.\n"
    "Reads .ncu-rep reports natively (no ncu needed) and ncu's CSV exports.\n\n"
    "Exit codes: 0 ok, 1 internal error, 2 usage error, 3 input unreadable,\n"
    "            4 input invalid (not a known format, truncated, corrupted; budget over\n"
    "            several ranks: a trace with a different number of steps than the first),\n"
    "            5 nothing selected (a --kernel filter matched no kernel, an unknown GPU name,\n"
    "            diff: no kernel in common, report --trace: no captured kernel in the trace),\n"
    "            6 kprof diff found a regression, or selftest a verdict other than expected,\n"
    "            7 the ncu run failed or profiled nothing (capture, explain, k8s, selftest),\n"
    "            or the traced program failed or wrote no trace (trace), 8 capture, trace,\n"
    "            load or selftest timed out or was interrupted (bundle marked incomplete), 9 not\n"
    "            ready: ncu, kubectl, the tracer library or libcupti missing, or unable to\n"
    "            profile (capture, trace, doctor, k8s), no NVIDIA driver or GPU (selftest,\n"
    "            calibrate), the server not ready (load), 10 a Kubernetes call failed or\n"
    "            something kprof created is left (k8s), 11 output could not be written (disk\n"
    "            full, permission denied, read-only file system), 12 some requests failed (load),\n"
    "            13 diff: the kernels compared cover too little of a side's GPU time,\n"
    "            14 plan: the capture is over a limit (plan, capture --plan or --trace, k8s\n"
    "            plan; the plan proposes the largest that fits).";

// Printed as the command composed it: secrets were redacted where they entered (command lines,
// environments, URLs, logs; common/redact.h), never by a pattern over the finished JSON, CSV or
// text, which corrupted kernel names (`sort_key::kernel<int>`) and broke JSON.
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

// A repeatable option takes one value per use (`--env A=1 --env B=2`): CLI11's default lets it
// take every word up to the next option, so `--env A=1 -- prog --port 8000` took `--` as the
// end of --env's values and then refused prog's own --port.
void one_value_per_option(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (!option->get_positional() && option->get_items_expected_max() > 1) {
      option->allow_extra_args(false);
    }
  }
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    one_value_per_option(*command);
  }
}

// The seconds an option without a range of its own may take (every such FLOAT option is a time:
// a timeout, a delay, a window): 11.6 days (capture's --ready-timeout's own bound), far below
// where a std::chrono conversion overflows.
constexpr double kMaxOptionSeconds = 1e6;

// Every number an option takes is finite and in range, checked here once for every FLOAT option
// of every command: CLI::Range and CLI::NonNegativeNumber let NaN through (each comparison with
// it is false), so `diff --threshold nan` passed every regression, and an option without a range
// took nan, inf or -5 seconds. A value must read as a finite double; an option without a range
// ("FLOAT", "FLOAT:NONNEGATIVE") must lie in [0, kMaxOptionSeconds]. The check has no
// description, so --help shows each option as before.
void numbers_finite_and_in_range(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    const std::string type = option->get_type_name();
    if (type.rfind("FLOAT", 0) != 0) continue;
    const bool ranged = type.find(" in [") != std::string::npos;
    option->check(CLI::Validator(
        [ranged](std::string& text) -> std::string {
          const char* begin = text.c_str();
          char* end = nullptr;
          const double value = std::strtod(begin, &end);
          if (end == begin || *end != '\0') return "";  // not a number: CLI11's own error
          if (!std::isfinite(value)) {                  // nan, inf, 1e400
            return fmt::format("{} is not a finite number", text);
          }
          if (!ranged && (value < 0 || value > kMaxOptionSeconds)) {
            return fmt::format("{} is not seconds between 0 and {:.0f}", text, kMaxOptionSeconds);
          }
          return "";
        },
        ""));
  }
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    numbers_finite_and_in_range(*command);
  }
}

// Each command kprof --help lists ends its --help — and so its section of the man page and the
// options block of its page in docs/ (kprof docs-options) — with where its reference is.
void name_reference_pages(CLI::App& app) {
  app.footer(
      "Each command's reference, with real outputs: docs/COMMAND.md (the index: docs/README.md;\n"
      "installed in share/doc/kprof/docs). `kprof COMMAND --help` lists its options.");
  for (CLI::App* command :
       app.get_subcommands([](CLI::App* c) { return !c->get_group().empty(); })) {
    std::string footer = command->get_footer();
    while (!footer.empty() && footer.back() == '\n') footer.pop_back();
    command->footer(footer + (footer.empty() ? "" : "\n\n") +
                    fmt::format("Reference: docs/{}.md.", command->get_name()));
  }
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app(kDescription, "kprof");
  app.set_version_flag("--version", version_text());
  app.require_subcommand(1);
  app.fallthrough(false);
  Runner runner;
  for (DefineCommand define : kCommands) define(app, runner);
  one_value_per_option(app);
  numbers_finite_and_in_range(app);
  name_reference_pages(app);

  Output output;
  output.argv.assign(argv, argv + argc);
  std::vector<char*> args(argv, argv + argc);
  const bool plugin = argc > 0 && invoked_as_kubectl_plugin(argv[0]);
  static char k8s_verb[] = "k8s";
  if (plugin && !(argc > 1 && std::string_view(argv[1]) == "--version")) {
    args.insert(args.begin() + 1, k8s_verb);
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp&) {
    std::string help = app.help();
    std::fputs((plugin ? plugin_help(help) : help).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::fputs(app.help("", CLI::AppFormatMode::All).c_str(), stdout);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::printf("%s\n", version_text().c_str());
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
