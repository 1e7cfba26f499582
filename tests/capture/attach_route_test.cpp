// The route to a running engine per ncu version and target (capture/attach_route.h): launch and
// attach by TCP for a process started under `ncu --mode launch` whatever the version, the
// in-process library only from ncu 2026.2.1 (NVIDIA's release notes) and only for a process that
// loaded the library itself, the sister otherwise; and the facts read from a /proc of our own.
#include "capture/attach_route.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/scratch_dir.h"

namespace kprof::capture {
namespace {
namespace fs = std::filesystem;

RouteTarget launched() {
  RouteTarget target;
  target.pid = 4242;
  target.under_ncu_launch = true;
  return target;
}

RouteTarget in_process() {
  RouteTarget target;
  target.pid = 4242;
  target.loaded_injection_library = true;
  target.injection_library_path = "/opt/nsight-compute/2026.2.1/target/x64/libcuda-injection.so";
  return target;
}

RouteTarget plain() {
  RouteTarget target;
  target.pid = 4242;
  return target;
}

const std::optional<NcuVersion> kOld{NcuVersion{2025, 3, 1}};
const std::optional<NcuVersion> kJustBefore{NcuVersion{2026, 2, 0}};
const std::optional<NcuVersion> kFirst{NcuVersion{2026, 2, 1}};
const std::optional<NcuVersion> kLater{NcuVersion{2026, 3, 0}};

TEST(AttachRoute, LaunchModeIsAttachByTcpForEveryVersion) {
  for (const auto& version : {kOld, kJustBefore, kFirst, kLater, std::optional<NcuVersion>{}}) {
    RouteChoice choice = choose_attach_route(version, launched());
    EXPECT_EQ(choice.route, AttachRoute::kLaunchAttachTcp) << describe_ncu(version);
    EXPECT_NE(choice.why.find("process 4242 was started under `ncu --mode launch`"),
              std::string::npos)
        << choice.why;
    EXPECT_TRUE(choice.next.empty());
  }
}

TEST(AttachRoute, TheLibraryIsARouteFrom2026_2_1On) {
  for (const auto& version : {kFirst, kLater}) {
    RouteChoice choice = choose_attach_route(version, in_process());
    EXPECT_EQ(choice.route, AttachRoute::kInProcessLibrary) << describe_ncu(version);
    EXPECT_NE(choice.why.find("loaded ncu's injection library itself "
                              "(/opt/nsight-compute/2026.2.1/target/x64/libcuda-injection.so)"),
              std::string::npos)
        << choice.why;
    EXPECT_NE(
        choice.why.find(describe_ncu(version) + " has `--mode attach --process-id` (2026.2.1+)"),
        std::string::npos)
        << choice.why;
  }
}

TEST(AttachRoute, OlderOrUnknownNcuWithTheLibraryLoadedIsSisterOnlyAndSaysWhy) {
  for (const auto& version : {kOld, kJustBefore, std::optional<NcuVersion>{}}) {
    RouteChoice choice = choose_attach_route(version, in_process());
    EXPECT_EQ(choice.route, AttachRoute::kSisterOnly) << describe_ncu(version);
    EXPECT_NE(choice.why.find(describe_ncu(version) + " has no --process-id"), std::string::npos)
        << choice.why;
    EXPECT_NE(choice.why.find("came with ncu 2026.2.1 (https://docs.nvidia.com/nsight-compute/"
                              "ReleaseNotes/topics/updates-2026-2-1.html)"),
              std::string::npos)
        << choice.why;
    EXPECT_NE(choice.next.find("--ncu PATH"), std::string::npos) << choice.next;
  }
}

TEST(AttachRoute, NeitherLaunchedNorLoadedIsSisterOnlyWithEveryVersion) {
  RouteChoice newest = choose_attach_route(kLater, plain());
  EXPECT_EQ(newest.route, AttachRoute::kSisterOnly);
  EXPECT_NE(newest.why.find("not started under `ncu --mode launch` and has not loaded ncu's "
                            "injection library"),
            std::string::npos)
      << newest.why;
  EXPECT_NE(newest.next.find("Engine-side setup"), std::string::npos) << newest.next;
  RouteChoice old = choose_attach_route(kOld, plain());
  EXPECT_EQ(old.route, AttachRoute::kSisterOnly);
  EXPECT_NE(old.why.find("ncu 2025.3.1 could not attach to it by id anyway"), std::string::npos)
      << old.why;
}

TEST(AttachRoute, KubernetesContainersAreJudgedByTheirDeclaredSetup) {
  RouteTarget pod = in_process();
  pod.where = RouteTarget::Where::kKubernetes;
  pod.pid.reset();
  pod.injection_library_path.clear();
  RouteChoice choice = choose_attach_route(kFirst, pod);
  EXPECT_EQ(choice.route, AttachRoute::kInProcessLibrary);
  EXPECT_NE(choice.why.find("the container declares NV_COMPUTE_PROFILER_IN_PROCESS=1"),
            std::string::npos)
      << choice.why;
  EXPECT_NE(choice.next.find("kprof k8s does not drive this route"), std::string::npos);
  EXPECT_EQ(choose_attach_route(kOld, pod).route, AttachRoute::kSisterOnly);
  pod.loaded_injection_library = false;
  RouteChoice plain_pod = choose_attach_route(kFirst, pod);
  EXPECT_EQ(plain_pod.route, AttachRoute::kSisterOnly);
  EXPECT_NE(plain_pod.why.find("does not declare the in-process setup"), std::string::npos)
      << plain_pod.why;
  EXPECT_NE(plain_pod.next.find("kprof k8s sister"), std::string::npos) << plain_pod.next;
  pod.under_ncu_launch = true;
  EXPECT_EQ(choose_attach_route(kOld, pod).route, AttachRoute::kLaunchAttachTcp);
  EXPECT_NE(choose_attach_route(kOld, pod).why.find("the container's command was started under"),
            std::string::npos);
}

TEST(AttachRoute, RouteNames) {
  EXPECT_EQ(route_id(AttachRoute::kLaunchAttachTcp), "launch-attach-tcp");
  EXPECT_EQ(route_id(AttachRoute::kInProcessLibrary), "in-process-library");
  EXPECT_EQ(route_id(AttachRoute::kSisterOnly), "sister-only");
  EXPECT_EQ(route_title(AttachRoute::kInProcessLibrary), "in-process library");
}

// A /proc of our own: PID/environ (NUL-separated) and PID/maps lines as the kernel writes them.
class ProcRoot : public ::testing::Test {
 protected:
  void write(int pid, const std::string& environ, const std::string& maps) {
    fs::path dir = fs::path(root_.path()) / std::to_string(pid);
    fs::create_directories(dir);
    std::ofstream(dir / "environ", std::ios::binary) << environ;
    std::ofstream(dir / "maps", std::ios::binary) << maps;
  }
  std::string root() const { return root_.path(); }
  testing::ScratchDir root_;
};

const std::string kLibc =
    "7f1c2a000000-7f1c2a028000 r--p 00000000 08:01 1311 /usr/lib/x86_64-linux-gnu/libc.so.6\n";

TEST_F(ProcRoot, AProcessThatLoadedTheLibraryItself) {
  std::string environ = std::string("PATH=/usr/bin") + '\0' + "NV_COMPUTE_PROFILER_IN_PROCESS=1" +
                        '\0' + "HOME=/root" + '\0';
  write(31, environ,
        kLibc +
            "7f1c2b000000-7f1c2b400000 r-xp 00000000 08:01 2222 "
            "/opt/ncu/target/linux-desktop-glibc_2_11_3-x64/libcuda-injection.so\n");
  std::optional<RouteTarget> target = inspect_process(31, root());
  ASSERT_TRUE(target);
  EXPECT_EQ(target->pid, 31);
  EXPECT_FALSE(target->under_ncu_launch);
  EXPECT_TRUE(target->loaded_injection_library);
  EXPECT_EQ(target->injection_library_path,
            "/opt/ncu/target/linux-desktop-glibc_2_11_3-x64/libcuda-injection.so");
  EXPECT_EQ(choose_attach_route(kFirst, *target).route, AttachRoute::kInProcessLibrary);
}

TEST_F(ProcRoot, LaunchModesEnvironmentWinsOverTheSameLibraryInItsMaps) {
  // ncu's launch mode sets these (observed with ncu 2025.3.1 on the H200).
  std::string environ = std::string("NV_CUDA_START_SUSPENDED=1") + '\0' +
                        "NV_NSIGHT_INJECTION_PORT_BASE=49152" + '\0';
  write(32, environ,
        kLibc +
            "7f1c2b000000-7f1c2b400000 r-xp 00000000 08:01 2222 /opt/ncu/"
            "libcuda-injection.so\n");
  std::optional<RouteTarget> target = inspect_process(32, root());
  ASSERT_TRUE(target);
  EXPECT_TRUE(target->under_ncu_launch);
  EXPECT_FALSE(target->loaded_injection_library);
  EXPECT_EQ(choose_attach_route(kFirst, *target).route, AttachRoute::kLaunchAttachTcp);
}

TEST_F(ProcRoot, ALaunchTreeLibraryAloneMeansLaunchMode) {
  write(33, "",
        kLibc +
            "7f1c2b000000-7f1c2b400000 r-xp 00000000 08:01 2223 /opt/ncu/"
            "libTreeLauncherTargetInjection.so\n");
  EXPECT_TRUE(inspect_process(33, root())->under_ncu_launch);
}

TEST_F(ProcRoot, APlainProcessAndAMissingOne) {
  // A name that only contains the library's name is not the library.
  write(34, std::string("A=1") + '\0',
        kLibc +
            "7f1c2b000000-7f1c2b400000 r--p 00000000 08:01 2224 /data/libcuda-injection.so.bak\n");
  std::optional<RouteTarget> target = inspect_process(34, root());
  ASSERT_TRUE(target);
  EXPECT_FALSE(target->under_ncu_launch);
  EXPECT_FALSE(target->loaded_injection_library);
  EXPECT_FALSE(inspect_process(35, root()).has_value());
}

}  // namespace
}  // namespace kprof::capture
