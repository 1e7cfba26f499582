// libkprof_tracer.so loaded as the CUDA driver and NVTX load it (dlopen, then the entry point),
// in a child process: what it exports, and that it stays off — saying why, once, on stderr, and
// still returning 1 — for each reason it can see without a GPU. What needs a GPU (windows,
// conflicts with ncu/nsys, fork, two processes) is tools/tracer/gpu-check.sh.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "support/run_process.h"

namespace kprof::tracer {
namespace {

using kprof::testing::ProcessResult;
using kprof::testing::run_process;

ProcessResult probe(const std::string& entry, std::vector<std::string> settings) {
  std::vector<std::string> argv = {KPROF_TRACER_PROBE, KPROF_TRACER_LIBRARY, entry};
  argv.insert(argv.end(), settings.begin(), settings.end());
  return run_process(argv);
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

class TracerInjection : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kprof-injection-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  bool nothing_written() const { return std::filesystem::is_empty(dir_); }
  std::string dir_;
};

TEST(TracerLibrary, ExportsOnlyTheInjectionEntryPoints) {
  if (access("/usr/bin/nm", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/nm (binutils)";
  auto nm = run_process({"/usr/bin/nm", "-D", "--defined-only", KPROF_TRACER_LIBRARY});
  ASSERT_EQ(nm.exit_code, 0) << nm.err;
  std::set<std::string> exported;
  for (const std::string& line : lines(nm.out)) {
    std::istringstream fields(line);
    std::string address, type, name;
    fields >> address >> type >> name;
    exported.insert(type + " " + name);
  }
  EXPECT_EQ(exported, (std::set<std::string>{"T InitializeInjection", "T InitializeInjectionNvtx",
                                             "T InitializeInjectionNvtx2"}));
}

// Without a CUDA driver CUPTI cannot attach: the tracer says so and leaves the program be.
TEST_F(TracerInjection, WithoutADriverItStaysOffAndSaysWhyOnce) {
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_LOCAL)) {
    dlclose(driver);
  }
  if (void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
    dlclose(driver);
    GTEST_SKIP()
        << "a CUDA driver is installed here: CUPTI would attach (tools/tracer/gpu-check.sh)";
  }
  auto result = probe("InitializeInjection", {"--twice", "KPROF_TRACE_DIR=" + dir_});
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.out, "returned 1\nreturned 1\n");
  auto said = lines(result.err);
  ASSERT_EQ(said.size(), 1u) << result.err;
  EXPECT_EQ(said[0].rfind("kprof-tracer: CUPTI cannot attach (", 0), 0u) << said[0];
  EXPECT_EQ(said[0].substr(said[0].size() - 22), ": the tracer stays off");
  EXPECT_TRUE(nothing_written());
}

TEST_F(TracerInjection, AnUnusableSettingKeepsItOff) {
  auto result =
      probe("InitializeInjection", {"KPROF_TRACE_DIR=" + dir_, "KPROF_TRACE_DELAY_S=soon"});
  EXPECT_EQ(result.out, "returned 1\n");
  EXPECT_EQ(
      result.err,
      "kprof-tracer: KPROF_TRACE_DELAY_S=\"soon\": expected seconds, a number >= 0: the tracer "
      "stays off\n");
  EXPECT_TRUE(nothing_written());
}

TEST_F(TracerInjection, AnotherToolsInjectionKeepsItOff) {
  // ncu and nsys put their own library into CUDA_INJECTION64_PATH; reached through NVTX, the
  // tracer must not take CUPTI from them.
  auto result = probe("InitializeInjectionNvtx2",
                      {"KPROF_TRACE_DIR=" + dir_,
                       "CUDA_INJECTION64_PATH=/opt/nvidia/nsight-compute/target/libInjection.so"});
  EXPECT_EQ(result.out, "returned 1\n");  // 0 would have NVTX dlclose the library
  EXPECT_EQ(result.err,
            "kprof-tracer: CUDA_INJECTION64_PATH names "
            "/opt/nvidia/nsight-compute/target/libInjection.so, another tool's injection (Nsight "
            "Compute, Nsight Systems or another profiler): the tracer stays off\n");
  EXPECT_TRUE(nothing_written());
}

TEST_F(TracerInjection, AnUnwritableOutputFolderKeepsItOff) {
  std::string missing = dir_ + "/missing";
  auto result = probe(
      "InitializeInjection",
      {"KPROF_TRACE_DIR=" + missing, std::string("CUDA_INJECTION64_PATH=") + KPROF_TRACER_LIBRARY});
  EXPECT_EQ(result.out, "returned 1\n");
  EXPECT_EQ(result.err, "kprof-tracer: KPROF_TRACE_DIR=\"" + missing +
                            "\": No such file or directory (need a writable folder): the tracer "
                            "stays off\n");
}

}  // namespace
}  // namespace kprof::tracer
