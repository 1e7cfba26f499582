// User tables (--gpus, --stages, --expectations) are checked against their schema
// (docs/kprof.*.schema.json): a wrong key, type or value is one error naming the file and the
// entry, never a value kprof silently ignores or compares to a measurement it can never equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/analysis_tables.h"
#include "analysis/stages.h"
#include "analysis/verdict.h"
#include "common/error.h"
#include "common/json_table.h"
#include "hardware/gpu_specs.h"

namespace kprof::analysis {
namespace {

using nlohmann::json;

// The message of the InputError a table's text raises (empty when none).
template <typename Load>
std::string error_of(Load load, const std::string& text) {
  try {
    load("user.json", text);
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_EQ(error.path(), "user.json");
    EXPECT_EQ(std::string(error.what()).find('\n'), std::string::npos) << error.what();
    return error.message();
  }
  return "";
}

std::string stages_error(const std::string& text) { return error_of(parse_stage_table, text); }
std::string expectations_error(const std::string& text) {
  return error_of(parse_expectations, text);
}
std::string gpus_error(const std::string& text) {
  return error_of(hardware::load_gpu_database_text, text);
}

TEST(UserTables, TheShippedTablesPassTheirOwnSchema) {
  EXPECT_NO_THROW(check_json_table(json::parse(builtin_stages_json()), stages_schema_json(),
                                   "data/stages.json"));
  EXPECT_NO_THROW(check_json_table(json::parse(builtin_expectations_json()),
                                   expectations_schema_json(), "data/expected_bottlenecks.json"));
  EXPECT_NO_THROW(check_json_table(json::parse(hardware::builtin_gpus_json()),
                                   hardware::gpus_schema_json(), "data/gpus.json"));
  // And load as user files, as a user copying them would.
  EXPECT_EQ(stages_error(builtin_stages_json()), "");
  EXPECT_EQ(expectations_error(builtin_expectations_json()), "");
  EXPECT_EQ(gpus_error(hardware::builtin_gpus_json()), "");
}

// An expectation can only be met by a value the verdict can produce: the schema's list is the
// verdict's units plus latency (a latency-bound kernel), nvlink and mixed.
TEST(UserTables, ExpectedValuesAreWhatVerdictsName) {
  json schema = json::parse(expectations_schema_json());
  std::set<std::string> allowed;
  for (const json& value :
       schema["properties"]["expectations"]["items"]["properties"]["expected"]["enum"]) {
    allowed.insert(value.get<std::string>());
  }
  std::set<std::string> measurable = {"latency", "nvlink", "mixed"};
  for (const std::string& unit : bottleneck_units()) measurable.insert(unit);
  EXPECT_EQ(allowed, measurable);
  for (const char* unit : {"dram", "l2", "l1", "tensor", "fp32", "fp64", "alu", "lsu"}) {
    EXPECT_TRUE(allowed.count(unit)) << unit;
  }
}

TEST(UserTables, AnExpectationOutsideTheKnownUnitsIsRefused) {
  // The issue's case: "DRAM" was accepted, then every kernel "contradicted" it (measured dram).
  std::string message = expectations_error(
      R"({"expectations": [{"platform": "H200", "kernel": "nvjet", "expected": "DRAM"}]})");
  EXPECT_NE(message.find(R"(expectations[0] (kernel "nvjet"): expected: "DRAM" is not one of: )"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("dram"), std::string::npos);
}

TEST(UserTables, EachKindOfMistakeNamesTheEntryAndWhat) {
  struct Case {
    std::string (*load)(const std::string&);
    std::string text;
    std::string expected;  // a part of the message
  };
  const std::vector<Case> cases = {
      {expectations_error,
       R"({"expectations": [{"platform": "H200", "kernel": "a", "expected": "dram"},
                            {"platform": "H200", "kernel": "b", "expect": "dram"}]})",
       R"(expectations[1] (kernel "b"): unknown key "expect" (known keys: expected, kernel, )"},
      {expectations_error, R"({"expectations": [{"platform": "H200", "kernel": "b"}]})",
       R"(expectations[0] (kernel "b"): missing key "expected")"},
      {expectations_error,
       R"({"expectations": [{"platform": "H200", "kernel": "b", "expected": "dram", "note": 1}]})",
       R"(expectations[0] (kernel "b"): unknown key "note" (known keys: )"},
      {expectations_error,
       R"({"expectations": [{"platform": "H200", "kernel": 5, "expected": "dram"}]})",
       "expectations[0]: kernel: expected a string, found a number (5)"},
      {expectations_error,
       R"({"expectations": [{"platform": "H200", "kernel": "(", "expected": "dram"}]})",
       R"(expectations[0] (kernel "("): kernel: regex "(" does not compile: )"},
      {expectations_error,
       R"({"expectations": [{"platform": "H[", "kernel": "x", "expected": "dram"}]})",
       R"(expectations[0] (kernel "x"): platform: regex "H[" does not compile)"},
      {expectations_error, R"({"schema": "kprof.stages/1", "expectations": []})",
       R"(top level: schema: "kprof.stages/1" is not one of: kprof.expectations/1)"},
      {stages_error, R"({"rules": {"stage": "gemm", "regex": "gemm"}})",
       "top level: rules: expected an array, found an object"},
      {stages_error, R"({"rules": [{"stage": "", "regex": "gemm"}]})",
       R"(rules[0] (stage ""): stage: must not be empty)"},
      {stages_error, "{\"rules\": [{\"stage\": \"\\u001b[31mgemm\", \"regex\": \"gemm\"}]}",
       "stage: a stage name holds no control characters"},
      {stages_error, R"({"rules": [{"stage": "gemm", "regex": "gemm"}], "rule": []})",
       R"(top level: unknown key "rule" (known keys: )"},
      {stages_error, R"({"rules": [{"stage": "gemm", "regex": "gemm("}]})",
       R"(rules[0] (stage "gemm"): regex: regex "gemm(" does not compile)"},
      {stages_error, "[]", "top level: expected an object, found an array"},
      {gpus_error, R"({"gpus": [{"name": "X", "memory_bandwidth_tbs": "4.8"}]})",
       R"(gpus[0] (name "X"): memory_bandwidth_tbs: expected a number, found a string ("4.8"))"},
      {gpus_error, R"({"gpus": [{"name": "X", "sms": -1}]})",
       R"(gpus[0] (name "X"): sms: must be greater than 0, found -1)"},
      {gpus_error, R"({"gpus": [{"name": "X", "peak_tflops": {"fp16": 100}}]})",
       R"(gpus[0] (name "X"): peak_tflops: unknown key "fp16" (known keys: )"},
      {gpus_error, R"({"gpus": [{"name": "X", "cc": "nine"}]})",
       R"(gpus[0] (name "X"): cc: expected a compute capability MAJOR.MINOR)"},
      {gpus_error, R"({"gpus": [{"name": "X", "match": "("}]})",
       R"(gpus[0] (name "X"): match: regex "(" does not compile)"},
      {gpus_error, R"({"gpus": [{"name": "X", "sources": {"memory": "a", "power": "b"}}]})",
       R"(gpus[0] (name "X"): sources: unknown key "power")"},
      {gpus_error, R"({"gpus": [{"match": "X"}]})", R"(gpus[0]: missing key "name")"},
      {gpus_error, R"({"gpus": [], "sources": {"S1": 1}})",
       "top level: sources.S1: expected a string, found a number (1)"},
      {gpus_error, R"({"gpus": [)", "not valid JSON"},
  };
  for (const Case& c : cases) {
    std::string message = c.load(c.text);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "table: " << c.text << "\nmessage: " << message << "\nexpected: " << c.expected;
  }
}

TEST(UserTables, GoodUserTablesStillLoad) {
  StageTable stages =
      parse_stage_table("user.json", R"({"rules": [{"stage": "suite", "regex": "^k_"}]})");
  ASSERT_EQ(stages.rules.size(), 1u);
  EXPECT_EQ(stages.stage_of_name("k_fp32_fma"), "suite");
  ExpectationTable expectations = parse_expectations(
      "user.json",
      R"({"expectations": [{"platform": "H200", "kernel": "k_dram", "expected": "dram"}]})");
  ASSERT_EQ(expectations.expectations.size(), 1u);
  hardware::GpuDatabase gpus = hardware::load_gpu_database_text(
      "user.json", R"({"gpus": [{"name": "H200 SXM", "match": "H200", "cc": "9.0",
                                  "memory_bandwidth_tbs": 9.6, "sources": {"memory": "test"}}]})");
  ASSERT_NE(gpus.find_by_name("H200 SXM"), nullptr);
  EXPECT_EQ(gpus.find_by_name("H200 SXM")->memory_bandwidth_tbs, 9.6);
}

}  // namespace
}  // namespace kprof::analysis
