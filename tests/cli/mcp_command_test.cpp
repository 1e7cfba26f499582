// kprof mcp as a process: the loop on stdin/stdout (one reply line per request, none for a
// notification, a line over the limit refused without holding it, end of input ends it), its
// options, and the verb in --help and the shell completion.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mcp/server.h"
#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using nlohmann::json;
using testing::data_path;

testing::ProcessResult kprof(std::vector<std::string> args, const std::string& input = "") {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process_with_input(args, input);
}

std::vector<json> lines_of(const std::string& out) {
  std::vector<json> lines;
  for (std::size_t at = 0, end; (end = out.find('\n', at)) != std::string::npos; at = end + 1) {
    lines.push_back(json::parse(out.substr(at, end - at)));
  }
  return lines;
}

TEST(McpCommand, AnswersEachRequestOnItsOwnLine) {
  const std::string input =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      "{oops\n" +
      std::string(mcp::kMaxMessageBytes + 10, 'x') + "\n" +
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect","arguments":{"reports":["h200/multi_process_basic.ncu-rep.zst"],"session":true}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":3,"method":"ping"})";  // no newline at the end of input
  auto result = kprof({"mcp", "--root", std::string(KPROF_DATA_DIR)}, input);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  std::vector<json> replies = lines_of(result.out);
  ASSERT_EQ(replies.size(), 5u) << result.out.substr(0, 2000);
  EXPECT_EQ(replies[0]["result"]["protocolVersion"], "2025-06-18");
  EXPECT_EQ(replies[1]["error"]["code"], -32700);
  EXPECT_EQ(replies[2]["error"]["code"], -32600);
  EXPECT_EQ(replies[3]["id"], 2);
  EXPECT_EQ(replies[3]["result"]["isError"], false) << replies[3].dump();
  EXPECT_EQ(replies[3]["result"]["structuredContent"]["schema"], "kprof.report/1");
  EXPECT_EQ(replies[4], json::parse(R"({"jsonrpc":"2.0","id":3,"result":{}})"));
}

TEST(McpCommand, DefaultRootIsTheWorkingDirectoryAndBadRootsAreUsageErrors) {
  auto bad = kprof({"mcp", "--root", data_path("no_such_folder")});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "kprof: --root " + data_path("no_such_folder") + ": No such file or directory\n");
  auto file = kprof({"mcp", "--root", data_path("h200/README.md")});
  EXPECT_EQ(file.exit_code, 2);
  auto small = kprof({"mcp", "--max-tokens", "10"});
  EXPECT_EQ(small.exit_code, 2);
  auto no_doctor = kprof({"mcp", "--no-doctor"}, R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"
                                                 "\n");
  ASSERT_EQ(no_doctor.exit_code, 0) << no_doctor.err;
  json tools = lines_of(no_doctor.out).at(0)["result"]["tools"];
  EXPECT_EQ(tools.size(), 7u);
  EXPECT_EQ(tools.back()["name"], "explain");
}

TEST(McpCommand, InHelpAndCompletion) {
  auto help = kprof({"--help"});
  EXPECT_NE(help.out.find("  mcp "), std::string::npos) << help.out;
  auto mcp_help = kprof({"mcp", "--help"});
  EXPECT_EQ(mcp_help.exit_code, 0);
  EXPECT_NE(mcp_help.out.find("--root"), std::string::npos);
  EXPECT_NE(mcp_help.out.find("Examples:"), std::string::npos);
  auto bash = kprof({"completion", "bash"});
  EXPECT_EQ(bash.exit_code, 0);
  EXPECT_NE(bash.out.find("\"mcp\") echo \"-h --help --root --max-tokens --no-doctor\""),
            std::string::npos)
      << bash.out.substr(0, 3000);
  auto man = kprof({"manpage"});
  EXPECT_NE(man.out.find("mcp"), std::string::npos);
}

}  // namespace
}  // namespace kprof
