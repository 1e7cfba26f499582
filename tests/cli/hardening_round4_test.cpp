// Issue 39 (hardening, round 4): each broken case of the pass outside the MCP server, as a user
// meets it through the kprof binary (and the library where the binary cannot show it). One test
// per problem, named by what must hold; the problem numbers are the issue's.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/json_table.h"
#include "common/redact.h"
#include "common/text.h"
#include "render/envelope.h"
#include "support/run_process.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"
#include "timeline/fix_list.h"

namespace kprof {
namespace {

using testing::data_path;
using testing::run_process;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return run_process(args);
}

std::string write_scratch(const std::string& name, const std::string& bytes) {
  std::string path = testing::scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The one line kprof printed on stderr: exactly one line, "kprof: PATH: …".
void expect_one_line_naming(const testing::ProcessResult& result, const std::string& path) {
  ASSERT_FALSE(result.err.empty());
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
  EXPECT_EQ(result.err.rfind("kprof: " + path + ": ", 0), 0u) << result.err;
  EXPECT_TRUE(result.out.empty()) << result.out;
}

// Problem 5: 200,000 nested arrays (400 KB) crashed every table option with SIGSEGV.
TEST(HardeningRound4, JsonNestingDepthIsBounded) {
  const std::string deep =
      write_scratch("deep.json", std::string(200000, '[') + std::string(200000, ']'));
  const std::string report = data_path("h200/two_kernels_full.ncu-rep.zst");
  for (const char* option : {"--gpus", "--stages", "--expectations"}) {
    auto result = kprof({"analyze", option, deep, report});
    EXPECT_EQ(result.exit_code, 4) << option << ": " << result.err;
    expect_one_line_naming(result, deep);
    EXPECT_TRUE(contains(result.err, "byte 129: arrays and objects nested deeper than 128"))
        << result.err;
  }
  // A string's brackets are no nesting, and the bound is exact.
  const std::string at_bound =
      std::string(kMaxJsonDepth, '[') + "\"[[[{{{\"" + std::string(kMaxJsonDepth, ']');
  EXPECT_EQ(json_too_deep_at(at_bound), std::nullopt);
  EXPECT_FALSE(parse_json_or_discarded(at_bound).is_discarded());
  EXPECT_EQ(json_too_deep_at("[" + at_bound + "]"), 1u + kMaxJsonDepth);
  EXPECT_TRUE(parse_json_or_discarded("[" + at_bound + "]").is_discarded());
  // The MCP server's messages and a prediction file go through the same bound.
  auto mcp = testing::run_process_with_input(
      {KPROF_BINARY, "mcp", "--root", testing::scratch_dir()},
      "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\", \"params\": " +
          std::string(100000, '[') + std::string(100000, ']') + "}\n" +
          "{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"ping\"}\n");
  EXPECT_EQ(mcp.exit_code, 0) << mcp.err;
  EXPECT_TRUE(contains(mcp.out, "\"code\":-32700")) << mcp.out;
  EXPECT_TRUE(contains(mcp.out, "\"id\":2")) << mcp.out;
  auto predicted = kprof({"diff", "--predicted", deep, data_path("h200/pvr_eager_before.json.gz"),
                          data_path("h200/pvr_eager_after.json.gz")});
  EXPECT_EQ(predicted.exit_code, 4) << predicted.err;
  expect_one_line_naming(predicted, deep);
}

// Problem 16: a number beyond double's range in a user table was exit 1, "internal error".
TEST(HardeningRound4, OutOfRangeNumbersInUserJsonAreInputErrors) {
  const std::string report = data_path("h200/two_kernels_full.ncu-rep.zst");
  const std::string digits(400, '7');
  struct Case {
    const char* option;
    std::string text;
  };
  for (const Case& c : {Case{"--gpus", "{\"gpus\": [{\"name\": \"X\", \"sm_count\": 1e400}]}"},
                        Case{"--stages", "{\"rules\": [" + digits + "]}"},
                        Case{"--expectations", "{\"expectations\": -1e400}"}}) {
    const std::string path = write_scratch("huge.json", c.text);
    auto result = kprof({"analyze", c.option, path, report});
    EXPECT_EQ(result.exit_code, 4) << c.option << ": " << result.err;
    expect_one_line_naming(result, path);
    EXPECT_TRUE(contains(result.err, ": byte ")) << result.err;
    EXPECT_TRUE(contains(result.err, "a number out of double's range")) << result.err;
    EXPECT_FALSE(contains(result.err, "internal error")) << result.err;
  }
  try {
    parse_json_table("t.json", "{\"a\": [1, 2, 1e400]}");
    ADD_FAILURE() << "accepted";
  } catch (const InputError& error) {
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
    EXPECT_EQ(error.message(), "not JSON kprof can read: a number out of double's range (1e400)");
  }
}

// Problem 11: CLI::Range lets NaN through, so `diff --threshold nan` passed regressions (exit 0,
// not 6); options without a range took nan, inf and negative seconds.
TEST(HardeningRound4, NumericOptionsAreFiniteAndInRange) {
  const std::string before = data_path("h200/diff_suite_basic_base_a.ncu-rep.zst");
  const std::string after = data_path("h200/diff_suite_basic_slow_fp32.ncu-rep.zst");
  ASSERT_EQ(kprof({"diff", before, after}).exit_code, 6);  // a real regression
  const std::vector<std::vector<std::string>> refused = {
      {"diff", "--threshold", "nan", before, after},
      {"diff", "--threshold", "NaN", before, after},
      {"diff", "--noise-factor", "-nan", before, after},
      {"diff", "--min-coverage", "1e400", before, after},
      {"diff", "--alpha", "nan", before, after},
      {"diff", "--single-sample-floor", "inf", before, after},
      {"analyze", "--compute-threshold", "nan", before},
      {"analyze", "--memory-threshold", "nan", before},
      {"budget", "--host-bound-below", "nan", data_path("h200/budget_eager_b1.json.gz")},
      {"budget", "--kernel-bound-from", "nan", data_path("h200/budget_eager_b1.json.gz")},
      {"trace", "--delay", "inf", "--", "true"},
      {"trace", "--timeout", "-5", "--", "true"},
      {"capture", "--timeout", "nan", "--", "true"},
      {"capture", "--ready-timeout", "1e300", "--", "true"},
      {"load", "--wait-ready", "nan", "http://127.0.0.1:9"},
  };
  for (const std::vector<std::string>& args : refused) {
    auto result = kprof(args);
    EXPECT_EQ(result.exit_code, 2)
        << args[0] << " " << args[1] << " " << args[2] << ": " << result.err;
    EXPECT_TRUE(contains(result.err, "kprof: " + args[1] + ": ")) << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
  }
  // Finite values in range still parse as before.
  EXPECT_EQ(kprof({"diff", "--threshold", "5.5", "--alpha", "1e-3", before, after}).exit_code, 6);
  EXPECT_EQ(kprof({"diff", "--threshold", "1000", before, after}).exit_code, 0);
}

std::string kernel_event(const std::string& name, int ts, int correlation) {
  return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": " + nlohmann::json(name).dump() +
         ", \"pid\": 0, \"tid\": 7, \"ts\": " + std::to_string(ts) +
         ", \"dur\": 10, \"args\": {\"device\": 0, \"stream\": 7, \"correlation\": " +
         std::to_string(correlation) + "}}";
}

// Problem 10: the redactor ran over the whole of stdout, so a kernel named `token='abc` made
// `rank --json` invalid JSON (exit 0) and `void sort_key::kernel<int>(int*)` printed as
// `sort_key:***>`. Kernel names are data: printed intact, the JSON valid; the command line in the
// envelope (where a key enters) is still redacted.
TEST(HardeningRound4, RedactionNeverCorruptsOutput) {
  const std::vector<std::string> names = {"token='abc", "void sort_key::kernel<int>(int*)",
                                          "api_key: \"x\", Bearer y"};
  std::string events;
  for (size_t i = 0; i < names.size(); ++i) {
    events += (i ? ",\n" : "") +
              kernel_event(names[i], 100 + 20 * static_cast<int>(i), static_cast<int>(i) + 1);
  }
  const std::string trace = write_scratch("named.json", "{\"traceEvents\": [" + events + "]}");
  auto ranked = kprof({"rank", "--json", "--raw-names", trace});
  ASSERT_EQ(ranked.exit_code, 0) << ranked.err;
  nlohmann::json document = nlohmann::json::parse(ranked.out, nullptr, false);
  ASSERT_FALSE(document.is_discarded()) << ranked.out;
  std::vector<std::string> shown;
  for (const auto& kernel : document["kernels"]) shown.push_back(kernel["name"]);
  for (const std::string& name : names) {
    EXPECT_NE(std::find(shown.begin(), shown.end(), name), shown.end()) << name << "\n"
                                                                        << ranked.out;
  }
  // kprof's own command line is where a key enters a JSON document: its envelope's argv.
  EXPECT_EQ(render::tool_json({"kprof", "capture", "--", "srv", "--api-key", "sk-1"})["argv"],
            nlohmann::json({"kprof", "capture", "--", "srv", "--api-key", "***"}));
  auto text = kprof({"rank", "--raw-names", trace});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "void sort_key::kernel<int>(int*)")) << text.out;
  EXPECT_TRUE(contains(text.out, "token='abc")) << text.out;
  // The rule itself: a C++ scope is no "key: value".
  EXPECT_EQ(redact_secrets("void sort_key::kernel<int>(int*)"), "void sort_key::kernel<int>(int*)");
  EXPECT_EQ(redact_secrets("api_key: sk-1"), "api_key: ***");
}

const std::string kPvrTrace = "h200/pvr_graph_before.json.gz";
const std::string kPvrReport = "h200/pvr_before_full.ncu-rep.zst";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Problem 9: --annotate/--html overwrote the --gpus calibration, the --stages and --expectations
// tables and the capture inside a bundle folder; `--html X --annotate X` lost one.
TEST(HardeningRound4, NoOutputIsAnInputOrAnotherOutput) {
  const std::string folder = testing::scratch_dir() + "/outputs";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder + "/bundle");
  const std::string gpus = folder + "/gpus.json";
  std::filesystem::copy_file(data_path("h200/h200_calibration.json"), gpus);
  const std::string capture = folder + "/bundle/capture.ncu-rep.zst";
  std::filesystem::copy_file(data_path(kPvrReport), capture);
  const std::string gpus_before = read_text(gpus);
  const std::string trace = data_path(kPvrTrace);
  const std::vector<std::vector<std::string>> refused = {
      {"report", "--trace", trace, capture, "--gpus", gpus, "--html", gpus},
      {"report", "--trace", trace, capture, "--gpus", gpus, "--annotate", gpus},
      // Another spelling of the same file, and the capture a bundle folder stands for.
      {"report", "--trace", trace, folder + "/bundle", "--annotate", folder + "/./gpus.json",
       "--gpus", gpus},
      {"report", "--trace", trace, folder + "/bundle", "--annotate", capture},
      {"analyze", folder + "/bundle", "--html", capture},
      {"report", "--trace", trace, capture, "--stages", gpus, "--html", gpus},
      {"report", "--trace", trace, capture, "--expectations", gpus, "--annotate", gpus},
      // Two outputs in one file, the file not there yet: compared by path.
      {"report", "--trace", trace, capture, "--html", folder + "/x", "--annotate",
       folder + "/../outputs/x"},
  };
  for (const std::vector<std::string>& args : refused) {
    auto result = kprof(args);
    EXPECT_EQ(result.exit_code, 2) << args.back() << ": " << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_TRUE(result.out.empty());
  }
  EXPECT_EQ(read_text(gpus), gpus_before);
  EXPECT_EQ(read_text(capture), read_text(data_path(kPvrReport)));
  EXPECT_FALSE(std::filesystem::exists(folder + "/x"));
  // Distinct outputs still work.
  auto both = kprof({"report", "--trace", trace, capture, "--html", folder + "/page.html",
                     "--annotate", folder + "/annotated.json"});
  EXPECT_EQ(both.exit_code, 0) << both.err;
  EXPECT_TRUE(std::filesystem::exists(folder + "/page.html"));
  EXPECT_TRUE(std::filesystem::exists(folder + "/annotated.json"));
}

// Problem 21: `--annotate -` wrote a file named "-"; like `--html -` it prints to standard output.
TEST(HardeningRound4, AnnotateDashWritesToStandardOutput) {
  const std::string folder = testing::scratch_dir() + "/annotate_dash";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  const std::filesystem::path was = std::filesystem::current_path();
  std::filesystem::current_path(folder);
  auto result =
      kprof({"report", "--trace", data_path(kPvrTrace), data_path(kPvrReport), "--annotate", "-"});
  auto with_json = kprof({"report", "--trace", data_path(kPvrTrace), data_path(kPvrReport),
                          "--annotate", "-", "--json"});
  auto with_html = kprof({"report", "--trace", data_path(kPvrTrace), data_path(kPvrReport),
                          "--annotate", "-", "--html", "-"});
  std::filesystem::current_path(was);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(std::filesystem::exists(folder + "/-"));
  nlohmann::json annotated = nlohmann::json::parse(result.out, nullptr, false);
  ASSERT_FALSE(annotated.is_discarded()) << result.out.substr(0, 300);
  EXPECT_EQ(annotated["otherData"]["kprof"]["schema"], "kprof.annotated-trace/1");
  EXPECT_FALSE(contains(result.err, "wrote")) << result.err;
  EXPECT_EQ(with_json.exit_code, 2) << with_json.err;
  EXPECT_EQ(with_html.exit_code, 2) << with_html.err;
  EXPECT_TRUE(contains(with_html.err, "--annotate -")) << with_html.err;
}

// Problems 3 and 17: the annotated trace's `kprof source …` command was unquoted (a kernel name
// with backquotes ran a command when pasted) and unanchored (reduce_kernel selected
// splitKreduce_kernel first). One quoting function, and ^NAME$.
TEST(HardeningRound4, SuggestedSourceCommandsAreQuotedAndAnchored) {
  EXPECT_EQ(timeline::hot_spots_argv("r.ncu-rep", "reduce_kernel"),
            (std::vector<std::string>{"kprof", "source", "r.ncu-rep", "-k", "^reduce_kernel$"}));
  EXPECT_EQ(timeline::hot_spots_argv("r.ncu-rep", "void reduce_kernel<float>(float*)")[4],
            "(^|[ :])reduce_kernel([<(]|$)");
  const std::vector<std::string> argv =
      timeline::hot_spots_argv("my run.ncu-rep", "k`touch /tmp/pwned`$x;y");
  EXPECT_EQ(quoted_command(argv), "kprof source 'my run.ncu-rep' -k '^k`touch /tmp/pwned`\\$x;y$'");
  EXPECT_EQ(quoted_command({"a'b", "^x", "ok/x.ncu-rep"}), "'a'\\''b' '^x' ok/x.ncu-rep");
  // The annotated trace's hot_spots is that quoted command.
  const std::string out = testing::scratch_dir() + "/quoted_annotated.json";
  auto result =
      kprof({"report", "--trace", data_path(kPvrTrace), data_path(kPvrReport), "--annotate", out});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json annotated = nlohmann::json::parse(read_text(out));
  size_t checked = 0;
  for (const auto& event : annotated["traceEvents"]) {
    if (!event.contains("args") || !event["args"].contains("hot_spots")) continue;
    const std::string command = event["args"]["hot_spots"];
    EXPECT_EQ(command.rfind("kprof source " + data_path(kPvrReport) + " -k '^", 0), 0u) << command;
    EXPECT_EQ(command.back(), '\'') << command;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

// Problem 12: a fix list scored against another program's traces read "882 % of the prediction
// realised" (exit 0) and --outcomes-db stored it.
TEST(HardeningRound4, APredictionFromAnotherTraceIsRefusedAndNotStored) {
  const std::string folder = testing::scratch_dir() + "/prediction";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  auto fixes = kprof({"report", "--json", "--trace", data_path(kPvrTrace), data_path(kPvrReport),
                      "--gpus", data_path("h200/h200_calibration.json")});
  ASSERT_EQ(fixes.exit_code, 0) << fixes.err;
  const std::string predicted = write_scratch("prediction/fixes.json", fixes.out);
  const std::string db = folder + "/outcomes.db";
  // Its own traces: scored and stored.
  auto own = kprof({"diff", data_path(kPvrTrace), data_path("h200/pvr_graph_after.json.gz"),
                    "--predicted", predicted, "--outcomes-db", db});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_TRUE(contains(own.err, "stored")) << own.err;
  auto listed = kprof({"db", "--db", db, "predictions", "--json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  // Traces of another program: none of its groups ran there.
  const std::string other = data_path("h200/trace_compiled_decode.json.gz");
  auto mismatched =
      kprof({"diff", other, other, "--predicted", predicted, "--outcomes-db", db, "--json"});
  EXPECT_EQ(mismatched.exit_code, 5) << mismatched.err;
  EXPECT_TRUE(mismatched.out.empty()) << mismatched.out;
  EXPECT_TRUE(contains(mismatched.err, "a prediction applies to the trace it was made from"))
      << mismatched.err;
  auto listed_after = kprof({"db", "--db", db, "predictions", "--json"});
  ASSERT_EQ(listed_after.exit_code, 0) << listed_after.err;
  EXPECT_EQ(nlohmann::json::parse(listed_after.out), nlohmann::json::parse(listed.out));
}

// Runs SQL on a database file (the test's own copy).
void sql(const std::string& path, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &error), SQLITE_OK)
      << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

std::string copy_of(const std::string& data, const std::string& name) {
  const std::string path = testing::scratch_dir() + "/" + name;
  std::filesystem::copy_file(data_path(data), path,
                             std::filesystem::copy_options::overwrite_existing);
  return path;
}

// Problem 13: a text `start` was read as 0 (54 s of GPU time instead of 273 ms), 1e300
// saturated to a 292-year span. Each is refused, naming the table, the row and the column.
TEST(HardeningRound4, NsysColumnsOfTheWrongTypeAreRefusedByPlace) {
  struct Case {
    const char* set;
    const char* column;
    const char* found;
  };
  for (const Case& c :
       {Case{"start = 'abc'", "start", "text"}, Case{"end = 1e300", "end", "a real number"},
        Case{"deviceId = x'00'", "deviceId", "a blob"}}) {
    const std::string path = copy_of("h200/nsys_decode_steps.sqlite", "typed.sqlite");
    sql(path, std::string("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET ") + c.set +
                  " WHERE start = (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL)");
    auto result = kprof({"rank", path});
    EXPECT_EQ(result.exit_code, 4) << c.set << ": " << result.err;
    expect_one_line_naming(result, path);
    EXPECT_TRUE(contains(result.err, "table CUPTI_ACTIVITY_KIND_KERNEL, row ")) << result.err;
    EXPECT_TRUE(contains(result.err, " (by start time), column " + std::string(c.column) + ": " +
                                         c.found + " where nsys writes an integer"))
        << result.err;
  }
  ASSERT_EQ(kprof({"rank", data_path("h200/nsys_decode_steps.sqlite")}).exit_code, 0);
}

// Problem 14: reads of SQLite inputs wrote: -wal/-shm files beside a WAL-mode export or the
// findings database after a query, "cannot write" (exit 11) in a folder the reader cannot write.
TEST(HardeningRound4, SqliteInputsAreReadWithoutWriting) {
  const std::string folder = testing::scratch_dir() + "/readonly_sqlite";
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  const std::string export_path =
      copy_of("h200/nsys_decode_steps.sqlite", "readonly_sqlite/wal.sqlite");
  sql(export_path, "PRAGMA journal_mode=WAL");
  const std::string db = folder + "/findings.db";
  auto imported =
      kprof({"db", "--db", db, "import", data_path("h200/two_kernels_full.ncu-rep.zst")});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto expect_nothing_beside = [&](const char* when) {
    for (const std::string& file : {export_path, db}) {
      for (const char* suffix : {"-wal", "-shm", "-journal"}) {
        EXPECT_FALSE(std::filesystem::exists(file + suffix)) << when << ": " << file << suffix;
      }
    }
  };
  expect_nothing_beside("before");
  EXPECT_EQ(kprof({"rank", export_path}).exit_code, 0);
  EXPECT_EQ(kprof({"db", "--db", db, "query", "history", "-k", "."}).exit_code, 0);
  expect_nothing_beside("after reading");
  // In a folder the reader cannot write (not testable as root, who writes anywhere).
  if (geteuid() == 0) return;
  std::filesystem::permissions(
      folder, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  auto ranked = kprof({"rank", export_path});
  auto queried = kprof({"db", "--db", db, "query", "history", "-k", "."});
  std::filesystem::permissions(folder, std::filesystem::perms::owner_all);
  EXPECT_EQ(ranked.exit_code, 0) << ranked.err;
  EXPECT_EQ(queried.exit_code, 0) << queried.err;
}

// A stand-in nvdisasm: a shell script in the scratch folder.
std::string fake_nvdisasm(const std::string& name, const std::string& body) {
  const std::string path = write_scratch(name, "#!/bin/sh\n" + body);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

// Problem 7: Ctrl-C and SIGTERM stopped only the running nvdisasm; the next kernel's started, and
// with one kernel kprof exited 0. Interrupted is exit 8, at once, with nothing printed.
TEST(HardeningRound4, SourceStopsAtOnceWhenInterrupted) {
  const std::string slow = fake_nvdisasm("slow_nvdisasm", "sleep 30\n");
  for (int signal : {SIGINT, SIGTERM}) {
    const auto started = std::chrono::steady_clock::now();
    auto result = testing::run_process_signalled(
        {KPROF_BINARY, "source", data_path("h200/two_kernels_full.ncu-rep.zst"), "-k", ".",
         "--nvdisasm", slow},
        [&] { return std::chrono::steady_clock::now() - started > std::chrono::seconds(2); },
        signal, 25);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_EQ(result.exit_code, 8) << signal << ": " << result.err;
    EXPECT_LT(seconds, 10) << "one signal must stop every kernel's nvdisasm";
    EXPECT_TRUE(result.out.empty()) << result.out;
    EXPECT_TRUE(contains(result.err, "interrupted")) << result.err;
  }
}

// Problem 4: nvdisasm's stderr reached the terminal raw in source's warning (a title change, a
// screen clear, a carriage return); its temporary folder was mode 755 and the cubin 644.
TEST(HardeningRound4, NvdisasmsWordsAreEscapedAndItsCubinPrivate) {
  const std::string modes = testing::scratch_dir() + "/nvdisasm_modes.txt";
  const std::string noisy = fake_nvdisasm(
      "noisy_nvdisasm", "stat -c '%a' \"$(dirname \"$4\")\" \"$4\" > '" + modes +
                            "'\nprintf '\\033]0;pwned\\007\\033[2Jbad\\rX\\n' >&2\nexit 1\n");
  auto result = kprof({"source", data_path("h200/two_kernels_full.ncu-rep.zst"), "-k",
                       "k_stream_copy", "--nvdisasm", noisy});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(contains(result.err, "no SASS text for it")) << result.err;
  EXPECT_EQ(result.err.find('\x1b'), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find('\a'), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find('\r'), std::string::npos) << result.err;
  EXPECT_EQ(read_text(modes), "700\n600\n");
}

// Problem 15 (outside the MCP server): a newline or an ESC in a file path forged a line of
// stderr ("kprof: forged") or acted on the terminal.
TEST(HardeningRound4, AFilePathForgesNoLineInAMessage) {
  const std::string path = testing::scratch_dir() + "/x\nkprof: forged\x1b[2J.json";
  for (const char* verb : {"rank", "analyze", "budget"}) {
    auto missing = kprof({verb, path});
    EXPECT_EQ(missing.exit_code, 3) << verb << ": " << missing.err;
    EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
    EXPECT_EQ(missing.err.find('\x1b'), std::string::npos) << missing.err;
    EXPECT_TRUE(contains(missing.err, "forged")) << missing.err;
  }
  const std::string invalid = write_scratch("y\nkprof: forged.json", "{\"traceEvents\": [}");
  auto result = kprof({"rank", invalid});
  EXPECT_EQ(result.exit_code, 4) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

}  // namespace
}  // namespace kprof
