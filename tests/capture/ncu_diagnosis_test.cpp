// Diagnoses on real ncu 2025.3.1 runs recorded on the H200 (data/h200/ncu-outputs: each failure
// provoked for real with the small program diag.cu). The expected diagnosis of each recording
// is what its README says ncu did.
#include "capture/ncu_diagnosis.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include "common/text.h"
#include "support/test_data.h"

namespace kprof::capture {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

NcuRun recording(const std::string& name) {
  std::string base = testing::data_path("h200/ncu-outputs/" + name);
  NcuRun run;
  run.argv = split_whitespace(read(base + ".cmd"));
  run.output = read(base + ".out") + read(base + ".err");
  run.exit_code = std::stoi(read(base + ".rc"));
  return run;
}

std::vector<std::string> failure_ids(const NcuRun& run) {
  std::vector<std::string> ids;
  for (const Diagnosis& d : diagnose(run)) {
    if (d.failure) ids.push_back(d.id);
  }
  return ids;
}

TEST(NcuDiagnosis, EveryRecordedFailureIsNamed) {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"ok_basic", {}},
      {"clock_default", {}},
      {"unknown_metric", {}},  // ncu profiles; the metric is only absent from the report
      {"profiler_stop", {}},   // without --launch-count nothing in the output shows it
      {"no_match", {"no_kernel_matched"}},
      {"env_wrapper", {"env_wrapper"}},
      {"shell_wrapper_app_only", {"shell_wrapper"}},
      {"unknown_set", {"unknown_set"}},
      {"unknown_section", {"unknown_section"}},
      {"profile_from_start_off", {"profiling_never_started"}},
      {"not_cuda", {"no_cuda"}},
      {"target_crash", {"target_failed"}},
      {"app_replay_random", {"application_replay_inconsistent"}},
      {"attach_option", {"attach_option"}},
      {"attach_nothing", {"no_attachable_process"}},
      {"missing_app", {"missing_application"}},
      {"injection_env_set", {"injection_env_set"}},
      {"backing_up_memory", {}},  // slow (a warning below), not failed
  };
  for (const auto& [name, ids] : expected) {
    NcuRun run = recording(name);
    EXPECT_EQ(failure_ids(run), ids) << name;
    for (const Diagnosis& d : diagnose(run)) {
      EXPECT_FALSE(d.what.empty());
      EXPECT_FALSE(d.next.empty());
    }
  }
}

TEST(NcuDiagnosis, ExitZeroIsNotSuccess) {
  // ncu exited 0 in each of these, and each profiled nothing useful.
  for (const char* name : {"no_match", "env_wrapper", "unknown_set", "not_cuda"}) {
    NcuRun run = recording(name);
    EXPECT_EQ(run.exit_code, 0) << name;
    EXPECT_FALSE(failure_ids(run).empty()) << name;
  }
}

TEST(NcuDiagnosis, ProgressIsReadFromTheOutput) {
  NcuProgress ok = parse_progress(recording("ok_basic").output);
  EXPECT_EQ(ok.processes_connected, 1u);
  EXPECT_EQ(ok.kernels_profiled, 4u);
  EXPECT_EQ(ok.passes_per_kernel, 10);
  EXPECT_EQ(ok.report_paths, std::vector<std::string>{"/tmp/ok_basic.ncu-rep"});
  NcuProgress unmatched = parse_progress(recording("no_match").output);
  EXPECT_EQ(unmatched.available_kernels, std::vector<std::string>{"k_work"});
  EXPECT_EQ(unmatched.kernels_profiled, 0u);
}

TEST(NcuDiagnosis, WarningsForRunsThatWorked) {
  auto ids = [](const NcuRun& run) {
    std::vector<std::string> all;
    for (const Diagnosis& d : diagnose(run)) all.push_back(d.id);
    return all;
  };
  EXPECT_EQ(ids(recording("clock_default")), std::vector<std::string>{"clock_control_default"});
  // 100 GB resident on the H200: ncu's warning came in the middle of the first progress line.
  EXPECT_EQ(ids(recording("backing_up_memory")),
            std::vector<std::string>{"memory_backed_up_to_host"});
  // ContextSaveFailed: the wording quoted from public reports (no unabridged 2025.3.1 log
  // found; research notes, section 6.3), so both spellings count.
  for (const char* text : {"==ERROR== Failed to save memory for replay. Consider using "
                           "--replay-mode application",
                           "cuda_context_state>> Failed to save context state!"}) {
    NcuRun failed = recording("ok_basic");
    failed.output += std::string(text) + "\n";
    EXPECT_EQ(failure_ids(failed), std::vector<std::string>{"replay_memory_save_failed"}) << text;
  }
  // The profiler_stop run profiled 1 of the 4 launches; had it asked for 4, that shows.
  NcuRun stopped = recording("profiler_stop");
  stopped.argv.insert(stopped.argv.begin() + 1, {"--launch-count", "4"});
  EXPECT_EQ(ids(stopped), std::vector<std::string>{"fewer_kernels_than_requested"});
}

// ncu's status says it failed while its output names no cause: a failure all the same (the
// issue's case: `explain … --exit-code 139` on a log that looked fine said "healthy").
TEST(NcuDiagnosis, AnUnexplainedNonZeroExitIsAFailure) {
  NcuRun crashed = recording("ok_basic");
  crashed.exit_code = 139;
  EXPECT_EQ(failure_ids(crashed), std::vector<std::string>{"ncu_failed"});
  const Diagnosis failed = diagnose(crashed).back();
  EXPECT_NE(failed.what.find("ncu exited 139, which is how a shell reports a process killed by "
                             "signal 11 (SIGSEGV: a segmentation fault)"),
            std::string::npos)
      << failed.what;
  EXPECT_NE(failed.what.find("its last line: ==PROF== Report: /tmp/ok_basic.ncu-rep"),
            std::string::npos);
  EXPECT_NE(failed.next.find("without ncu"), std::string::npos);
  for (int code : {1, 2, 255}) {
    NcuRun run = recording("ok_basic");
    run.exit_code = code;
    EXPECT_EQ(failure_ids(run), std::vector<std::string>{"ncu_failed"}) << code;
  }
  NcuRun silent{{"ncu", "--clock-control", "none", "./app"}, "\n\n", 1};
  EXPECT_NE(diagnose(silent).back().what.find("it printed nothing"), std::string::npos);
  // A status kprof caused (detaching an attach client, a timeout) is not ncu's failure.
  NcuRun detached = recording("ok_basic");
  detached.exit_code = 130;
  detached.stopped_by_kprof = true;
  EXPECT_TRUE(failure_ids(detached).empty());
  // A status a rule explains gets that rule only: the target's crash (ncu exited 11).
  EXPECT_EQ(failure_ids(recording("target_crash")), std::vector<std::string>{"target_failed"});
}

// Neither could be provoked on the lent H200 (root, RmProfilingAdminOnly 0, one CUDA 13 toolkit
// on a CUDA 13 driver). The permission message is the one NVIDIA documents for ERR_NVGPUCTRPERM;
// the version lines are written the way the rule expects them, and say so.
TEST(NcuDiagnosis, NotRecordedPermissionAndVersionSkew) {
  NcuRun denied{{"ncu", "./app"},
                "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
                "GPU Performance Counters on the target device 0.\n",
                1};
  std::vector<Diagnosis> found = diagnose(denied);
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().id, "counter_permission");
  NcuRun skew{{"ncu", "./app"},
              "==ERROR== Failed to initialize the profiler library.\n"
              "==ERROR== CUDA versions: driver 12.8, runtime 13.0\n",
              1};
  found = diagnose(skew);
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.front().id, "cuda_version_skew");
  EXPECT_NE(found.front().what.find("(13.0)"), std::string::npos);
  EXPECT_NE(found.front().what.find("(12.8)"), std::string::npos);
  NcuRun same{{"ncu", "./app"}, "==ERROR== Failed to load the CUPTI injection library\n", 1};
  EXPECT_EQ(diagnose(same).front().id, "profiler_library_failed");
}

// Ranking on the 24 real kernel names of big_full (ncu's function-name export).
TEST(NcuDiagnosis, ClosestKernelNamesComeFirst) {
  std::vector<std::string> names;
  std::ifstream in(std::string(KPROF_DATA_DIR) + "/h200/kernel_names_big_full_function.csv");
  for (std::string line; std::getline(in, line);) {
    size_t comma = line.find("\",\"");
    if (comma != std::string::npos)
      names.push_back(line.substr(comma + 3, line.size() - comma - 4));
  }
  ASSERT_EQ(names.size(), 24u);
  // A typo'd filter: "sdpa_sm90_flsh" is closest to the sm90 flash attention kernel.
  std::vector<std::string> closest = closest_kernel_names("regex:SDPA_sm90_flsh", names, 3);
  ASSERT_EQ(closest.size(), 3u);
  EXPECT_NE(closest[0].find("sdpa_sm90"), std::string::npos) << closest[0];
  closest = closest_kernel_names("regex:splitk", names, 2);
  EXPECT_NE(closest[0].find("splitK"), std::string::npos);
  EXPECT_EQ(closest_kernel_names("x", {"b", "a"}, 5), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace kprof::capture
