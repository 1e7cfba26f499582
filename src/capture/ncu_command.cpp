#include "capture/ncu_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "common/text.h"

namespace kprof::capture {
namespace {

bool is_shell(const std::string& program) {
  static const char* kShells[] = {"sh", "bash", "dash", "zsh", "ksh", "fish"};
  std::string_view name = path_basename(program);
  return std::any_of(std::begin(kShells), std::end(kShells),
                     [&](const char* shell) { return name == shell; });
}

[[noreturn]] void refuse(const std::string& message) { throw std::invalid_argument(message); }

// The verdict fields and the metrics that feed them, each measured for its pass cost on an
// H200 (tools/capture/triage_passes.sh; figures in docs/capture.md, "Presets").
const std::vector<std::string>& triage_arguments() {
  static const std::vector<std::string> kArguments = [] {
    std::vector<std::string> metrics = {
        // DRAM bandwidth and its peak, as the roofline sections compute them (no extra pass).
        "dram__bytes.sum.per_second",
        "dram__bytes.sum.peak_sustained",
        "dram__cycles_elapsed.avg.per_second",
        // FP32/FP64/FP16 FLOP rates: SASS instruction counts (one instrumented pass).
        "smsp__cycles_elapsed.avg.per_second",
    };
    for (const char* op :
         {"fadd", "fmul", "ffma", "dadd", "dmul", "dfma", "hadd", "hmul", "hfma"}) {
      metrics.push_back(
          fmt::format("smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed", op));
    }
    // Tensor FLOP rates of BF16 and FP16 inputs (LLM GEMMs and attention): one pass each on
    // the H200. FP8/TF32/INT8 would cost one more each; tensor work in those precisions is
    // reported as missing FLOP/s rather than as ~0. GH100 has no counter that sums several
    // precisions in one pass: sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32 is not in its
    // metric list, and ncu collects nothing for it without a word (measured 2026-12-01).
    metrics.push_back("sm__cycles_elapsed.avg.per_second");
    metrics.push_back("sm__ops_path_tensor_src_bf16_dst_fp32.sum.per_cycle_elapsed");
    metrics.push_back("sm__ops_path_tensor_src_fp16.sum.per_cycle_elapsed");
    // Warp stalls from PC sampling: one pass for every reason, where the per-reason counters
    // of WarpStateStats cost five.
    metrics.push_back("group:smsp__pcsamp_warp_stall_reasons");
    std::string joined;
    for (const std::string& metric : metrics) joined += (joined.empty() ? "" : ",") + metric;
    // The warp sampling interval stays ncu's "auto": a fixed short interval overflowed the
    // sample buffer of long kernels on the H200 and cost up to 3 more passes.
    return std::vector<std::string>{"--section", "SpeedOfLight", "--section", "Occupancy",
                                    "--section", "LaunchStats",  "--metrics", joined};
  }();
  return kArguments;
}

}  // namespace

std::vector<std::string> preset_arguments(Preset preset) {
  switch (preset) {
    case Preset::kTriage:
      return triage_arguments();
    case Preset::kBasic:
      return {"--set", "basic"};
    case Preset::kFull:
      return {"--set", "full"};
    case Preset::kCustom:
      return {};
  }
  return {};
}

std::string preset_name(Preset preset) {
  switch (preset) {
    case Preset::kTriage:
      return "triage";
    case Preset::kBasic:
      return "basic";
    case Preset::kFull:
      return "full";
    case Preset::kCustom:
      return "custom";
  }
  return "";
}

std::optional<Preset> parse_preset(const std::string& name) {
  if (name == "triage") return Preset::kTriage;
  if (name == "basic") return Preset::kBasic;
  if (name == "full") return Preset::kFull;
  return std::nullopt;
}

AttachEndpoint parse_endpoint(const std::string& text) {
  AttachEndpoint endpoint;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos)
      refuse(fmt::format("attach endpoint \"{}\": missing ']'", text));
    endpoint.host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':')
        refuse(fmt::format("attach endpoint \"{}\": expected ':PORT' after ']'", text));
      port_text = text.substr(close + 2);
    }
  } else {
    size_t colon = text.find(':');
    if (colon != std::string::npos && text.find(':', colon + 1) != std::string::npos) {
      refuse(fmt::format("attach endpoint \"{}\": write an IPv6 address as [ADDRESS]:PORT", text));
    }
    endpoint.host = text.substr(0, colon);
    if (colon != std::string::npos) port_text = text.substr(colon + 1);
  }
  if (endpoint.host.empty()) refuse(fmt::format("attach endpoint \"{}\": no host", text));
  for (char c : endpoint.host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
          c == '_')) {
      refuse(fmt::format("attach endpoint \"{}\": '{}' cannot be part of a host name", text, c));
    }
  }
  if (!port_text.empty() || (text.find(':') != std::string::npos && text.front() != '[')) {
    int port = 0;
    bool digits = !port_text.empty() && port_text.size() <= 5 &&
                  std::all_of(port_text.begin(), port_text.end(), ::isdigit);
    if (digits) port = std::stoi(port_text);
    if (!digits || port < 1 || port > 65535) {
      refuse(
          fmt::format("attach endpoint \"{}\": the port must be a number from 1 to 65535", text));
    }
    endpoint.port = port;
  }
  return endpoint;
}

std::optional<std::int64_t> effective_launch_count(const CaptureSpec& spec) {
  if (spec.launch_count) return spec.launch_count;
  if (spec.safety == Safety::kSingleReplica) return 1;
  if (spec.safety == Safety::kMultiReplica) return 5;
  if (spec.attach) return 1;  // an attach capture ends when this many kernels are profiled
  return std::nullopt;
}

std::string kernel_filter(const CaptureSpec& spec) {
  // -k is always a regex; ncu's own "regex:" prefix, when the user writes it, is not doubled.
  std::string_view pattern = spec.kernel_regex;
  if (pattern.substr(0, 6) == "regex:") pattern.remove_prefix(6);
  if (!spec.children || spec.include_collectives || spec.attach || !spec.communicator.empty()) {
    return std::string(pattern);
  }
  // Every name without "nccl" in it (ncu's names: ncclDevKernel_AllReduce_…), and the user's
  // filter on top when there is one. A lookahead, as ncu's regex engine (ECMAScript) takes.
  if (pattern.empty()) return "^(?!.*nccl)";
  return "^(?!.*nccl)(?=.*(?:" + std::string(pattern) + "))";
}

// Options the ncu that will run does not list (ncu_versions.h), and the communicator's own rules
// (NVIDIA's CLI manual, "Mandatory Concurrent Kernels").
void refuse_what_this_ncu_lacks(const CaptureSpec& spec) {
  if (spec.attach_process_id && !ncu_has(spec.ncu_version, NcuFeature::kAttachProcessId)) {
    const NcuFeatureFact& fact = ncu_feature_fact(NcuFeature::kAttachProcessId);
    refuse(fmt::format(
        "attaching to process {} by its id: {} does not list --process-id; it came with ncu {} "
        "({})",
        *spec.attach_process_id, describe_ncu(spec.ncu_version), fact.since.text(), fact.source));
  }
  if ((spec.clock_control == "boost" || spec.clock_control == "force-boost") && spec.ncu_version &&
      !ncu_has(spec.ncu_version, NcuFeature::kBoostClockControl)) {
    const NcuFeatureFact& fact = ncu_feature_fact(NcuFeature::kBoostClockControl);
    refuse(
        fmt::format("--clock-control {}: {} has only base, none and reset; {} came with ncu "
                    "{} ({})",
                    spec.clock_control, describe_ncu(spec.ncu_version), fact.options,
                    fact.since.text(), fact.source));
  }
  if (spec.communicator.empty()) {
    if (spec.communicator_peers || spec.lockstep) {
      refuse("--communicator-peers and --lockstep need --communicator shmem|tcp");
    }
    return;
  }
  if (spec.communicator != "shmem" && spec.communicator != "tcp") {
    refuse(fmt::format("--communicator {}: expected shmem or tcp", spec.communicator));
  }
  if (!ncu_has(spec.ncu_version, NcuFeature::kCommunicator)) {
    const NcuFeatureFact& fact = ncu_feature_fact(NcuFeature::kCommunicator);
    refuse(fmt::format(
        "--communicator {}: {} does not list --communicator; it came with ncu {} "
        "({})",
        spec.communicator, describe_ncu(spec.ncu_version), fact.since.text(), fact.source));
  }
  if (spec.attach) refuse("--communicator needs launch mode: give the command after --");
  if (spec.communicator_peers && *spec.communicator_peers < 2) {
    refuse("--communicator-peers must be at least 2");
  }
  if (spec.communicator == "shmem") {
    if (!spec.children) {
      refuse(
          "--communicator shmem profiles the ranks of one process tree under one ncu: add "
          "--children (ncu --target-processes all)");
    }
    if (spec.replay_mode == "application" || spec.replay_mode == "app-range") {
      refuse(
          fmt::format("--communicator shmem supports kernel and range replay only, not "
                      "--replay-mode {}",
                      spec.replay_mode));
    }
    if (spec.lockstep) {
      refuse(
          "--lockstep is for --communicator tcp (one ncu per rank); shmem keeps the ranks of "
          "its tree together itself");
    }
  }
}

// What kprof refuses to run (a usage error naming the option): a capture with nothing to profile
// or two things, a wrapper ncu would profile instead of the program, options that do not
// combine, and what the safety presets forbid.
void refuse_what_cannot_run(const CaptureSpec& spec) {
  if (spec.attach_process_id && (!spec.attach || *spec.attach_process_id < 1)) {
    refuse("an attach by process id needs this machine's attach and a process id of 1 or more");
  }
  if (spec.attach && !spec.target.empty()) {
    refuse("give either --attach HOST[:PORT] or a command after --, not both");
  }
  if (!spec.attach && spec.target.empty()) {
    refuse(
        "nothing to capture: give the command after -- (kprof capture -- ./app ARGS) or "
        "--attach HOST[:PORT] for a process started under `ncu --mode launch`");
  }
  if (!spec.target.empty()) {
    const std::string_view program = path_basename(spec.target.front());
    if (program == "env") {
      refuse(
          "the command starts with `env`: ncu would profile env, which launches no kernel; "
          "put the variables on kprof instead: kprof capture --env NAME=VALUE -- APP");
    }
    if (is_shell(spec.target.front()) && !spec.children) {
      refuse(
          fmt::format("the command is a shell ({}): ncu would profile the shell, which "
                      "launches no kernel; run the program directly, or add --children to "
                      "profile the processes it starts",
                      program));
    }
  }
  if (spec.preset == Preset::kCustom && spec.sections.empty() && spec.metrics.empty()) {
    refuse("a custom capture needs --section or --metrics");
  }
  if (spec.launch_count && *spec.launch_count < 1) refuse("--launch-count must be at least 1");
  const bool window = spec.range == Range::kCudaProfilerApi || spec.honor_profiler_start_stop;
  if (window && spec.attach) {
    refuse(
        "--range cuda-profiler-api needs launch mode: ncu takes --profile-from-start only for a "
        "process it starts; for a process under `ncu --mode launch`, start that one with "
        "--profile-from-start off instead");
  }
  for (const auto* list : {&spec.nvtx_include, &spec.nvtx_exclude}) {
    for (const std::string& expression : *list) {
      if (expression.empty() || expression.find_first_not_of(" \t") == std::string::npos) {
        refuse(
            "an empty --nvtx-include/--nvtx-exclude expression: give a range name, e.g. "
            "decode/ (a push/pop range) or domain@range/");
      }
    }
  }
  if (!spec.graph_profiling.empty() && spec.graph_profiling != "node" &&
      spec.graph_profiling != "graph") {
    refuse(fmt::format("--graph-profiling {}: expected node or graph", spec.graph_profiling));
  }
  if (spec.launch_skip && *spec.launch_skip < 0) refuse("--launch-skip cannot be negative");
  refuse_what_this_ncu_lacks(spec);
  std::optional<std::int64_t> launch_count = effective_launch_count(spec);
  bool heavy = spec.preset == Preset::kFull || spec.preset == Preset::kCustom;
  switch (spec.safety) {
    case Safety::kSingleReplica:
      if (spec.kernel_regex.empty()) {
        refuse(
            "--safety single-replica needs one kernel regex (-k): a single replica cannot "
            "afford replaying every kernel it runs");
      }
      if (*launch_count > 3) refuse("--safety single-replica allows at most --launch-count 3");
      if (heavy) {
        refuse(
            "--safety single-replica allows only --preset triage or basic: --set full "
            "replays each kernel ~38 times and can push the server past its liveness probe");
      }
      break;
    case Safety::kMultiReplica:
      if (*launch_count > 5) refuse("--safety multi-replica allows at most --launch-count 5");
      break;
    case Safety::kNone:
      break;
  }
  if (spec.preset == Preset::kFull && spec.kernel_regex.empty() && !launch_count && !spec.force) {
    refuse(
        "refusing an unscoped --preset full: it replays every kernel the program launches "
        "~38 times; scope it with -k REGEX and/or --launch-count N, or pass --force");
  }
}

NcuCommand build_ncu_command(const CaptureSpec& spec) {
  refuse_what_cannot_run(spec);
  NcuCommand command;
  std::optional<std::int64_t> launch_count = effective_launch_count(spec);
  const bool window = spec.range == Range::kCudaProfilerApi || spec.honor_profiler_start_stop;

  // An option given through extra_ncu_args replaces kprof's own choice for it.
  auto overridden = [&](std::string_view option) {
    return std::any_of(spec.extra_ncu_args.begin(), spec.extra_ncu_args.end(),
                       [&](const std::string& arg) {
                         return arg == option || arg.rfind(std::string(option) + "=", 0) == 0;
                       });
  };
  std::vector<std::string>& argv = command.argv;
  argv.push_back(spec.ncu);
  // A config.ncu-cfg in the working directory or $HOME would silently change the capture.
  if (!overridden("--config-file")) argv.insert(argv.end(), {"--config-file", "off"});
  if (spec.attach_process_id) {
    // The in-process route: the process named by its id (ncu 2026.2.1's --process-id, as
    // nsight-python's attach passes it, with no --hostname).
    argv.insert(argv.end(),
                {"--mode", "attach", "--process-id", std::to_string(*spec.attach_process_id)});
  } else if (spec.attach) {
    argv.insert(argv.end(), {"--mode", "attach", "--hostname", spec.attach->host});
    if (spec.attach->port) argv.insert(argv.end(), {"--port", std::to_string(*spec.attach->port)});
  }
  std::vector<std::string> preset = preset_arguments(spec.preset);
  argv.insert(argv.end(), preset.begin(), preset.end());
  for (const std::string& section : spec.sections) argv.insert(argv.end(), {"--section", section});
  if (!spec.metrics.empty()) argv.insert(argv.end(), {"--metrics", spec.metrics});
  if (std::string filter = kernel_filter(spec); !filter.empty()) {
    argv.insert(argv.end(), {"--kernel-name", "regex:" + filter});
  }
  if (!spec.kernel_name_base.empty()) {
    argv.insert(argv.end(), {"--kernel-name-base", spec.kernel_name_base});
  }
  if (spec.launch_skip)
    argv.insert(argv.end(), {"--launch-skip", std::to_string(*spec.launch_skip)});
  if (launch_count) argv.insert(argv.end(), {"--launch-count", std::to_string(*launch_count)});
  // Launch mode: profile from the start with the application's cudaProfilerStart/Stop ignored.
  // ncu 2025.3 rejects --profile-from-start next to --disable-profiler-start-stop ("Ignoring
  // option --profile-from-start"), and rejects --target-processes in attach mode (seen on the
  // H200), so each is given only where it applies.
  if (!spec.attach) {
    if (overridden("--profile-from-start")) {
    } else if (window) {
      // Only inside the application's cudaProfilerStart/Stop windows; --launch-count counts
      // launches inside them.
      argv.insert(argv.end(), {"--profile-from-start", "off"});
    } else {
      argv.push_back("--disable-profiler-start-stop");
    }
    if (!overridden("--target-processes")) {
      argv.insert(argv.end(), {"--target-processes", spec.children ? "all" : "application-only"});
    }
  }
  if (!overridden("--clock-control"))
    argv.insert(argv.end(), {"--clock-control", spec.clock_control});
  if (!spec.replay_mode.empty() && !overridden("--replay-mode")) {
    argv.insert(argv.end(), {"--replay-mode", spec.replay_mode});
  }
  if (!spec.nvtx_include.empty() || !spec.nvtx_exclude.empty()) {
    // ncu takes --nvtx only where it launches the program ("Invalid option --nvtx specified for
    // --mode attach", on the H200): an attached target must have been launched with it.
    if (!spec.attach && !overridden("--nvtx")) argv.push_back("--nvtx");
    for (const std::string& e : spec.nvtx_include) argv.insert(argv.end(), {"--nvtx-include", e});
    for (const std::string& e : spec.nvtx_exclude) argv.insert(argv.end(), {"--nvtx-exclude", e});
  }
  if (!spec.graph_profiling.empty() && !overridden("--graph-profiling")) {
    argv.insert(argv.end(), {"--graph-profiling", spec.graph_profiling});
  }
  if (!spec.communicator.empty() && !overridden("--communicator")) {
    argv.insert(argv.end(), {"--communicator", spec.communicator});
    if (spec.communicator_peers) {
      // The option the manual's table lists (its prose once writes --communicator-num-peers,
      // which no table lists).
      argv.insert(argv.end(), {spec.communicator == "tcp" ? "--communicator-tcp-num-peers"
                                                          : "--communicator-shmem-num-peers",
                               std::to_string(*spec.communicator_peers)});
    }
    if (spec.lockstep) argv.push_back("--lockstep-kernel-launch");
  }
  argv.insert(argv.end(), spec.extra_ncu_args.begin(), spec.extra_ncu_args.end());
  argv.insert(argv.end(), {"--force-overwrite", "--export", spec.export_path});
  if (!spec.target.empty()) {
    argv.push_back("--");
    argv.insert(argv.end(), spec.target.begin(), spec.target.end());
  }

  if (spec.clock_control != "none") {
    command.warnings.push_back(fmt::format(
        "--clock-control {}: ncu sets the GPU clocks while profiling, so durations differ from "
        "production",
        spec.clock_control));
  }
  if (spec.honor_profiler_start_stop) {
    command.warnings.push_back(
        "--honor-profiler-start-stop is now --range cuda-profiler-api: profiling happens only "
        "between the application's cudaProfilerStart and cudaProfilerStop");
  }
  if (spec.children && !spec.include_collectives && !spec.attach && spec.communicator.empty()) {
    command.warnings.push_back(fmt::format(
        "--children: NCCL kernels are left out (replaying a collective while the other ranks "
        "are held hangs ncu); --include-collectives profiles them{}",
        ncu_has(spec.ncu_version, NcuFeature::kCommunicator)
            ? ", and with this ncu --communicator shmem replays them with their peers"
            : ""));
  }
  if (spec.graph_profiling == "node" && spec.ncu_version &&
      !ncu_has(spec.ncu_version, NcuFeature::kConditionalGraphNodes)) {
    const NcuFeatureFact& fact = ncu_feature_fact(NcuFeature::kConditionalGraphNodes);
    command.warnings.push_back(fmt::format(
        "--graph-profiling node: {} profiles no kernel nodes of conditional CUDA graphs or of "
        "graphs launched from the device; ncu {} does ({})",
        describe_ncu(spec.ncu_version), fact.since.text(), fact.source));
  }
  if (spec.communicator == "shmem" && spec.children) {
    command.warnings.push_back(
        "--communicator shmem: ncu profiles the NCCL kernels of the tree's ranks together; "
        "launchers (torchrun, mpirun) are left out by ncu itself");
  }
  if (spec.graph_profiling == "graph") {
    command.warnings.push_back(
        "--graph-profiling graph: each CUDA graph launch is profiled as one result, not per "
        "kernel; kprof counts such results but gives no per-kernel verdicts for them");
  }
  if (spec.preset == Preset::kFull && spec.kernel_regex.empty() && !launch_count && spec.force) {
    command.warnings.push_back(
        "unscoped --preset full (forced): every kernel is replayed ~38 times");
  }
  if (spec.replay_mode == "application") {
    command.warnings.push_back(
        "application replay reruns the whole program per pass; a program that does not launch "
        "the same kernels every run fails with \"Unexpected number of profiled kernels\"");
  }
  return command;
}

}  // namespace kprof::capture
