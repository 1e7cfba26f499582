// The MCP handler: JSON-RPC framing and errors, initialize's version negotiation, the tool list
// and its schemas, and tool calls on the real recordings of data/h200 — structuredContent equal
// to the pipeline's own --json, compact text within its budget, every failure a tool error with
// kprof's message.
#include "mcp/server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/redact.h"
#include "pipeline/analyze.h"
#include "pipeline/traces.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof::mcp {
namespace {

using nlohmann::json;
using testing::data_path;

Server data_server(std::size_t tokens = kDefaultTokenBudget) {
  ToolSettings settings;
  settings.token_budget = tokens;
  settings.doctor = false;  // it describes this machine: tested through the CLI's doctor tests
  return Server(Roots({std::string(KPROF_DATA_DIR)}), settings);
}

json reply_of(Server& server, const json& request) {
  std::optional<std::string> line = server.handle(request.dump());
  EXPECT_TRUE(line.has_value()) << request.dump();
  if (!line) return nullptr;
  EXPECT_EQ(line->find('\n'), std::string::npos);
  return json::parse(*line);
}

json call(Server& server, const std::string& tool, const json& arguments) {
  return reply_of(server, {{"jsonrpc", "2.0"},
                           {"id", 7},
                           {"method", "tools/call"},
                           {"params", {{"name", tool}, {"arguments", arguments}}}})["result"];
}

int error_code(Server& server, const std::string& line) {
  std::optional<std::string> reply = server.handle(line);
  if (!reply) return 0;
  json parsed = json::parse(*reply);
  return parsed.contains("error") ? parsed["error"]["code"].get<int>() : 1;
}

TEST(McpServer, InitializeAnswersTheClientsVersionWhenSupported) {
  Server server = data_server();
  for (const char* version : {"2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05"}) {
    json reply = reply_of(server, {{"jsonrpc", "2.0"},
                                   {"id", "a"},
                                   {"method", "initialize"},
                                   {"params",
                                    {{"protocolVersion", version},
                                     {"capabilities", json::object()},
                                     {"clientInfo", {{"name", "t"}, {"version", "1"}}}}}});
    EXPECT_EQ(reply["id"], "a");
    EXPECT_EQ(reply["result"]["protocolVersion"], version);
    EXPECT_EQ(reply["result"]["serverInfo"]["name"], "kprof");
    EXPECT_TRUE(reply["result"]["capabilities"].contains("tools"));
  }
  json other = reply_of(server, {{"jsonrpc", "2.0"},
                                 {"id", 1},
                                 {"method", "initialize"},
                                 {"params", {{"protocolVersion", "1999-01-01"}}}});
  EXPECT_EQ(other["result"]["protocolVersion"], kSupportedVersions[0]);
}

TEST(McpServer, JsonRpcErrorsAndNotifications) {
  Server server = data_server();
  EXPECT_EQ(error_code(server, "{not json"), -32700);
  EXPECT_EQ(error_code(server, "[1,2]"), -32600);
  EXPECT_EQ(error_code(server, "\"hello\""), -32600);
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"2.0","id":1})"), -32600);
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"1.0","id":1,"method":"ping"})"), -32600);
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"2.0","id":null,"method":"ping"})"), -32600);
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})"), -32600);
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"2.0","id":1,"method":7})"), -32600);
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"2.0","id":1,"method":"resources/list"})"), -32601);
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]})"),
            -32602);
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})"),
            -32602);
  // Notifications and responses are never answered, whatever they say.
  EXPECT_FALSE(server.handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_FALSE(server.handle(R"({"jsonrpc":"2.0","method":"no/such"})"));
  EXPECT_FALSE(server.handle(R"({"jsonrpc":"2.0","method":"tools/call","params":7})"));
  EXPECT_FALSE(server.handle(R"({"jsonrpc":"2.0","id":3,"result":{}})"));
  EXPECT_FALSE(server.handle(""));
  EXPECT_FALSE(server.handle("  \r"));
  EXPECT_EQ(error_code(server, R"({"jsonrpc":"2.0","id":2,"method":"ping"})"), 1);
  json pong = json::parse(*server.handle(R"({"jsonrpc":"2.0","id":2,"method":"ping"} )"));
  EXPECT_EQ(pong, json::parse(R"({"jsonrpc":"2.0","id":2,"result":{}})"));
  EXPECT_EQ(error_code(server, std::string(kMaxMessageBytes + 1, ' ')), -32600);
}

TEST(McpServer, ListsTheEightToolsWithSchemas) {
  ToolSettings settings;
  Server server(Roots({std::string(KPROF_DATA_DIR)}), settings);
  json tools = reply_of(
      server, {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}})["result"]["tools"];
  std::vector<std::string> names;
  for (const json& tool : tools) {
    names.push_back(tool["name"]);
    EXPECT_EQ(tool["inputSchema"]["type"], "object");
    EXPECT_EQ(tool["inputSchema"]["additionalProperties"], false);
    EXPECT_TRUE(tool["inputSchema"]["properties"].contains("detail"));
    EXPECT_FALSE(tool["description"].get<std::string>().empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"analyze", "inspect", "rank", "budget", "report",
                                             "diff", "explain", "doctor"}));
  EXPECT_EQ(tools[0]["inputSchema"]["required"], json::array({"reports"}));
  EXPECT_EQ(tools[4]["inputSchema"]["required"], json::array({"trace", "reports"}));
  EXPECT_EQ(tools[2]["inputSchema"]["properties"]["by"]["enum"],
            json::array({"kernel", "op", "module", "range"}));
  settings.doctor = false;
  EXPECT_EQ(tool_names(settings).size(), 7u);
}

TEST(McpServer, AnalyzeIsTheCliJsonAndItsTextWithinTheBudget) {
  Server server = data_server();
  const std::string report = data_path("h200/bottleneck_suite_full.ncu-rep.zst");
  json result = call(server, "analyze", {{"reports", {"h200/bottleneck_suite_full.ncu-rep.zst"}}});
  ASSERT_EQ(result["isError"], false) << result.dump();
  pipeline::AnalyzeOptions options;
  const std::string real = std::filesystem::canonical(report).string();
  options.paths = {real};
  options.json = true;
  const std::vector<std::string> argv = {"kprof", "analyze", real, "--json"};
  EXPECT_EQ(result["structuredContent"],
            json::parse(redact_secrets(pipeline::analyze(options, argv).out)));
  EXPECT_EQ(result["structuredContent"]["tool"]["argv"], argv);
  const std::string text = result["content"][0]["text"];
  EXPECT_EQ(result["content"][0]["type"], "text");
  EXPECT_EQ(text.rfind("$ kprof analyze " + real + " --json\n", 0), 0u) << text;
  EXPECT_LE(text.size(), kDefaultTokenBudget * 4);
  EXPECT_NE(text.find("k_pointer_chase"), std::string::npos);
}

TEST(McpServer, ASmallBudgetCutsRowsAndDetailFullGivesThemAll) {
  Server server = data_server(256);
  json args = {{"traces", {"h200/trace_eager.json.gz"}}, {"top", 60}};
  json compact = call(server, "rank", args);
  const std::string cut = compact["content"][0]["text"];
  EXPECT_LE(cut.size(), 256u * 4);
  EXPECT_NE(cut.find(" more rows; call again with detail=full\n"), std::string::npos) << cut;
  args["detail"] = "full";
  json full = call(server, "rank", args);
  const std::string all = full["content"][0]["text"];
  EXPECT_GT(all.size(), 256u * 4);
  EXPECT_EQ(all.find("call again with detail=full"), std::string::npos);
  EXPECT_EQ(compact["structuredContent"], full["structuredContent"]);
}

TEST(McpServer, ReportGivesTheFixListAndSaysWhatIsNotRecorded) {
  Server server = data_server();
  json result = call(server, "report",
                     {{"trace", "h200/trace_compiled_decode.json.gz"},
                      {"reports", {"h200/compiled_decode_full.ncu-rep.zst"}},
                      {"gpus", "h200/h200_calibration.json"}});
  ASSERT_EQ(result["isError"], false) << result.dump();
  const std::string text = result["content"][0]["text"];
  // Ten groups: six to speed up, four near the GPU's kernel floor listed to fuse or remove.
  EXPECT_NE(text.find("fix list: 6 kernel groups"), std::string::npos) << text;
  EXPECT_NE(text.find("fuse or remove: 4 groups"), std::string::npos) << text;
  EXPECT_NE(text.find("— : not in this report"), std::string::npos);
  EXPECT_TRUE(result["structuredContent"].contains("fix_list"));
  const std::vector<std::string> argv = result["structuredContent"]["tool"]["argv"];
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[2], "--trace");
  EXPECT_EQ(argv.back(), "--json");
}

TEST(McpServer, ARegressionIsAnAnswerNotAnError) {
  Server server = data_server();
  json result = call(server, "diff",
                     {{"baseline", "h200/diff_suite_basic_base_a.ncu-rep.zst"},
                      {"candidate", "h200/diff_suite_basic_slow_fp32.ncu-rep.zst"}});
  EXPECT_EQ(result["isError"], false);
  EXPECT_NE(result["content"][0]["text"].get<std::string>().find(
                "exit 6: a regression (kprof diff exits 6)"),
            std::string::npos);
}

// The diff tool's pair, min_coverage and no_auto_pair are the CLI's --pair (one per item),
// --min-coverage and --no-auto-pair: the renamed kernel of issue 43's captures paired by hand.
TEST(McpServer, DiffPairsRenamedKernelsAndSaysTheCoverage) {
  ToolSettings settings;
  settings.doctor = false;
  const std::string fixtures = std::string(KPROF_TESTS_DIR) + "/analysis/data/renamed_kernel";
  Server server(Roots({fixtures}), settings);
  json args = {{"baseline", "vectorize_raw.csv"},
               {"candidate", "warp_tile_raw.csv"},
               {"no_auto_pair", true}};
  json unpaired = call(server, "diff", args);
  ASSERT_EQ(unpaired["isError"], false) << unpaired.dump();
  EXPECT_EQ(unpaired["structuredContent"]["coverage"]["sufficient"], false);
  EXPECT_NE(unpaired["content"][0]["text"].get<std::string>().find(
                "exit 13: the kernels compared cover too little of a side's GPU time"),
            std::string::npos)
      << unpaired["content"][0]["text"];
  args["pair"] = {"vectorize=warp_tile"};
  args["min_coverage"] = 90;
  json paired = call(server, "diff", args);
  ASSERT_EQ(paired["isError"], false) << paired.dump();
  const json& answer = paired["structuredContent"];
  EXPECT_EQ(answer["pairs"][0]["request"], "vectorize=warp_tile");
  EXPECT_EQ(answer["min_coverage_pct"], 90);
  EXPECT_EQ(answer["regressions"], 1);
  std::vector<std::string> argv = answer["tool"]["argv"];
  auto flag = std::find(argv.begin(), argv.end(), "--pair");
  ASSERT_NE(flag, argv.end());
  ASSERT_NE(flag + 1, argv.end());
  EXPECT_EQ(*(flag + 1), "vectorize=warp_tile");
  args["pair"] = {"nothing=warp_tile"};
  json none = call(server, "diff", args);
  EXPECT_EQ(none["isError"], true);
  EXPECT_EQ(none["structuredContent"]["exit_code"], 5);
}

std::string error_text(const json& result) {
  EXPECT_EQ(result["isError"], true) << result.dump();
  return result["content"][0]["text"];
}

TEST(McpServer, EveryFailureIsAToolErrorWithKprofsMessage) {
  Server server = data_server();
  EXPECT_EQ(error_text(call(server, "frobnicate", json::object())),
            "kprof: unknown tool \"frobnicate\"; the tools are analyze, inspect, rank, budget, "
            "report, diff, explain");
  EXPECT_EQ(error_text(call(server, "analyze", json::object())),
            "kprof: argument 'reports' is required");
  EXPECT_EQ(error_text(call(server, "analyze", {{"reports", "x"}})),
            "kprof: argument 'reports': expected an array of paths, got a string");
  EXPECT_EQ(error_text(call(server, "analyze", {{"reports", json::array()}})),
            "kprof: argument 'reports': give at least one path");
  EXPECT_EQ(error_text(call(server, "rank", {{"traces", {"t"}}, {"top", -1}})),
            "kprof: argument 'top': expected an integer from 0 to 1000000000, got -1");
  EXPECT_EQ(error_text(call(server, "rank", {{"traces", {"t"}}, {"by", "step"}})),
            "kprof: argument 'by': expected one of kernel, op, module, range, got \"step\"");
  EXPECT_EQ(error_text(call(server, "budget", {{"traces", {"t"}}, {"colour", 1}})),
            "kprof: argument 'colour': budget takes no such argument (it takes traces, step, "
            "host_bound_below, kernel_bound_from, detail)");
  EXPECT_EQ(error_text(call(server, "budget", {{"traces", {"t"}}, {"detail", "all"}})),
            "kprof: argument 'detail': expected \"compact\" or \"full\"");
  EXPECT_EQ(error_text(call(server, "inspect",
                            {{"reports", {"h200/two_kernels_full.ncu-rep.zst"}},
                             {"session", true},
                             {"kernel", "k"}})),
            "kprof: argument 'session' excludes 'kernel'");
  json not_object = reply_of(server, json::parse(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",
      "params":{"name":"analyze","arguments":[1]}})"))["result"];
  EXPECT_EQ(error_text(not_object), "kprof: arguments: expected an object, got an array");
  const std::string data = std::filesystem::canonical(KPROF_DATA_DIR).string();
  EXPECT_EQ(error_text(call(server, "analyze", {{"reports", {"h200/no_such.ncu-rep"}}})),
            "kprof: " + data + "/h200/no_such.ncu-rep: cannot open: No such file or directory");
  EXPECT_EQ(error_text(call(server, "analyze", {{"reports", {"h200/README.md"}}}))
                .rfind("kprof: " + data + "/h200/README.md: byte 0: not a format kprof reads", 0),
            0u);
  const std::string outside = error_text(call(server, "rank", {{"traces", {"/etc/passwd"}}}));
  EXPECT_EQ(outside.rfind("kprof: argument 'traces': /etc/passwd is outside the folders this "
                          "server may read (" +
                              data,
                          0),
            0u)
      << outside;
  EXPECT_EQ(error_text(call(server, "analyze",
                            {{"reports", {"h200/big_full.ncu-rep.zst"}}, {"kernel", "("}}))
                .rfind("kprof: --kernel \"(\" is not a valid regular expression", 0),
            0u);
}

TEST(McpServer, ExplainTakesTheNcuCommandLineAfterItsOptions) {
  Server server = data_server();
  json result =
      call(server, "explain",
           {{"log", "h200/ncu-outputs/env_wrapper.out"},
            {"exit_code", 0},
            {"ncu_argv", {"ncu", "--launch-count", "1", "--", "env", "FOO=1", "./diag"}}});
  EXPECT_EQ(result["isError"], false) << result.dump();
  const std::vector<std::string> argv = result["structuredContent"]["tool"]["argv"];
  const std::string log =
      std::filesystem::canonical(data_path("h200/ncu-outputs/env_wrapper.out")).string();
  EXPECT_EQ(argv, (std::vector<std::string>{"kprof", "explain", log, "--exit-code", "0", "--json",
                                            "--", "ncu", "--launch-count", "1", "--", "env",
                                            "FOO=1", "./diag"}));
  const std::string text = result["content"][0]["text"];
  EXPECT_NE(text.find("exit 7: the ncu run failed or profiled nothing"), std::string::npos);
  EXPECT_NE(text.find("notes:\n"), std::string::npos) << text;
}

// A FIFO inside a root: the server must not wait for a writer that never comes (before the fix
// rank and explain blocked in open() for ever, and survived stdin closing). Refused, at once, as
// not a regular file or folder.
TEST(McpServer, FifoInRootIsRefusedNotHung) {
  const std::string root = testing::fresh_dir("mcp_fifo");
  ASSERT_EQ(mkfifo((root + "/trace.json").c_str(), 0600), 0);
  ToolSettings settings;
  settings.doctor = false;
  Server server(Roots({root}), settings);
  for (const auto& [tool, arguments] :
       std::vector<std::pair<std::string, json>>{{"rank", {{"traces", {"trace.json"}}}},
                                                 {"explain", {{"log", "trace.json"}}},
                                                 {"analyze", {{"reports", {"trace.json"}}}}}) {
    std::future<json> answer = std::async(
        std::launch::async,
        [&server, tool = tool, arguments = arguments] { return call(server, tool, arguments); });
    bool hung = answer.wait_for(std::chrono::seconds(20)) != std::future_status::ready;
    // Unblock a hung reader (a writer that opens and closes: end of file), so the test ends.
    for (int i = 0;
         i < 60 && answer.wait_for(std::chrono::milliseconds(500)) != std::future_status::ready;
         ++i) {
      int writer = open((root + "/trace.json").c_str(), O_WRONLY | O_NONBLOCK);
      if (writer >= 0) close(writer);
    }
    ASSERT_EQ(answer.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_FALSE(hung) << tool << " waited on the FIFO";
    json result = answer.get();
    EXPECT_EQ(result["isError"], true) << tool;
    EXPECT_NE(result["content"][0]["text"].get<std::string>().find("not a regular file or folder"),
              std::string::npos)
        << tool << ": " << result.dump();
  }
}

// Ids are echoed as the client wrote them: an integer past 64 bits came back as a float
// (1.2345678901234568e+29), which no client can match to its request.
TEST(McpServer, HugeRequestIdEchoedExactly) {
  Server server = data_server();
  for (const std::string id :
       {"123456789012345678901234567890", "-98765432109876543210987654321", "18446744073709551616",
        "1.50", "-0", "1e400", "2E+3", R"("a\u0062\/c")", R"("\ud83d\ude00")"}) {
    for (const std::string& method : {std::string("ping"), std::string("no/such")}) {
      const std::string request =
          R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":")" + method + R"("})";
      std::optional<std::string> reply = server.handle(request);
      ASSERT_TRUE(reply) << request;
      EXPECT_EQ(reply->rfind("{\"id\":" + id + ",", 0), 0u) << *reply;
    }
    const std::string call_request =
        R"({"jsonrpc":"2.0","id":)" + id +
        R"(,"method":"tools/call","params":{"name":"rank","arguments":{"traces":["no_such.json"]}}})";
    std::optional<std::string> reply = server.handle(call_request);
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->rfind("{\"id\":" + id + ",", 0), 0u) << *reply;
  }
}

// A file name with a line break and a terminal escape: the answer's command line and every error
// show them escaped (\n, \x1b), never a second line or an escape the terminal acts on.
TEST(McpMessages, NewlineInPathIsEscaped) {
  const std::string root = testing::fresh_dir("mcp_newline");
  const std::string name = "a\nkprof: forged line\x1b[2J.json";
  testing::write_chrome_trace(
      root + "/" + name,
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 100, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 1}})");
  std::ofstream(root + "/" + name + ".ncu-rep") << "not a report";
  ToolSettings settings;
  settings.doctor = false;
  Server server(Roots({root}), settings);
  auto check = [](const json& result, bool error) {
    EXPECT_EQ(result["isError"], error) << result.dump();
    const std::string text = result["content"][0]["text"];
    EXPECT_EQ(text.find("\nkprof: forged"), std::string::npos) << text;
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_NE(text.find("a\\nkprof: forged line\\x1b[2J.json"), std::string::npos) << text;
    if (error) {
      EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    }
  };
  check(call(server, "rank", {{"traces", {name}}}), false);
  check(call(server, "analyze", {{"reports", {name + ".ncu-rep"}}}), true);
  check(call(server, "analyze", {{"reports", {name + ".missing"}}}), true);
  check(call(server, "diff", {{"baseline", name}, {"candidate", name + ".ncu-rep"}}), true);
}

// serve() on pipes, as kprof mcp runs it on stdin and stdout: the lines given, then the end of
// input; what it wrote, and how long it took to return.
struct Served {
  std::string out;
  double seconds = 0;
};

Served serve_lines(Server& server, const std::string& lines) {
  int in[2], out[2];
  EXPECT_EQ(pipe(in), 0);
  EXPECT_EQ(pipe(out), 0);
  const auto began = std::chrono::steady_clock::now();
  std::thread loop([&] {
    server.serve(in[0], out[1]);
    close(out[1]);
  });
  EXPECT_EQ(write(in[1], lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  close(in[1]);
  Served served;
  char buffer[65536];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) {
    served.out.append(buffer, static_cast<std::size_t>(n));
  }
  loop.join();
  served.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  close(in[0]);
  close(out[0]);
  return served;
}

// A cancelled call's work stops there: its process is killed, so the server, which waits for
// the calls it started once its input ends, returns at once rather than after the call's minute.
TEST(McpServer, ACancelledCallsWorkStops) {
  ToolSettings settings;
  settings.doctor = false;
  settings.test_delay = std::chrono::seconds(60);
  Server server(Roots({std::string(KPROF_DATA_DIR)}), settings);
  Served served = serve_lines(
      server,
      R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"rank","arguments":{"traces":["h200/trace_eager.json.gz"]}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"ping"})"
      "\n");
  EXPECT_EQ(served.out, R"({"id":2,"jsonrpc":"2.0","result":{}})"
                        "\n");
  EXPECT_LT(served.seconds, 30);
}

// A call past its time limit is stopped and answered with a tool error naming the limit; the
// calls beside it are not held up.
TEST(McpServer, ACallPastItsTimeLimitIsStopped) {
  ToolSettings settings;
  settings.doctor = false;
  settings.test_delay = std::chrono::seconds(60);
  settings.call_timeout = std::chrono::milliseconds(300);
  Server server(Roots({std::string(KPROF_DATA_DIR)}), settings);
  json result = call(server, "rank", {{"traces", {"h200/trace_eager.json.gz"}}});
  EXPECT_EQ(result["isError"], true);
  EXPECT_EQ(result["content"][0]["text"],
            "kprof: rank stopped after 0.3 s, the time limit of a call (kprof mcp "
            "--call-timeout)");
  EXPECT_EQ(result["structuredContent"]["exit_code"], 8);
  Served served = serve_lines(
      server,
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"rank","arguments":{"traces":["h200/trace_eager.json.gz"]}}})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"
      "\n");
  ASSERT_EQ(std::count(served.out.begin(), served.out.end(), '\n'), 2) << served.out;
  EXPECT_EQ(served.out.rfind(R"({"id":2,)", 0), 0u) << served.out;
  EXPECT_NE(served.out.find("stopped after 0.3 s"), std::string::npos);
  EXPECT_LT(served.seconds, 30);
}

}  // namespace
}  // namespace kprof::mcp
