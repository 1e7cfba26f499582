// Every JSON format kprof writes validates against its schema in docs/ (draft 7, through
// valijson, as kprof checks its users' tables), on real outputs: the built kprof run on the
// committed H200 captures, traces and ncu console outputs, the committed capture bundles and
// cleanup receipts, and a bundle written now by `kprof capture` against the stand-in ncu. And
// each schema refuses a document of its format with a required field missing or of the wrong
// type, so that a validation that passes says something.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/json_table.h"
#include "support/fake_server.h"
#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using testing::data_path;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// check_json_table keeps parsed schemas by the address of their text: one text per schema, kept
// for the whole run.
const char* schema_text(const std::string& name) {
  static std::map<std::string, std::string> texts;
  auto [it, added] = texts.try_emplace(name);
  if (added) {
    it->second =
        read_file(std::string(KPROF_TESTS_DIR) + "/../docs/kprof." + name + ".schema.json");
  }
  return it->second.c_str();
}

// "" when document is valid, else the validator's first complaint.
std::string violation(const std::string& schema, const json& document) {
  EXPECT_FALSE(std::string(schema_text(schema)).empty())
      << "docs/kprof." << schema << ".schema.json";
  try {
    check_json_table(document, schema_text(schema), "kprof." + schema);
    return "";
  } catch (const InputError& error) {
    return error.what();
  }
}

void expect_valid(const std::string& schema, const json& document, const std::string& what) {
  std::string why = violation(schema, document);
  EXPECT_EQ(why, "") << what;
}

// The document printed by `kprof ARGS`, which must exit with `exit_code`.
json kprof_json(std::vector<std::string> args, int exit_code = 0) {
  args.insert(args.begin(), KPROF_BINARY);
  testing::ProcessResult result = testing::run_process(args);
  EXPECT_EQ(result.exit_code, exit_code) << args[1] << ": " << result.err;
  try {
    return json::parse(result.out);
  } catch (const json::exception& error) {
    ADD_FAILURE() << args[1] << ": not JSON: " << error.what();
    return json();
  }
}

// A value of a JSON type no field of kprof's formats takes beside its own: a boolean, or for a
// boolean a string.
json wrong_type(const json& value) { return value.is_boolean() ? json("wrong") : json(true); }

// The schema refuses the document with one required field removed, and with a field's value of
// the wrong type: at the top (or in an array's first entry) and one level further in.
void expect_refusals(const std::string& schema, json document) {
  ASSERT_EQ(violation(schema, document), "");
  json& entry = document.is_array() ? document.at(0) : document;
  ASSERT_TRUE(entry.is_object() && !entry.empty());
  json schema_json = json::parse(schema_text(schema));
  json required =
      schema_json.contains("items") ? schema_json["items"]["required"] : schema_json["required"];
  ASSERT_FALSE(required.empty()) << schema << ": the schema requires no field";
  for (const json& field : required) {
    json missing = document;
    (missing.is_array() ? missing.at(0) : missing).erase(field.get<std::string>());
    EXPECT_NE(violation(schema, missing), "") << schema << ": accepted without " << field;
    json mistyped = document;
    json& value = (mistyped.is_array() ? mistyped.at(0) : mistyped)[field.get<std::string>()];
    value = wrong_type(value);
    EXPECT_NE(violation(schema, mistyped), "") << schema << ": accepted a mistyped " << field;
  }
  // One level in: the first array of objects, its first entry's fields.
  for (auto& [key, value] : entry.items()) {
    if (!value.is_array() || value.empty() || !value.at(0).is_object()) continue;
    for (auto& [inner_key, inner] : value.at(0).items()) {
      json mistyped = document;
      json& target = (mistyped.is_array() ? mistyped.at(0) : mistyped)[key].at(0)[inner_key];
      target = wrong_type(inner);
      EXPECT_NE(violation(schema, mistyped), "")
          << schema << ": accepted a mistyped " << key << "[0]." << inner_key;
    }
    break;
  }
}

class OutputSchemas : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("kprof-schemas-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(OutputSchemas, Report) {
  std::vector<std::vector<std::string>> runs = {
      {"inspect", "--json", data_path("h200/two_kernels_full.ncu-rep.zst")},
      {"inspect", "--json", "--instances", "-m", "^sm__", data_path("h200/big_full.ncu-rep.zst")},
      {"inspect", "--json", "--session", data_path("h200/multi_process_basic.ncu-rep.zst")},
      {"inspect", "--json", data_path("h200/big_min_details.csv.zst")},
      {"inspect", "--json", data_path("h200/multi_process_basic_raw.csv")}};
  for (const auto& args : runs) expect_valid("report", kprof_json(args), args.back());
  expect_refusals("report", kprof_json(runs[0]));
}

// kprof source --json: with line tables and SASS (two_kernels_full's k_stream_copy was built with
// -lineinfo; the SASS from a stand-in replaying nvdisasm's H200 output), without either (the
// bottleneck suite), and a kernel whose result has no per-PC counters (unavailable).
TEST_F(OutputSchemas, Source) {
  const std::string nvdisasm = std::string(KPROF_TESTS_DIR) + "/support/replay_nvdisasm.py";
  std::vector<std::vector<std::string>> runs = {
      {"source", "--json", "-k", ".", "--top", "3", "--nvdisasm", nvdisasm,
       data_path("h200/two_kernels_full.ncu-rep.zst")},
      {"source", "--json", "-k", ".", "--top", "2", "--no-sass",
       data_path("h200/bottleneck_suite_full.ncu-rep.zst")},
      {"source", "--json", "-k", "nvjet_sm90_tst_256x128", data_path("h200/big_min.ncu-rep.zst")}};
  for (const auto& args : runs) expect_valid("source", kprof_json(args), args.back());
  json with_lines = kprof_json(runs[0]);
  ASSERT_FALSE(with_lines["kernels"].at(0)["lines"].empty());
  EXPECT_TRUE(with_lines["kernels"].at(0)["hottest"].at(0)["line"].is_object());
  EXPECT_TRUE(kprof_json(runs[2])["kernels"].at(0).contains("unavailable"));
  expect_refusals("source", with_lines);
  // One level further than expect_refusals goes: an instruction's fields.
  json mistyped = with_lines;
  mistyped["kernels"].at(0)["hottest"].at(0)["samples"] = "many";
  EXPECT_NE(violation("source", mistyped), "");
  json missing = with_lines;
  missing["kernels"].at(0)["hottest"].at(0).erase("offset");
  EXPECT_NE(violation("source", missing), "");
}

TEST_F(OutputSchemas, RankAndRankSteps) {
  for (const char* trace :
       {"trace_eager.json.gz", "nsys_decode_steps.sqlite", "tracer_graph_decode.json.gz",
        "trace_compile.json.gz", "tracer_two_device.json.gz"}) {
    expect_valid("rank", kprof_json({"rank", "--json", data_path(std::string("h200/") + trace)}),
                 trace);
  }
  expect_valid("rank",
               kprof_json({"rank", "--json", "--raw-names", data_path("h200/trace_eager.json.gz")}),
               "--raw-names");
  expect_refusals("rank", kprof_json({"rank", "--json", data_path("h200/trace_eager.json.gz")}));

  std::vector<std::vector<std::string>> steps = {
      {"rank", "--json", "--per-step", data_path("h200/budget_eager_decode.json.gz")},
      {"rank", "--json", "--per-step", data_path("h200/nsys_decode_steps.sqlite"), "--step",
       "^decode"},
      {"rank", "--json", "--per-step", data_path("h200/trace_eager.json.gz")}};
  for (const auto& args : steps) expect_valid("rank-steps", kprof_json(args), args[3]);
  expect_refusals("rank-steps", kprof_json(steps[0]));
}

TEST_F(OutputSchemas, RankByOp) {
  std::vector<std::vector<std::string>> runs = {
      {"rank", "--json", "--by", "op", data_path("h200/trace_eager.json.gz")},
      {"rank", "--json", "--by", "op", data_path("h200/budget_graph_decode.json.gz")},
      {"rank", "--json", "--by", "op", data_path("h200/nsys_decode_steps.sqlite")},
      {"rank", "--json", "--by", "module", data_path("h200/trace_eager.json.gz")}};
  for (const auto& args : runs) expect_valid("rank-ops", kprof_json(args), args[4]);
  expect_refusals("rank-ops", kprof_json(runs[0]));
}

// A trace of kprof's tracer with its graph node table (tests/timeline/data/
// make_graph_node_trace.py): graph_nodes filled in, each of its parts required and typed.
TEST_F(OutputSchemas, RankByGraphNodes) {
  std::string trace = std::string(KPROF_TESTS_DIR) + "/timeline/data/tracer_graph_nodes.json";
  for (const char* by : {"op", "module", "range"}) {
    json document = kprof_json({"rank", "--json", "--by", by, trace});
    expect_valid("rank-ops", document, by);
    ASSERT_TRUE(document["graph_nodes"].is_object()) << by;
    for (const char* part : {"table", "replayed", "attributed", "inferred", "unattributed",
                             "graph_capture_ignored", "graphs"}) {
      json missing = document;
      missing["graph_nodes"].erase(part);
      EXPECT_NE(violation("rank-ops", missing), "") << "accepted without graph_nodes." << part;
      json mistyped = document;
      mistyped["graph_nodes"][part] = wrong_type(mistyped["graph_nodes"][part]);
      EXPECT_NE(violation("rank-ops", mistyped), "") << "accepted a mistyped graph_nodes." << part;
    }
    for (auto& [key, value] : document["graph_nodes"]["graphs"].at(0).items()) {
      json mistyped = document;
      mistyped["graph_nodes"]["graphs"][0][key] = wrong_type(value);
      EXPECT_NE(violation("rank-ops", mistyped), "") << "accepted a mistyped graphs[0]." << key;
    }
    json unlayered = document;
    unlayered["graph_nodes"]["graphs"][0]["layers"]["from"] = "guessed";
    EXPECT_NE(violation("rank-ops", unlayered), "") << "accepted layers.from \"guessed\"";
  }
}

TEST_F(OutputSchemas, Budget) {
  std::vector<std::vector<std::string>> runs = {
      {"budget", "--json", data_path("h200/budget_eager_decode.json.gz")},
      {"budget", "--json", data_path("h200/budget_graph_decode.json.gz")},
      {"budget", "--json", data_path("h200/budget_eager_prefill4096.json.gz")},
      {"budget", "--json", data_path("h200/nsys_decode_steps.sqlite"), "--step", "^decode"},
      {"budget", "--json", data_path("h200/trace_eager.json.gz")},
      {"budget", "--json", data_path("h200/tracer_two_device.json.gz")}};
  for (const auto& args : runs) expect_valid("budget", kprof_json(args), args[2]);
  expect_refusals("budget", kprof_json(runs[0]));
}

// Several ranks' traces: the two processes of tracer_two_process_{a,b} as two ranks.
TEST_F(OutputSchemas, RanksRankAndBudget) {
  std::vector<std::string> ranks = {data_path("h200/tracer_two_process_a.json.gz"),
                                    data_path("h200/tracer_two_process_b.json.gz")};
  json ranking = kprof_json({"rank", "--json", ranks[0], ranks[1]});
  expect_valid("rank-ranks", ranking, "rank over two ranks");
  expect_refusals("rank-ranks", ranking);
  json budget = kprof_json({"budget", "--json", ranks[0], ranks[1]});
  expect_valid("budget-ranks", budget, "budget over two ranks");
  expect_refusals("budget-ranks", budget);
}

TEST_F(OutputSchemas, Diff) {
  std::string base = data_path("h200/diff_suite_basic_base_a.ncu-rep.zst");
  json regression = kprof_json(
      {"diff", "--json", base, data_path("h200/diff_suite_basic_slow_fp32.ncu-rep.zst")}, 6);
  expect_valid("diff", regression, "a regression");
  expect_valid(
      "diff",
      kprof_json({"diff", "--json", base, data_path("h200/diff_suite_basic_base_b.ncu-rep.zst")}),
      "unchanged");
  expect_valid("diff",
               kprof_json({"diff", "--json", data_path("h200/big_full.ncu-rep.zst"),
                           data_path("h200/big_basic.ncu-rep.zst")}),
               "full against basic");
  std::string db = (dir_ / "f.db").string();
  testing::run_process({KPROF_BINARY, "db", "--db", db, "import", base,
                        data_path("h200/diff_suite_basic_slow_fp32.ncu-rep.zst")});
  expect_valid("diff", kprof_json({"diff", "--json", "--db", db, "1", "2"}, 6), "--db");
  expect_refusals("diff", regression);
  // Issue 43's renamed kernel: paired automatically, by --pair, and not at all (the kernels not
  // compared and the pair kprof would not make on its own).
  const std::string renamed = std::string(KPROF_TESTS_DIR) + "/analysis/data/renamed_kernel/";
  const std::string vectorize = renamed + "vectorize_raw.csv",
                    warp_tile = renamed + "warp_tile_raw.csv";
  json paired = kprof_json({"diff", "--json", vectorize, warp_tile}, 6);
  expect_valid("diff", paired, "paired automatically");
  EXPECT_EQ(paired["pairs"].size(), 1u);
  expect_valid("diff",
               kprof_json({"diff", "--json", vectorize, warp_tile, "--no-auto-pair", "--pair",
                           "vectorize=warp_tile"},
                          6),
               "--pair");
  json unpaired = kprof_json({"diff", "--json", vectorize, warp_tile, "--no-auto-pair"}, 13);
  expect_valid("diff", unpaired, "not paired");
  EXPECT_EQ(unpaired["hints"].size(), 1u);
  EXPECT_EQ(unpaired["unmatched_baseline"].size(), 1u);
  expect_refusals("diff", unpaired);
}

TEST_F(OutputSchemas, TraceDiff) {
  std::string eager = data_path("h200/budget_eager_decode.json.gz");
  std::string graph = data_path("h200/budget_graph_decode.json.gz");
  json improved = kprof_json({"diff", "--json", eager, graph});
  expect_valid("trace-diff", improved, "eager against graph");
  expect_valid("trace-diff", kprof_json({"diff", "--json", graph, eager}, 6), "a regression");
  expect_valid("trace-diff",
               kprof_json({"diff", "--json", data_path("h200/trace_eager.json.gz"),
                           data_path("h200/trace_compile.json.gz")}),
               "no steps");
  expect_valid("trace-diff",
               kprof_json({"diff", "--json", data_path("h200/nsys_decode_steps.sqlite"), eager,
                           "--step", "^decode|^ProfilerStep"},
                          6),
               "nsys against PyTorch");
  expect_refusals("trace-diff", improved);
}

TEST_F(OutputSchemas, ExplainOnEveryRecordedNcuRun) {
  std::string folder = data_path("h200/ncu-outputs");
  json last;
  size_t runs = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().extension() != ".cmd") continue;
    std::string name = entry.path().stem().string();
    std::istringstream command(read_file(entry.path().string()));
    std::vector<std::string> args = {
        KPROF_BINARY,
        "explain",
        folder + "/" + name + ".out",
        "--exit-code",
        std::to_string(std::stoi(read_file(folder + "/" + name + ".rc"))),
        "--json",
        "--"};
    for (std::string word; command >> word;) args.push_back(word);
    testing::ProcessResult result = testing::run_process(args);
    ASSERT_TRUE(result.exit_code == 0 || result.exit_code == 7) << name << ": " << result.err;
    last = json::parse(result.out);
    expect_valid("explain", last, name);
    ++runs;
  }
  EXPECT_GE(runs, 15u);
  expect_refusals("explain", kprof_json({"explain", folder + "/target_crash.out", "--exit-code",
                                         "11", "--json", "--", "ncu", "./diag", "crash"},
                                        7));
}

TEST_F(OutputSchemas, DoctorHereAndOnAnotherRoot) {
  // This machine's answer (ready or not) and one read under another root.
  testing::ProcessResult here = testing::run_process({KPROF_BINARY, "doctor", "--json"});
  ASSERT_TRUE(here.exit_code == 0 || here.exit_code == 9) << here.err;
  expect_valid("doctor", json::parse(here.out), "this machine");
  json other = kprof_json({"doctor", "--json", "--root", data_path("h200/ncu-outputs"), "--ncu",
                           data_path("no_such_ncu")},
                          9);
  expect_valid("doctor", other, "--root");
  expect_refusals("doctor", other);
}

TEST_F(OutputSchemas, GpusListing) {
  expect_valid("gpus-listing", kprof_json({"gpus", "--json", "H200"}), "H200");
  expect_valid(
      "gpus-listing",
      kprof_json({"gpus", "--json", "--gpus", data_path("h200/h200_calibration.json"), "H200"}),
      "calibrated");
  json all = kprof_json({"gpus", "--json"});
  expect_valid("gpus-listing", all, "all");
  expect_refusals("gpus-listing", all);
}

// kprof load against the OpenAI stand-in: a load that completed (latencies), one whose every
// request failed (latency null, failures by cause), and one after a readiness wait.
TEST_F(OutputSchemas, Load) {
  testing::FakeServer server({"--fake-ms-per-token", "1"});
  ASSERT_TRUE(server.started()) << server.why_not();
  json ok = kprof_json({"load", "--url", server.url(), "-c", "2", "-n", "6", "--output-len", "2",
                        "--wait-ready", "10", "--json", "-"});
  expect_valid("load", ok, "completed");
  expect_refusals("load", ok);
  json figures = ok["load"];
  EXPECT_EQ(figures["cancelled"], 0);  // written always; optional in the schema, as bundles
                                       // written before kprof counted it have none
  for (const auto& [key, value] : figures.items()) {  // the bundle's load block: each field held
    if (key == "cancelled") continue;
    json missing = ok;
    missing["load"].erase(key);
    EXPECT_NE(violation("load", missing), "") << "accepted load without " << key;
  }
  testing::FakeServer failing({"--fake-ms-per-token", "1", "--fake-fail-every", "1"});
  ASSERT_TRUE(failing.started()) << failing.why_not();
  json failed = kprof_json(
      {"load", "--url", failing.url(), "-n", "4", "--output-len", "2", "--json", "-"}, 12);
  expect_valid("load", failed, "all failed");
  EXPECT_TRUE(failed["load"]["latency_ms"].is_null());
  json bad_cause = failed;
  bad_cause["load"]["failures_by_cause"]["oops"] = 1;
  EXPECT_NE(violation("load", bad_cause), "") << "accepted an unknown cause";
}

// kprof plan --json (issue 41): a plan over a probe's budget with its proposal, and one that fits.
TEST_F(OutputSchemas, Plan) {
  std::vector<std::string> args = {"plan",
                                   "--json",
                                   "--trace",
                                   data_path("h200/tracer_eager_decode.json.gz"),
                                   "-k",
                                   "nvjet",
                                   "--preset",
                                   "full",
                                   "--liveness-probe",
                                   "10:3"};
  std::vector<std::string> over_args = args;
  over_args.insert(over_args.end(), {"-c", "40"});
  json over = kprof_json(over_args, 14);
  expect_valid("plan", over, "over a limit");
  expect_refusals("plan", over);
  EXPECT_FALSE(over["proposal"].is_null());
  std::vector<std::string> fits_args = args;
  fits_args.insert(fits_args.end(), {"-c", "1"});
  json fits = kprof_json(fits_args, 0);
  expect_valid("plan", fits, "fits");
  EXPECT_TRUE(fits["proposal"].is_null());
}

TEST_F(OutputSchemas, SelftestJudgements) {
  json passed = kprof_json(
      {"selftest", "--judge", data_path("h200/selftest_h200_full.ncu-rep.zst"), "--json"});
  expect_valid("selftest", passed, "the selftest capture");
  expect_valid("selftest",
               kprof_json({"selftest", "--judge",
                           data_path("h200/bottleneck_suite_full.ncu-rep.zst"), "--json"},
                          6),
               "the bottleneck suite (mismatches)");
  expect_refusals("selftest", passed);
}

TEST_F(OutputSchemas, DbQueries) {
  std::string db = (dir_ / "f.db").string();
  testing::run_process({KPROF_BINARY, "db", "--db", db, "import",
                        data_path("h200/big_full.ncu-rep.zst"),
                        data_path("h200/two_kernels_full.ncu-rep.zst"), "--model", "m"});
  testing::run_process(
      {KPROF_BINARY, "calibrate", "--from", data_path("h200/h200_calibration.json"), "--db", db});
  json history = kprof_json({"db", "--db", db, "query", "history", "--json"});
  ASSERT_FALSE(history.empty());
  expect_valid("db-history", history, "history");
  expect_refusals("db-history", history);
  for (const char* by : {"stage", "model", "gpu"}) {
    json worst = kprof_json({"db", "--db", db, "query", "worst", "--by", by, "--json"});
    ASSERT_FALSE(worst.empty()) << by;
    expect_valid("db-worst", worst, by);
    if (std::string(by) == "model") expect_refusals("db-worst", worst);
  }
  json facts = kprof_json({"db", "--db", db, "facts", "--json"});
  ASSERT_FALSE(facts.empty());
  expect_valid("db-facts", facts, "facts");
  expect_refusals("db-facts", facts);
  // A fix list checked against two traces (the compiled decode against itself with its steps
  // renamed: nothing realised), stored, listed.
  std::string fixes = (dir_ / "fixes.json").string();
  {
    auto report = testing::run_process({KPROF_BINARY, "report", "--json", "--trace",
                                        data_path("h200/trace_compiled_decode.json.gz"),
                                        data_path("h200/compiled_decode_full.ncu-rep.zst")});
    ASSERT_EQ(report.exit_code, 0) << report.err;
    std::ofstream(fixes) << report.out;
  }
  json checked = kprof_json({"diff", "--json", data_path("h200/trace_compiled_decode.json.gz"),
                             data_path("h200/trace_compiled_decode_vllm_steps.json.gz"),
                             "--predicted", fixes, "--outcomes-db", db});
  expect_valid("trace-diff", checked, "with --predicted");
  ASSERT_TRUE(checked.contains("predicted"));
  EXPECT_FALSE(checked["predicted"]["groups"].empty());
  json outcomes = kprof_json({"db", "--db", db, "predictions", "--json"});
  ASSERT_EQ(outcomes.size(), checked["predicted"]["groups"].size() + 1);  // + the step
  EXPECT_EQ(outcomes.back()["kernel"], "(step)");
  expect_valid("db-predictions", outcomes, "predictions");
  expect_refusals("db-predictions", outcomes);
}

TEST_F(OutputSchemas, CommittedBundlesAndOneWrittenNow) {
  json suite;
  size_t bundles = 0;
  for (const auto& entry : fs::directory_iterator(data_path("h200/capture-recordings"))) {
    if (!entry.is_directory()) continue;
    json manifest = json::parse(read_file((entry.path() / "manifest.json").string()));
    expect_valid("bundle", manifest, entry.path().filename().string());
    if (entry.path().filename() == "suite_triage") suite = manifest;
    ++bundles;
  }
  EXPECT_GE(bundles, 16u);
  // What this kprof writes, against the stand-in ncu replaying the H200 triage capture.
  setenv("KPROF_NCU", KPROF_FAKE_NCU, 1);
  setenv("FAKE_NCU_VERSION", data_path("h200/ncu-outputs/ncu_version.txt").c_str(), 1);
  setenv("FAKE_NCU_LOG", (dir_ / "ncu-calls.jsonl").c_str(), 1);
  setenv("FAKE_NCU_RECORDING", data_path("h200/capture-recordings/suite_triage").c_str(), 1);
  std::string bundle = (dir_ / "bundle").string();
  testing::ProcessResult captured =
      testing::run_process({KPROF_BINARY, "capture", "-o", bundle, "-k", "^k_", "--", "./suite"});
  ASSERT_EQ(captured.exit_code, 0) << captured.err;
  json written = json::parse(read_file(bundle + "/manifest.json"));
  expect_valid("bundle", written, "written now");
  expect_refusals("bundle", written);
  expect_refusals("bundle", suite);
  // The scope kprof gave ncu is recorded: where profiling happened and the filters.
  EXPECT_EQ(written["range"], "from-start");
  EXPECT_EQ(written["kernel_filter"], "^k_");
  // What an ncu capture needs, the schema requires of every bundle that is not a trace bundle;
  // target_processes only where ncu launched the program (attach captures have none).
  for (const char* field : {"ncu", "progress", "preset", "kernel_regex", "target_processes"}) {
    json missing = written;
    missing.erase(field);
    EXPECT_NE(violation("bundle", missing), "") << "accepted without " << field;
  }
  json attached = written;
  attached.erase("target_processes");
  attached["attach"] = {{"host", "127.0.0.1"}, {"port", 49152}};
  EXPECT_EQ(violation("bundle", attached), "");
  // A sister --trace bundle: the tracer's window instead of ncu.
  json traced = written;
  for (const char* field :
       {"ncu", "progress", "preset", "preset_arguments", "sections", "metrics", "kernel_regex",
        "kernel_filter", "launch_skip", "launch_count", "replay_mode", "clock_control",
        "target_processes", "range", "nvtx_include", "nvtx_exclude", "graph_profiling"}) {
    traced.erase(field);
  }
  traced["trace"] = {{"duration_s", 5}};
  EXPECT_EQ(violation("bundle", traced), "");

  // A warm sequence that stopped before its first capture (no process waited): its own bundle,
  // ncu null and nothing profiled, is a bundle too.
  setenv("FAKE_NCU_RECORDING", data_path("h200/capture-recordings/attach_nothing").c_str(), 1);
  std::string stopped = (dir_ / "stopped").string();
  testing::ProcessResult warm = testing::run_process(
      {KPROF_BINARY, "capture", "-o", stopped, "--attach", "127.0.0.1", "--load-url",
       "http://127.0.0.1:9/v1", "--attach-timeout", "1", "-k", "^k_"});
  ASSERT_EQ(warm.exit_code, 7) << warm.err;
  json stopped_manifest = json::parse(read_file(stopped + "/manifest.json"));
  EXPECT_TRUE(stopped_manifest["ncu"].is_null()) << stopped_manifest.dump(1);
  EXPECT_NE(stopped_manifest["diagnoses"][0]["what"].get<std::string>().find(
                "(the last attach client said: ==ERROR== No attachable process found."),
            std::string::npos)
      << stopped_manifest.dump(1);
  expect_valid("bundle", stopped_manifest, "a stopped warm sequence's");
}

TEST_F(OutputSchemas, CleanupReceipts) {
  json last;
  for (const auto& entry :
       fs::directory_iterator(std::string(KPROF_TESTS_DIR) + "/k8s/data/receipts")) {
    last = json::parse(read_file(entry.path().string()));
    expect_valid("cleanup-receipt", last, entry.path().filename().string());
  }
  expect_refusals("cleanup-receipt", last);
}

}  // namespace
}  // namespace kprof
