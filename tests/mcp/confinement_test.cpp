// kprof mcp's confinement (issue 39): every file a tool call reads — the argument, a bundle
// folder's report, a table — is opened beneath its root without following a link out of it,
// checked on the descriptor that is read (a regular file or a folder, nothing else), and read
// through that descriptor only, so that swapping a name for a link while a call runs shows
// nothing outside the roots. The outside files here carry a marker that no answer may hold.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "mcp/server.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof::mcp {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSecret = "SECRET_OUTSIDE_KERNEL";

// A kernel-only Chrome trace with one kernel of `name`.
std::string trace_of(const std::string& path, const std::string& name) {
  return testing::write_chrome_trace(
      path,
      R"({"ph": "X", "cat": "kernel", "name": ")" + name +
          R"(", "pid": 0, "tid": 7, "ts": 100, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 1}})");
}

struct Tree {
  std::string root, outside;
  explicit Tree(const std::string& name) {
    const std::string base = testing::fresh_dir(name);
    root = base + "/root";
    outside = base + "/outside";
    fs::create_directories(root);
    fs::create_directories(outside);
  }
};

Server server_for(const std::string& root) {
  ToolSettings settings;
  settings.doctor = false;
  return Server(Roots({root}), settings);
}

json call(Server& server, const std::string& tool, const json& arguments) {
  const json request = {{"jsonrpc", "2.0"},
                        {"id", 7},
                        {"method", "tools/call"},
                        {"params", {{"name", tool}, {"arguments", arguments}}}};
  std::optional<std::string> line = server.handle(request.dump());
  if (!line) return nullptr;
  return json::parse(*line)["result"];
}

std::string text_of(const json& result) {
  return result.is_object() ? result["content"][0]["text"].get<std::string>() : std::string();
}

TEST(McpConfinement, BundleFolderLinkOutOfRootIsRefused) {
  Tree t("mcp_bundle_link");
  // The outside capture (its kernels, its recorded command line) must never be read.
  fs::copy_file(testing::data_path("h200/bottleneck_suite_full.ncu-rep.zst"),
                t.outside + "/other.ncu-rep.zst");
  fs::create_directory(t.root + "/bundle");
  fs::create_symlink(t.outside + "/other.ncu-rep.zst", t.root + "/bundle/capture.ncu-rep.zst");
  Server server = server_for(t.root);
  for (const auto& [tool, arguments] : std::vector<std::pair<std::string, json>>{
           {"inspect", {{"reports", {"bundle"}}, {"session", true}}},
           {"analyze", {{"reports", {"bundle"}}}},
           {"diff", {{"baseline", "bundle"}, {"candidate", "bundle"}}}}) {
    const json result = call(server, tool, arguments);
    ASSERT_TRUE(result.is_object()) << tool;
    EXPECT_EQ(result["isError"], true) << tool << ": " << result.dump().substr(0, 400);
    const std::string text = text_of(result);
    EXPECT_NE(text.find("is outside the folders this server may read"), std::string::npos)
        << tool << ": " << text;
    EXPECT_EQ(result.dump().find("k_pointer_chase"), std::string::npos) << tool;
  }
}

TEST(McpConfinement, BundleEntryLinkedToStdinIsRefused) {
  Tree t("mcp_bundle_to_input");
  fs::create_directory(t.root + "/bundle");
  fs::create_symlink("/dev/stdin", t.root + "/bundle/capture.ncu-rep");
  Server server = server_for(t.root);
  const json result = call(server, "inspect", {{"reports", {"bundle"}}, {"session", true}});
  ASSERT_TRUE(result.is_object());
  EXPECT_EQ(result["isError"], true);
  const std::string text = text_of(result);
  // Refused as a link out of the root, not read (and found empty, or a terminal).
  EXPECT_TRUE(text.find("is outside the folders this server may read") != std::string::npos ||
              text.find("a symbolic link to nothing") != std::string::npos)
      << text;
  EXPECT_EQ(text.find("stdin"), std::string::npos) << text;
}

// A name swapped for a link out of the root and back again, as fast as the machine allows,
// while calls read it: whatever a call answers (the file inside, or a refusal), nothing of the
// file outside ever shows. Before the fix each call read its file once for the JSON and again
// for the text, by name, so the text showed the outside file within a few calls.
// clang defines no __SANITIZE_ADDRESS__; it answers __has_feature(address_sanitizer).
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KPROF_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KPROF_UNDER_ASAN 1
#endif

TEST(McpConfinement, SwapBetweenCheckAndOpenIsHarmless) {
#if defined(KPROF_UNDER_ASAN)
  // Under AddressSanitizer a call's process, forked while this test's swapper thread runs, was
  // seen waiting on a lock that thread held at the fork (82 s in futex_wait, scripts/
  // test-sanitizers): skipped there until calls start from a single-threaded fork server; the
  // plain build runs it.
  GTEST_SKIP() << "fork beside a running thread under AddressSanitizer (see the comment)";
#endif
  Tree t("mcp_swap");
  trace_of(t.root + "/trace.json", "inside_kernel");
  trace_of(t.outside + "/trace.json", kSecret);
  std::ofstream(t.root + "/ncu.log") << "==PROF== Disconnected from process 1\n";
  std::ofstream(t.outside + "/ncu.log") << "==ERROR== " << kSecret << "\n";
  fs::create_directory(t.root + "/bundle");
  fs::copy_file(testing::data_path("h200/two_kernels_full.ncu-rep.zst"),
                t.root + "/bundle/capture.ncu-rep.zst");
  fs::copy_file(testing::data_path("h200/bottleneck_suite_full.ncu-rep.zst"),
                t.outside + "/capture.ncu-rep.zst");
  // Each name has a twin that is a link to the outside file; the swapper exchanges the two.
  const std::vector<std::pair<std::string, std::string>> swaps = {
      {t.root + "/trace.json", t.outside + "/trace.json"},
      {t.root + "/ncu.log", t.outside + "/ncu.log"},
      {t.root + "/bundle/capture.ncu-rep.zst", t.outside + "/capture.ncu-rep.zst"}};
  for (const auto& [name, target] : swaps) fs::create_symlink(target, name + ".twin");
  std::atomic<bool> stop{false};
  std::atomic<long> exchanges{0};
  std::thread swapper([&] {
    while (!stop.load()) {
      for (const auto& swap : swaps) {
        const std::string twin = swap.first + ".twin";
        if (renameat2(AT_FDCWD, swap.first.c_str(), AT_FDCWD, twin.c_str(), RENAME_EXCHANGE) == 0) {
          ++exchanges;
        }
      }
    }
  });
  Server server = server_for(t.root);
  int answered = 0, leaked = 0;
  std::string leak, refusal;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
  for (int i = 0; i < 60 && leaked == 0 && std::chrono::steady_clock::now() < deadline; ++i) {
    for (const auto& [tool, arguments] : std::vector<std::pair<std::string, json>>{
             {"rank", {{"traces", {"trace.json"}}}},
             {"explain", {{"log", "ncu.log"}}},
             {"inspect", {{"reports", {"bundle"}}, {"kernel", "."}}}}) {
      const json result = call(server, tool, arguments);
      ASSERT_TRUE(result.is_object());
      answered += result["isError"] == false;
      if (result["isError"] == true && refusal.empty()) refusal = text_of(result);
      const std::string all = result.dump();
      if (all.find(kSecret) != std::string::npos ||
          all.find("k_pointer_chase") != std::string::npos) {
        ++leaked;
        leak = tool + ": " + all.substr(0, 600);
      }
    }
  }
  stop = true;
  swapper.join();
  EXPECT_EQ(leaked, 0) << leak;
  EXPECT_GT(answered, 0) << "no call read the file inside (the race was not run): " << refusal;
  EXPECT_GT(exchanges.load(), 0);
}

}  // namespace
}  // namespace kprof::mcp
