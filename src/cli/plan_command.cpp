// kprof plan: the cost of a capture before it runs — the launches the filter profiles (from a
// trace of the same program), the passes, ncu's wall time and the engine's longest stall, checked
// against the probes, the SLO, the device memory and a budget (capture/capture_plan.h).
#include <fmt/format.h>
#include <re2/re2.h>

#include <memory>

#include "capture/verbs.h"
#include "cli/capture_support.h"
#include "cli/command.h"

namespace kprof::cli {
namespace {

struct PlanScope {
  std::string preset = "triage";
  std::vector<std::string> sections;
  std::string metrics, kernel_regex, kernel_name_base, safety = "none";
  std::optional<std::int64_t> launch_skip, launch_count;
  bool attach = false;
  bool json = false;
  PlanCliOptions plan;
};

capture::CaptureSpec scope_spec(const PlanScope& scope) {
  capture::CaptureSpec spec;
  if (!scope.sections.empty() || !scope.metrics.empty()) {
    spec.preset = capture::Preset::kCustom;
  } else if (auto preset = capture::parse_preset(scope.preset)) {
    spec.preset = *preset;
  } else {
    throw UsageError(fmt::format("--preset {}: expected triage, basic or full", scope.preset));
  }
  spec.sections = scope.sections;
  spec.metrics = scope.metrics;
  spec.kernel_regex = scope.kernel_regex;
  RE2 check(spec.kernel_regex.empty() ? std::string(".") : spec.kernel_regex, RE2::Quiet);
  if (!check.ok()) throw UsageError(fmt::format("-k \"{}\": {}", spec.kernel_regex, check.error()));
  spec.kernel_name_base = scope.kernel_name_base;
  if (scope.launch_skip && *scope.launch_skip < 0) throw UsageError("--launch-skip must be >= 0");
  if (scope.launch_count && *scope.launch_count < 1)
    throw UsageError("--launch-count must be at least 1");
  spec.launch_skip = scope.launch_skip;
  spec.launch_count = scope.launch_count;
  if (scope.safety == "single-replica") {
    spec.safety = capture::Safety::kSingleReplica;
  } else if (scope.safety == "multi-replica") {
    spec.safety = capture::Safety::kMultiReplica;
  }
  if (scope.attach) spec.attach = capture::AttachEndpoint{"127.0.0.1", std::nullopt};
  return spec;
}

}  // namespace

void define_plan(CLI::App& parent, Runner& runner) {
  auto scope = std::make_shared<PlanScope>();
  CLI::App* command = parent.add_subcommand(
      "plan", "What a capture will cost the service, before it runs (nothing is run)");
  command->footer(std::string(kPlanModelHelp) +
                  "\nExit codes: 0 the capture fits (or --budget chose one that does); 14 over a "
                  "limit\n(the plan names it and proposes one that fits); 5 the filter matches "
                  "no launch of the trace.\n\n"
                  "Examples:\n"
                  "  kprof plan --trace decode.json.gz -k nvjet --preset full -c 5\n"
                  "  kprof plan --trace decode.json.gz -k nvjet --preset full -c 5 "
                  "--liveness-probe 10:3 --slo-p99-ms 2000\n"
                  "  kprof plan --trace decode.json.gz -k 'gemm|nvjet' --budget 60 --json\n"
                  "  kprof capture --plan --trace decode.json.gz -k nvjet --attach 127.0.0.1  # "
                  "the same, from capture's options\n\n"
                  "Reference: docs/plan.md.");
  command->add_option("--preset", scope->preset, "triage (default), basic or full")
      ->capture_default_str();
  command->add_option("--section", scope->sections,
                      "ncu section (repeatable); replaces the preset");
  command->add_option("--metrics", scope->metrics, "ncu metric list; replaces the preset");
  command->add_option("-k,--kernel-name", scope->kernel_regex,
                      "Only kernels whose name matches this regex (as capture takes it)");
  command
      ->add_option("--kernel-name-base", scope->kernel_name_base,
                   "Name the regex matches: function (ncu's default), demangled or mangled")
      ->check(CLI::IsMember({"function", "demangled", "mangled"}));
  command->add_option("--launch-skip", scope->launch_skip,
                      "Skip this many matching launches first (warm-up)");
  command->add_option("-c,--launch-count", scope->launch_count,
                      "Profile this many matching launches");
  command
      ->add_option("--safety", scope->safety,
                   "none, single-replica (default count 1) or multi-replica (5)")
      ->check(CLI::IsMember({"none", "single-replica", "multi-replica"}))
      ->capture_default_str();
  command->add_flag("--attach", scope->attach,
                    "The capture attaches (capture --attach): one launch unless -c says more");
  add_plan_options(command, scope->plan, true);
  command->add_flag("--json", scope->json, "Print JSON (schema kprof.plan/1)");
  command->callback([&runner, scope] {
    runner = [scope](Output& output) {
      capture::PlanOptions options = to_plan_options(scope->plan, scope_spec(*scope), scope->json);
      return answer(capture::plan(options, output.argv), output);
    };
  });
}

}  // namespace kprof::cli
