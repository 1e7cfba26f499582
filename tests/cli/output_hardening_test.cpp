// kprof as a user runs it on hostile or odd inputs: short CSV rows, control characters and
// invalid UTF-8 in names, absurd trace durations, options out of range (issue 11).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;
using testing::run_process;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return run_process(args);
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// ncu's details-page header with "Metric Unit" moved after "Metric Value".
const std::string kUnitAfterValueHeader =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
    "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\","
    "\"Metric Value\",\"Metric Unit\",\"Rule Name\",\"Rule Type\",\"Rule Description\","
    "\"Estimated Speedup Type\",\"Estimated Speedup\"\n";

TEST(OutputHardening, CsvRowEndingBeforeTheUnitColumnIsExitFourWithItsLine) {
  std::string path = write_temp(
      "unit_after_value.csv",
      kUnitAfterValueHeader +
          "\"0\",\"516\",\"m\",\"127.0.0.1\",\"k(float *)\",\"1\",\"7\",\"(256, 1, 1)\","
          "\"(4, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"DRAM Frequency\","
          "\"3.14\"\n");
  for (const char* verb : {"analyze", "inspect"}) {
    auto result = kprof({verb, path});
    EXPECT_EQ(result.exit_code, 4) << verb << ": " << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err.rfind("kprof: " + path + ": line 2: ", 0), 0u) << result.err;
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// A kernel name that tries everything a terminal acts on: an OSC title sequence, a colour
// sequence, CR/LF that would start a forged line, a right-to-left override; plus a quote and a
// comma for CSV.
const std::string kHostileName =
    "evil\x1b]0;pwned\x07\x1b[31m\r\nkprof: forged \"q\", \xE2\x80\xAE"
    "desrever(float *)";

// The two-kernel raw export with the first kernel renamed (CSV quoting doubles the quote).
std::string hostile_csv() {
  std::string csv_name = replace_all(kHostileName, "\"", "\"\"");
  return write_temp("hostile.csv",
                    replace_all(read_file(data_path("h200/multi_process_basic_raw.csv")),
                                "k_second_process(float *)", csv_name));
}

// Nothing a terminal would act on: no control character but the line feed, no bidi control.
void expect_terminal_safe(const std::string& text, const std::string& what) {
  for (unsigned char c : text) {
    EXPECT_FALSE((c < 0x20 && c != '\n') || c == 0x7f) << what << " holds byte " << int(c) << ":\n"
                                                       << text;
  }
  EXPECT_EQ(text.find("\xE2\x80\xAE"), std::string::npos) << what;
  EXPECT_EQ(text.find("\nkprof: forged"), std::string::npos) << what;
}

TEST(OutputHardening, TextOutputsShowControlCharactersInNamesAsEscapes) {
  std::string path = hostile_csv();
  const std::string shown = "evil\\x1b]0;pwned\\x07\\x1b[31m\\r\\nkprof: forged";
  for (std::vector<std::string> args :
       {std::vector<std::string>{"analyze", "--name-width", "200", path},
        {"analyze", "--summary", "--name-width", "200", path},
        {"inspect", "-m", "gpu__time_duration.sum$", path},
        {"inspect", "--session", path}}) {
    args.push_back("--sort");
    args.push_back("id");
    if (args[0] == "inspect") args.resize(args.size() - 2);
    auto result = kprof(args);
    ASSERT_EQ(result.exit_code, 0) << args[1] << result.err;
    expect_terminal_safe(result.out, args[0] + " " + args[1]);
    if (args[1] != "--session") {
      EXPECT_NE(result.out.find(shown), std::string::npos) << result.out;
      EXPECT_NE(result.out.find("\\u202edesrever"), std::string::npos) << result.out;
    }
  }
  // Errors that list names (no kernel matched) too.
  auto nothing = kprof({"analyze", "-k", "no_such_kernel", path});
  EXPECT_EQ(nothing.exit_code, 5);
  expect_terminal_safe(nothing.err, "the no-match error");
  EXPECT_NE(nothing.err.find(shown), std::string::npos) << nothing.err;
}

TEST(OutputHardening, CsvOutputKeepsNamesExactlyUnderRfc4180Quoting) {
  auto result = kprof({"analyze", "--csv", "--sort", "id", hostile_csv()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // Read back by an RFC 4180 reader: Python's csv module (quotes, commas, CR/LF in fields).
  std::string script =
      "import csv,sys,json\n"
      "rows=list(csv.reader(open(sys.argv[1],newline='',encoding='utf-8')))\n"
      "print(json.dumps([len(rows),sorted(set(len(r) for r in rows)),rows[1][2]]))\n";
  std::string out_path = write_temp("verdicts.csv", result.out);
  std::string script_path = write_temp("read_csv.py", script);
  auto read = run_process({"/usr/bin/python3", script_path, out_path});
  ASSERT_EQ(read.exit_code, 0) << read.err;
  auto parsed = nlohmann::json::parse(read.out);
  EXPECT_EQ(parsed[0], 3);                           // header and two kernels
  EXPECT_EQ(parsed[1].size(), 1u) << parsed.dump();  // every row has the header's field count
  EXPECT_EQ(parsed[2], kHostileName);
}

TEST(OutputHardening, JsonOutputsSurviveNamesThatAreNotUtf8) {
  std::string csv = write_temp(
      "not_utf8.csv",
      replace_all(read_file(data_path("h200/multi_process_basic_raw.csv")), "k_second_process",
                  "k_s\xFF\xFE"
                  "cond_process"));
  const std::string repaired =
      "k_s\xEF\xBF\xBD\xEF\xBF\xBD"
      "cond_process(float *)";
  auto analyzed = kprof({"analyze", "--json", "--sort", "id", csv});
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  EXPECT_EQ(nlohmann::json::parse(analyzed.out)["kernels"][0]["target"], repaired);
  auto inspected = kprof({"inspect", "--json", "-m", "^$", csv});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_EQ(nlohmann::json::parse(inspected.out)["reports"][0]["kernels"][0]["name"], repaired);

  std::string trace = write_temp(
      "not_utf8.json",
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
      "\"ProfilerStep#1\\udc80\", \"ts\": 0, \"dur\": 100},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 1, "
      "\"dur\": 1, \"args\": {\"correlation\": 7}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\xFF\", \"ts\": 10, \"dur\": 20, "
      "\"args\": {\"correlation\": 7}}]}");
  auto ranked = kprof({"rank", "--json", trace});
  ASSERT_EQ(ranked.exit_code, 0) << ranked.err;
  EXPECT_EQ(nlohmann::json::parse(ranked.out)["kernels"][0]["name"], "k\xEF\xBF\xBD");
  auto budget = kprof({"budget", "--json", "--step", "ProfilerStep", trace});
  ASSERT_EQ(budget.exit_code, 0) << budget.err;
  EXPECT_EQ(nlohmann::json::parse(budget.out)["steps"][0]["name"], "ProfilerStep#1\xEF\xBF\xBD");
}

// A trace with absurd times: 1e300 us, negative durations, a timestamp out of any range.
TEST(OutputHardening, TraceEventsWithImpossibleTimesAreSkippedWithOneWarning) {
  std::string trace = write_temp(
      "absurd.json",
      "{\"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"good\", \"ts\": 10, \"dur\": 20},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"huge\", \"ts\": 40, \"dur\": 1e300},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"good\", \"ts\": 50, \"dur\": -5},"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 0, \"dur\": -1e300},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"far\", \"ts\": 1e300, \"dur\": 1},"
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"ts\": 0, \"dur\": 60}]}");
  auto result = kprof({"rank", trace});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "kprof: warning: " + trace +
                            ": skipped 4 events with an impossible time (first \"huge\" at byte " +
                            std::to_string(read_file(trace).find(
                                "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"huge\"")) +
                            ": duration 1e+300 us is longer than 1e12 us (11.6 days)); the rest of "
                            "the trace is used\n");
  // Only the good kernel counts: 20 us of GPU time over a 60 us span.
  EXPECT_NE(result.out.find("1 GPU activities (1 kernels, 0 memcpy, 0 memset) of 2 events; GPU "
                            "time 0.020 ms (summed durations) over a 0.060 ms trace span"),
            std::string::npos)
      << result.out;
  EXPECT_EQ(result.out.find("000,000"), std::string::npos) << result.out;
  auto json = nlohmann::json::parse(kprof({"rank", "--json", trace}).out);
  EXPECT_EQ(json["gpu_time_us"], 20);
  EXPECT_EQ(json["kernels"].size(), 1u);
  auto budget = kprof({"budget", trace});
  EXPECT_EQ(budget.exit_code, 0) << budget.err;
  EXPECT_NE(budget.err.find("skipped 4 events"), std::string::npos) << budget.err;
}

TEST(OutputHardening, TraceTextOutputsShowControlCharactersAsEscapes) {
  // JSON escapes carry the same characters a C++ profiler would write raw.
  std::string trace = write_temp(
      "hostile.json",
      "{\"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\\r\\nkprof: "
      "forged\\u202e\", \"ts\": 0, \"dur\": 100},"
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"ts\": 1, "
      "\"dur\": 1, \"args\": {\"correlation\": 7}},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\\u001b]0;pwned\\u0007\\u009b2J\", "
      "\"ts\": 10, \"dur\": 20, \"args\": {\"correlation\": 7}}]}");
  for (std::vector<std::string> args : {std::vector<std::string>{"rank", trace},
                                        {"rank", "--per-step", "--step", "ProfilerStep", trace},
                                        {"budget", "--step", "ProfilerStep", trace}}) {
    auto result = kprof(args);
    ASSERT_EQ(result.exit_code, 0) << args[0] << ": " << result.err;
    expect_terminal_safe(result.out, args[0] + " " + args[1]);
    if (args[0] == "rank") {
      EXPECT_NE(result.out.find("k\\x1b]0;pwned\\x07\\u009b2J"), std::string::npos) << result.out;
    }
    if (args[1] != trace) {
      EXPECT_NE(result.out.find("ProfilerStep#1\\r\\nkprof: forged\\u202e"), std::string::npos)
          << result.out;
    }
  }
}

TEST(OutputHardening, InspectKeepsLongValuesOutOfTheValueColumn) {
  std::string report = data_path("h200/two_kernels_full.ncu-rep.zst");
  auto text = kprof({"inspect", "-m", "breakdown:|^launch__grid_size$", report});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  auto json = nlohmann::json::parse(
      kprof({"inspect", "--json", "-m", "breakdown:|^launch__grid_size$", report}).out);
  const auto& metrics = json["reports"][0]["kernels"][0]["metrics"];
  size_t long_values = 0;
  for (const auto& [name, value] : metrics.items()) {
    if (!value.is_string()) continue;
    ++long_values;
    std::string expected = value.get<std::string>();
    ASSERT_GT(expected.size(), 1000u) << name;  // the case at hand: ncu's breakdown lists
    // The value follows its metric's row on lines of its own; joined, they are the whole value.
    size_t row = text.out.find("\n" + name + " ");
    ASSERT_NE(row, std::string::npos) << name;
    std::string joined;
    size_t at = text.out.find('\n', row + 1) + 1;
    while (text.out.compare(at, 4, "    ") == 0) {
      size_t end = text.out.find('\n', at);
      joined += text.out.substr(at + 4, end - at - 4);
      at = end + 1;
    }
    EXPECT_EQ(joined, expected) << name;
  }
  EXPECT_GE(long_values, 3u);
  size_t longest = 0, start = 0;
  for (size_t end; (end = text.out.find('\n', start)) != std::string::npos; start = end + 1) {
    longest = std::max(longest, end - start);
  }
  // The widest line is the report's description; no table line is padded to a long value.
  EXPECT_LT(longest, 200u) << text.out;
  size_t grid_row = text.out.find("\nlaunch__grid_size ");
  ASSERT_NE(grid_row, std::string::npos);
  std::string grid_line =
      text.out.substr(grid_row + 1, text.out.find('\n', grid_row + 1) - grid_row - 1);
  EXPECT_LT(grid_line.size(), 140u) << grid_line;
}

TEST(OutputHardening, InspectSessionPrintsTheSessionAndNoKernel) {
  std::string report = data_path("h200/multi_process_basic.ncu-rep.zst");
  auto result = kprof({"inspect", "--session", report});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("\nsession\n"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("  device "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("  process "), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("kernel 0:"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("metric"), std::string::npos) << result.out;
  auto json = nlohmann::json::parse(kprof({"inspect", "--session", "--json", report}).out);
  EXPECT_EQ(json["reports"][0]["kernels"].size(), 0u);
  EXPECT_EQ(json["reports"][0]["kernel_count"], 2);
  // Kernel options make no sense with it: a usage error, not silently ignored.
  EXPECT_EQ(kprof({"inspect", "--session", "-m", "x", report}).exit_code, 2);
  EXPECT_EQ(kprof({"inspect", "--session", "--rules", report}).exit_code, 2);
}

TEST(OutputHardening, NameWidthIsValidatedAndHonouredEverywhere) {
  std::string report = data_path("h200/big_min_raw.csv");
  const std::string name = "nvjet_sm90_tst_128x16_64x11_4x1_v_bz_NNT";
  // 12 characters: 11 of the name and the ellipsis.
  const std::string cut = name.substr(0, 11) + "…";
  for (std::vector<std::string> args :
       {std::vector<std::string>{"analyze", "--summary", "--name-width", "12", report},
        {"analyze", "--name-width", "12", report}}) {
    auto result = kprof(args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find(" " + cut + " "), std::string::npos) << args[1] << result.out;
    EXPECT_EQ(result.out.find(name), std::string::npos) << args[1];
  }
  auto ranked = kprof({"rank", "--name-width", "12", data_path("h200/budget_eager_b1.json.gz")});
  ASSERT_EQ(ranked.exit_code, 0) << ranked.err;
  EXPECT_NE(ranked.out.find(" nvjet_sm90_…"), std::string::npos) << ranked.out;
  for (const char* width : {"-1", "0", "7", "abc"}) {
    EXPECT_EQ(kprof({"analyze", "--summary", "--name-width", width, report}).exit_code, 2) << width;
    EXPECT_EQ(kprof({"analyze", "--name-width", width, report}).exit_code, 2) << width;
    EXPECT_EQ(
        kprof({"rank", "--name-width", width, data_path("h200/budget_eager_b1.json.gz")}).exit_code,
        2)
        << width;
  }
  EXPECT_EQ(kprof({"analyze", "--name-width", "8", report}).exit_code, 0);
}

TEST(OutputHardening, TraceCommandsHelpNamesBothInputs) {
  for (const char* verb : {"rank", "budget"}) {
    auto help = kprof({verb, "--help"});
    ASSERT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("PyTorch profiler trace"), std::string::npos) << verb;
    EXPECT_NE(help.out.find("Nsight Systems SQLite export"), std::string::npos) << verb;
  }
  // And the export does read.
  EXPECT_EQ(kprof({"rank", data_path("h200/nsys_decode_steps.sqlite")}).exit_code, 0);
}

TEST(OutputHardening, AnalyzeOnATraceSuggestsTheTraceCommands) {
  std::string trace = data_path("h200/budget_eager_b1.json.gz");
  for (const char* verb : {"analyze", "inspect"}) {
    auto result = kprof({verb, trace});
    EXPECT_EQ(result.exit_code, 4) << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_NE(result.err.find("not an Nsight Compute report but gzip-compressed"),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("`kprof rank " + trace + "` or `kprof budget " + trace + "`"),
              std::string::npos)
        << result.err;
  }
  auto sqlite = kprof({"analyze", data_path("h200/nsys_decode_steps.sqlite")});
  EXPECT_EQ(sqlite.exit_code, 4);
  EXPECT_NE(sqlite.err.find("an SQLite database, as Nsight Systems exports are"), std::string::npos)
      << sqlite.err;
}

TEST(OutputHardening, NsysNegativeDurationsAreSkippedWithAWarning) {
  std::string path = ::testing::TempDir() + "/negative.sqlite";
  std::filesystem::copy_file(data_path("h200/nsys_decode_steps.sqlite"), path,
                             std::filesystem::copy_options::overwrite_existing);
  auto before = nlohmann::json::parse(kprof({"rank", "--json", path}).out);
  std::string script =
      "import sqlite3,sys\n"
      "db=sqlite3.connect(sys.argv[1])\n"
      "db.execute('UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - 5 WHERE rowid IN "
      "(SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 3)')\n"
      "db.commit()\n";
  ASSERT_EQ(run_process({"/usr/bin/python3", write_temp("negative.py", script), path}).exit_code,
            0);
  auto result = kprof({"rank", "--json", path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("skipped 3 events with an impossible time (first kernel \""),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("duration -0.005 us is negative"), std::string::npos) << result.err;
  auto after = nlohmann::json::parse(result.out);
  EXPECT_EQ(after["gpu_events"].get<int>(), before["gpu_events"].get<int>() - 3);
}

}  // namespace
}  // namespace kprof
