// The ncu command lines kprof builds, per ncu version, against that version's option listing
// (tests/capture/data/ncu_options/VERSION.txt: derived from NVIDIA's CLI listings and release
// notes — each file says from which, and 2025.4 and 2026.2.0 say they are inferred): every
// option kprof passes, and every value of the options whose values it lists, must be there.
// What a version lacks is refused with a message naming the version and the source.
#include "capture/ncu_versions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"

namespace kprof::capture {
namespace {

struct Listing {
  std::set<std::string> options;
  std::map<std::string, std::set<std::string>> values;  // where the file enumerates them
};

Listing read_listing(const std::string& version) {
  std::ifstream in(std::string(KPROF_TESTS_DIR) + "/capture/data/ncu_options/" + version + ".txt");
  EXPECT_TRUE(in) << version;
  Listing listing;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t equals = line.find('=');
    std::string name = line.substr(0, equals);
    listing.options.insert(name);
    if (equals != std::string::npos) {
      std::stringstream values(line.substr(equals + 1));
      std::string value;
      while (std::getline(values, value, ',')) listing.values[name].insert(value);
    }
  }
  return listing;
}

// Every --option of ncu's part of the argv (up to "--", the target's) is listed, with a listed
// value where the listing enumerates its values.
void expect_only_listed(const std::vector<std::string>& argv, const Listing& listing,
                        const std::string& version) {
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg == "--") break;
    if (arg.rfind("--", 0) != 0) continue;
    std::string name = arg.substr(2, arg.find('=') - 2);
    EXPECT_TRUE(listing.options.count(name)) << "ncu " << version << " lists no --" << name;
    auto values = listing.values.find(name);
    if (values != listing.values.end() && i + 1 < argv.size()) {
      EXPECT_TRUE(values->second.count(argv[i + 1]))
          << "ncu " << version << ": --" << name << " " << argv[i + 1] << " is not listed";
    }
  }
}

CaptureSpec launch(std::optional<NcuVersion> version) {
  CaptureSpec spec;
  spec.ncu = "/opt/ncu";
  spec.export_path = "/tmp/b/report";
  spec.target = {"python3", "serve.py"};
  spec.ncu_version = version;
  return spec;
}

// The captures kprof builds: what `capture` and `k8s` (attach) put together from their options.
std::vector<std::pair<std::string, CaptureSpec>> captures(std::optional<NcuVersion> version) {
  std::vector<std::pair<std::string, CaptureSpec>> specs;
  specs.emplace_back("triage", launch(version));
  CaptureSpec full = launch(version);
  full.preset = Preset::kFull;
  full.kernel_regex = "gemm";
  full.launch_skip = 10;
  full.launch_count = 3;
  full.kernel_name_base = "demangled";
  full.clock_control = "base";
  specs.emplace_back("full", full);
  CaptureSpec children = launch(version);
  children.children = true;
  children.replay_mode = "application";
  children.graph_profiling = "node";
  children.nvtx_include = {"decode/"};
  specs.emplace_back("children", children);
  CaptureSpec window = launch(version);
  window.range = Range::kCudaProfilerApi;
  window.graph_profiling = "graph";
  window.preset = Preset::kBasic;
  specs.emplace_back("window", window);
  CaptureSpec attach = launch(version);
  attach.target.clear();
  attach.attach = AttachEndpoint{"127.0.0.1", 49152};
  attach.safety = Safety::kSingleReplica;
  attach.kernel_regex = "flash";
  specs.emplace_back("k8s attach", attach);
  return specs;
}

const std::vector<std::pair<std::string, std::optional<NcuVersion>>>& versions() {
  static const std::vector<std::pair<std::string, std::optional<NcuVersion>>> kVersions = {
      {"2025.3.1", NcuVersion{2025, 3, 1}}, {"2025.4", NcuVersion{2025, 4, 0}},
      {"2026.1", NcuVersion{2026, 1, 0}},   {"2026.2", NcuVersion{2026, 2, 0}},
      {"2026.2.1", NcuVersion{2026, 2, 1}},
  };
  return kVersions;
}

TEST(NcuVersions, ParsesBannersReportsAndPlainVersions) {
  EXPECT_EQ(parse_ncu_version("NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) "
                              "2018-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 36398880) "
                              "(public-release)\n"),
            (NcuVersion{2025, 3, 1}));
  EXPECT_EQ(parse_ncu_version("2026.1.1.0 (build 1) (public-release)"), (NcuVersion{2026, 1, 1}));
  EXPECT_EQ(parse_ncu_version("2026.2"), (NcuVersion{2026, 2, 0}));
  EXPECT_EQ(parse_ncu_version("CUDA 13.0"), std::nullopt);
  EXPECT_EQ(parse_ncu_version(""), std::nullopt);
  EXPECT_EQ(parse_ncu_version("build 36398880"), std::nullopt);
}

TEST(NcuVersions, EveryFactNamesItsSource) {
  for (const NcuFeatureFact& fact : ncu_feature_facts()) {
    EXPECT_NE(fact.source.find("https://docs.nvidia.com/nsight-compute/"), std::string::npos);
    EXPECT_FALSE(fact.what.empty());
  }
  EXPECT_FALSE(ncu_has(std::nullopt, NcuFeature::kCommunicator));
  EXPECT_FALSE(ncu_has(NcuVersion{2025, 4, 1}, NcuFeature::kCommunicator));
  EXPECT_TRUE(ncu_has(NcuVersion{2026, 1, 0}, NcuFeature::kCommunicator));
  EXPECT_TRUE(ncu_has(NcuVersion{2025, 4, 0}, NcuFeature::kBoostClockControl));
}

TEST(NcuVersions, EachCaptureUsesOnlyOptionsItsNcuLists) {
  for (const auto& [name, version] : versions()) {
    Listing listing = read_listing(name);
    for (const auto& [what, spec] : captures(version)) {
      SCOPED_TRACE(name + ": " + what);
      expect_only_listed(build_ncu_command(spec).argv, listing, name);
    }
    // The exports a capture runs, and --fallback-ncu's.
    expect_only_listed({"ncu", "--import", "r.ncu-rep", "--csv", "--page", "raw"}, listing, name);
    expect_only_listed(
        {"ncu", "--import", "r.ncu-rep", "--csv", "--page", "details", "--section", "SpeedOfLight"},
        listing, name);
  }
  // An ncu of unknown version gets what the oldest listing takes.
  Listing oldest = read_listing("2025.3.1");
  for (const auto& [what, spec] : captures(std::nullopt)) {
    SCOPED_TRACE("unknown: " + what);
    expect_only_listed(build_ncu_command(spec).argv, oldest, "2025.3.1");
  }
}

TEST(NcuVersions, CommunicatorWhereTheNcuListsIt) {
  for (const auto& [name, version] : versions()) {
    SCOPED_TRACE(name);
    Listing listing = read_listing(name);
    CaptureSpec shmem = launch(version);
    shmem.children = true;
    shmem.communicator = "shmem";
    shmem.communicator_peers = 2;
    shmem.kernel_regex = "nccl";
    CaptureSpec tcp = launch(version);
    tcp.communicator = "tcp";
    tcp.communicator_peers = 4;
    tcp.lockstep = true;
    tcp.replay_mode = "application";
    if (!ncu_has(version, NcuFeature::kCommunicator)) {
      try {
        build_ncu_command(shmem);
        ADD_FAILURE() << "--communicator built for ncu " << name;
      } catch (const std::invalid_argument& error) {
        std::string message = error.what();
        EXPECT_NE(message.find("ncu " + version->text() + " does not list --communicator"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("2026.1.0"), std::string::npos) << message;
        EXPECT_NE(message.find("https://docs.nvidia.com/"), std::string::npos) << message;
      }
      EXPECT_THROW(build_ncu_command(tcp), std::invalid_argument);
      continue;
    }
    NcuCommand shmem_command = build_ncu_command(shmem);
    expect_only_listed(shmem_command.argv, listing, name);
    const auto& argv = shmem_command.argv;
    auto at = std::find(argv.begin(), argv.end(), "--communicator");
    ASSERT_NE(at, argv.end());
    EXPECT_EQ(*(at + 1), "shmem");
    EXPECT_EQ(*(at + 2), "--communicator-shmem-num-peers");
    // NCCL kernels are the point: not filtered out as --children alone does.
    auto filter = std::find(argv.begin(), argv.end(), "--kernel-name");
    ASSERT_NE(filter, argv.end());
    EXPECT_EQ(*(filter + 1), "regex:nccl");
    NcuCommand tcp_command = build_ncu_command(tcp);
    expect_only_listed(tcp_command.argv, listing, name);
    EXPECT_NE(
        std::find(tcp_command.argv.begin(), tcp_command.argv.end(), "--communicator-tcp-num-peers"),
        tcp_command.argv.end());
    EXPECT_NE(
        std::find(tcp_command.argv.begin(), tcp_command.argv.end(), "--lockstep-kernel-launch"),
        tcp_command.argv.end());
  }
}

// The in-process route (attach_route.h): `--mode attach --process-id PID`, as NVIDIA's 2026.2.1
// release notes add it and nsight-python's attach passes it, with no --hostname; refused, naming
// the version and the page, by an ncu before 2026.2.1 or of unknown version.
TEST(NcuVersions, AttachByProcessIdWhereTheNcuListsIt) {
  std::vector<std::pair<std::string, std::optional<NcuVersion>>> all = versions();
  all.emplace_back("unknown", std::nullopt);
  for (const auto& [name, version] : all) {
    SCOPED_TRACE(name);
    CaptureSpec spec = launch(version);
    spec.target.clear();
    spec.attach = AttachEndpoint{"127.0.0.1", std::nullopt};
    spec.attach_process_id = 4242;
    spec.kernel_regex = "flash";
    spec.nvtx_include = {"decode/"};
    if (!ncu_has(version, NcuFeature::kAttachProcessId)) {
      try {
        build_ncu_command(spec);
        ADD_FAILURE() << "--process-id built for " << name;
      } catch (const std::invalid_argument& error) {
        std::string message = error.what();
        EXPECT_NE(message.find(describe_ncu(version) + " does not list --process-id"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find("came with ncu 2026.2.1 (https://docs.nvidia.com/nsight-compute/"
                               "ReleaseNotes/topics/updates-2026-2-1.html)"),
                  std::string::npos)
            << message;
      }
      continue;
    }
    std::vector<std::string> argv = build_ncu_command(spec).argv;
    expect_only_listed(argv, read_listing(name), name);
    ASSERT_GE(argv.size(), 7u);
    EXPECT_EQ(std::vector<std::string>(argv.begin() + 3, argv.begin() + 7),
              (std::vector<std::string>{"--mode", "attach", "--process-id", "4242"}));
    for (const char* absent : {"--hostname", "--port", "--target-processes", "--nvtx", "--"}) {
      EXPECT_EQ(std::count(argv.begin(), argv.end(), absent), 0) << absent;
    }
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "--nvtx-include"), 1);
  }
  // The listing a 2026.2.1 ncu prints for the library's folder is there for the engine's setup.
  EXPECT_TRUE(read_listing("2026.2.1").options.count("list-injection-path-64"));
  EXPECT_FALSE(read_listing("2026.2").options.count("list-injection-path-64"));
  // An attach by id names this machine's process: not without attach, not pid 0.
  CaptureSpec alone = launch(NcuVersion{2026, 2, 1});
  alone.target.clear();
  alone.attach_process_id = 4242;
  EXPECT_THROW(build_ncu_command(alone), std::invalid_argument);
  alone.attach = AttachEndpoint{"127.0.0.1", std::nullopt};
  alone.attach_process_id = 0;
  EXPECT_THROW(build_ncu_command(alone), std::invalid_argument);
}

TEST(NcuVersions, CommunicatorRulesFromTheManual) {
  NcuVersion v2026{2026, 1, 0};
  CaptureSpec shmem = launch(v2026);
  shmem.communicator = "shmem";
  EXPECT_THROW(build_ncu_command(shmem), std::invalid_argument);  // needs --children
  shmem.children = true;
  shmem.replay_mode = "application";  // shmem: kernel and range replay only
  EXPECT_THROW(build_ncu_command(shmem), std::invalid_argument);
  shmem.replay_mode = "";
  shmem.lockstep = true;  // tcp's
  EXPECT_THROW(build_ncu_command(shmem), std::invalid_argument);
  CaptureSpec attach = launch(v2026);
  attach.target.clear();
  attach.attach = AttachEndpoint{"127.0.0.1", std::nullopt};
  attach.communicator = "tcp";
  EXPECT_THROW(build_ncu_command(attach), std::invalid_argument);
  CaptureSpec peers_alone = launch(v2026);
  peers_alone.communicator_peers = 2;
  EXPECT_THROW(build_ncu_command(peers_alone), std::invalid_argument);
}

TEST(NcuVersions, BoostClocksAndConditionalGraphsByVersion) {
  CaptureSpec boost = launch(NcuVersion{2025, 3, 1});
  boost.clock_control = "boost";
  try {
    build_ncu_command(boost);
    ADD_FAILURE() << "boost built for 2025.3.1";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("ncu 2025.3.1 has only base, none and reset"),
              std::string::npos)
        << error.what();
  }
  boost.ncu_version = NcuVersion{2025, 4, 0};
  expect_only_listed(build_ncu_command(boost).argv, read_listing("2025.4"), "2025.4");
  boost.clock_control = "force-boost";
  boost.ncu_version = NcuVersion{2026, 1, 0};
  expect_only_listed(build_ncu_command(boost).argv, read_listing("2026.1"), "2026.1");

  CaptureSpec node = launch(NcuVersion{2025, 3, 1});
  node.graph_profiling = "node";
  std::vector<std::string> warnings = build_ncu_command(node).warnings;
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("conditional CUDA graphs") != std::string::npos;
  }));
  node.ncu_version = NcuVersion{2025, 4, 0};
  warnings = build_ncu_command(node).warnings;
  EXPECT_FALSE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
    return w.find("conditional CUDA graphs") != std::string::npos;
  }));
}

TEST(NcuVersions, CollectiveHangOffersTheCommunicatorWhereTheNcuHasIt) {
  // The console output of the recorded two-H200 hang's kind (ncu_diagnosis_test holds the real
  // recording): a collective that fails to profile.
  std::string output =
      "==PROF== Connected to process 1\n"
      "==PROF== Profiling \"ncclDevKernel_AllReduce_Sum_f32_RING_LL\" - 0: 0%\n"
      "==WARNING== Launching the workload is taking more time than expected.\n";
  auto next_of = [&](std::optional<NcuVersion> version) {
    NcuRun run{{"ncu", "--target-processes", "all"}, output, 0, false, version};
    for (const Diagnosis& d : diagnose(run)) {
      if (d.id == "collective_replay_hang") return d.next;
    }
    return std::string("(no collective_replay_hang)");
  };
  std::string old = next_of(NcuVersion{2025, 3, 1});
  EXPECT_NE(old.find("ncu 2026.1.0 and newer replay collectives"), std::string::npos) << old;
  // The same words as for an ncu of unknown version (kprof explain, which does not ask ncu,
  // must agree with capture on every recorded run).
  EXPECT_EQ(next_of(std::nullopt), old);
  std::string fresh = next_of(NcuVersion{2026, 1, 1});
  EXPECT_NE(fresh.find("this ncu (2026.1.1) replays collectives with their peers"),
            std::string::npos)
      << fresh;
  EXPECT_NE(fresh.find("--communicator shmem"), std::string::npos) << fresh;
}

}  // namespace
}  // namespace kprof::capture
