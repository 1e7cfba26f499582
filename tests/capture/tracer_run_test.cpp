// The pure parts of running a program under kprof's tracer: the environment it gets, refusals,
// where the library is looked for, who holds the injection slot. (The run itself, against the
// real library and a libcupti stand-in, is tests/tracer/trace_command_test.cpp.)
#include "capture/tracer_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace kprof::capture {
namespace {

namespace fs = std::filesystem;

TraceSpec spec() {
  TraceSpec s;
  s.tracer_library = "/opt/kprof/lib/libkprof_tracer.so";
  s.output_dir = "/tmp/traces";
  s.target = {"python3", "serve.py"};
  return s;
}

std::map<std::string, std::string> as_map(
    const std::vector<std::pair<std::string, std::string>>& env) {
  std::map<std::string, std::string> m;
  for (const auto& [k, v] : env) m[k] = v;  // later entries win, as in run_child
  return m;
}

TEST(TracerEnvironment, BothInjectionsNameTheLibraryAndEverySettingIsOwned) {
  TraceSpec s = spec();
  s.env = {{"CUDA_INJECTION64_PATH", "/opt/other.so"}, {"HF_HOME", "/models"}};
  auto env = as_map(tracer_environment(s));
  EXPECT_EQ(env["CUDA_INJECTION64_PATH"], s.tracer_library);  // the user's --env cannot win
  EXPECT_EQ(env["NVTX_INJECTION64_PATH"], s.tracer_library);
  EXPECT_EQ(env["HF_HOME"], "/models");
  EXPECT_EQ(env["KPROF_TRACE_DIR"], "/tmp/traces");
  EXPECT_EQ(env["KPROF_TRACE_START"], "now");
  for (const char* unset : {"KPROF_TRACE_NAME", "KPROF_TRACE_DELAY_S", "KPROF_TRACE_DURATION_S",
                            "KPROF_TRACE_CONTROL", "KPROF_TRACE_MAX_EVENTS", "KPROF_TRACE_API"}) {
    ASSERT_TRUE(env.count(unset)) << unset;
    EXPECT_EQ(env[unset], "") << unset;
  }
}

TEST(TracerEnvironment, WindowsAndCap) {
  TraceSpec s = spec();
  s.start = TraceStart::kOnControl;
  s.control_path = "/tmp/traces/control";
  s.duration_s = 0.5;
  s.max_events = 100000;
  auto env = as_map(tracer_environment(s));
  EXPECT_EQ(env["KPROF_TRACE_START"], "on-control");
  EXPECT_EQ(env["KPROF_TRACE_CONTROL"], "/tmp/traces/control");
  EXPECT_EQ(env["KPROF_TRACE_DURATION_S"], "0.5");
  EXPECT_EQ(env["KPROF_TRACE_MAX_EVENTS"], "100000");
  s.api_records = false;
  EXPECT_EQ(as_map(tracer_environment(s))["KPROF_TRACE_API"], "0");
}

TEST(TracerEnvironment, WhatTheTracerWouldRefuseIsRefusedFirst) {
  TraceSpec none = spec();
  none.target.clear();
  EXPECT_THROW(tracer_environment(none), std::invalid_argument);
  TraceSpec no_control = spec();
  no_control.start = TraceStart::kOnControl;
  EXPECT_THROW(tracer_environment(no_control), std::invalid_argument);
  TraceSpec delayed = spec();
  delayed.start = TraceStart::kOnControl;
  delayed.control_path = "/c";
  delayed.delay_s = 1;
  EXPECT_THROW(tracer_environment(delayed), std::invalid_argument);
  TraceSpec negative = spec();
  negative.duration_s = -1;
  EXPECT_THROW(tracer_environment(negative), std::invalid_argument);
  TraceSpec zero_cap = spec();
  zero_cap.max_events = 0;
  EXPECT_THROW(tracer_environment(zero_cap), std::invalid_argument);
}

TEST(TracerLocation, ExplicitPathAloneThenBesideKprofThenTheBuildTree) {
  char pattern[] = "/tmp/kprof-locate-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  fs::path root = pattern;
  fs::create_directories(root / "bin");
  fs::create_directories(root / "lib" / "kprof");
  fs::create_directories(root / "bin" / "src" / "tracer");
  std::string kprof = (root / "bin" / "kprof").string();
  TracerLocation none = locate_tracer("", kprof);
  EXPECT_TRUE(none.path.empty());
  EXPECT_EQ(none.searched, (root / "bin/libkprof_tracer.so").string() + ", " +
                               (root / "lib/libkprof_tracer.so").string() + ", " +
                               (root / "lib/kprof/libkprof_tracer.so").string() + ", " +
                               (root / "bin/src/tracer/libkprof_tracer.so").string());
  std::ofstream(root / "bin" / "src" / "tracer" / "libkprof_tracer.so") << "x";
  EXPECT_EQ(locate_tracer("", kprof).path, (root / "bin/src/tracer/libkprof_tracer.so").string());
  std::ofstream(root / "lib" / "kprof" / "libkprof_tracer.so") << "x";
  EXPECT_EQ(locate_tracer("", kprof).path, (root / "lib/kprof/libkprof_tracer.so").string());
  // --tracer-lib is taken alone: a missing one is not replaced by another found elsewhere.
  TracerLocation missing = locate_tracer((root / "nope.so").string(), kprof);
  EXPECT_TRUE(missing.path.empty());
  EXPECT_EQ(missing.searched, (root / "nope.so").string() + " (--tracer-lib)");
  fs::remove_all(root);
}

TEST(InjectionOwner, RecognisesTheToolsByTheirInstallPaths) {
  EXPECT_EQ(injection_owner("/usr/lib/kprof/libkprof_tracer.so"), "kprof's tracer");
  EXPECT_EQ(
      injection_owner("/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/"
                      "libTreeLauncherTargetInjection.so"),
      "Nsight Compute (ncu)");
  EXPECT_EQ(injection_owner("/opt/nvidia/nsight-systems/2025.3.1/target-linux-x64/"
                            "libToolsInjection64.so"),
            "Nsight Systems (nsys)");
  EXPECT_EQ(injection_owner("/opt/profiler/libinject.so"), "");
}

TEST(Cupti, LibraryPathAndVersionText) {
  EXPECT_EQ(library_path_dirs("/a::/b:"), (std::vector<std::string>{"/a", "/b"}));
  EXPECT_TRUE(library_path_dirs("").empty());
  EXPECT_EQ(cupti_version_text(130000), "13.0");
  EXPECT_EQ(cupti_version_text(120800), "12.8");
  EXPECT_EQ(cupti_version_text(std::nullopt), "");
}

TEST(Cupti, NothingFoundIsSaidWithWhereKprofLooked) {
  CuptiProbe probe = probe_cupti({"/nonexistent/cupti"}, /*system_search=*/false);
  EXPECT_TRUE(probe.path.empty());
  EXPECT_FALSE(probe.version.has_value());
  EXPECT_EQ(probe.error, "libcupti.so.13 not found");
}

}  // namespace
}  // namespace kprof::capture
