// kprof source's per-instruction values held to ncu's own reading of the same report.
//
// data/h200/ncu-source/ holds what ncu 2025.3.1 and nvdisasm 13.0 printed on the H200 for
// data/h200/two_kernels_full.ncu-rep.zst (the capture's k_stream_copy, built with -lineinfo):
//   two_kernels_full_source_sass.csv       ncu --import R --page source --csv --print-source sass
//   two_kernels_full_source_cuda_sass.csv  the same with --print-source cuda,sass (line totals)
//   two_kernels_full_nvdisasm_c_fun32.txt  nvdisasm -c -fun 32 on the cubin taken from the report
#include "pipeline/source.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "analysis/source_counters.h"
#include "common/error.h"
#include "importers/cubin/cubin.h"
#include "importers/cubin/line_table.h"
#include "pipeline/reports.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// ncu's CSV: every field quoted, no quote inside one.
std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> row;
    for (size_t at = line.find('"'); at != std::string::npos;) {
      size_t end = line.find('"', at + 1);
      row.push_back(line.substr(at + 1, end - at - 1));
      at = line.find('"', end + 1);
    }
    if (!row.empty()) rows.push_back(row);
  }
  return rows;
}

std::optional<double> number(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  if (text.empty() || text == "-") return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return value;
}

const std::map<std::string, std::string>& column_metrics() {
  static const std::map<std::string, std::string> columns = [] {
    std::map<std::string, std::string> c = {
        {"# Samples", "smsp__pcsamp_sample_count"},
        {"Warp Stall Sampling (All Samples)", "smsp__pcsamp_sample_count"},
        {"Instructions Executed", "inst_executed"},
        {"Thread Instructions Executed", "thread_inst_executed"},
        {"Predicated-On Thread Instructions Executed", "thread_inst_executed_true"},
        {"L1 Tag Requests Global", "memory_l1_tag_requests_global"},
        {"L2 Theoretical Sectors Global", "memory_l2_theoretical_sectors_global"},
        {"L2 Theoretical Sectors Global Ideal", "memory_l2_theoretical_sectors_global_ideal"},
        {"Divergent Branches", "smsp__branch_targets_threads_divergent"}};
    const std::map<std::string, std::string> reasons = {
        {"stall_barrier", "barrier"},
        {"stall_branch_resolving", "branch_resolving"},
        {"stall_dispatch", "dispatch_stall"},
        {"stall_drain", "drain"},
        {"stall_imc", "imc_miss"},
        {"stall_lg", "lg_throttle"},
        {"stall_long_sb", "long_scoreboard"},
        {"stall_math", "math_pipe_throttle"},
        {"stall_membar", "membar"},
        {"stall_mio", "mio_throttle"},
        {"stall_misc", "misc"},
        {"stall_no_inst", "no_instructions"},
        {"stall_not_selected", "not_selected"},
        {"stall_selected", "selected"},
        {"stall_short_sb", "short_scoreboard"},
        {"stall_sleep", "sleeping"},
        {"stall_tex", "tex_throttle"},
        {"stall_wait", "wait"}};
    for (const auto& [column, reason] : reasons) {
      c[column] = std::string(analysis::kStallPrefix) + reason;
      c[column + " (Not Issued)"] = std::string(analysis::kStallPrefix) + reason + "_not_issued";
    }
    return c;
  }();
  return columns;
}

struct Loaded {
  model::Report report;
  std::string path;
};

const Loaded& two_kernels() {
  static const Loaded loaded = [] {
    Loaded l;
    l.path = data_path("h200/two_kernels_full.ncu-rep.zst");
    l.report = pipeline::load_reports({l.path}, pipeline::for_source()).at(0);
    return l;
  }();
  return loaded;
}

class RecordedDisassembler : public pipeline::Disassembler {
 public:
  std::string describe() const override { return "recorded nvdisasm"; }
  std::optional<std::map<std::uint64_t, std::string>> disassemble(std::string_view,
                                                                  std::uint32_t symbol_index,
                                                                  std::string& failure) override {
    asked.push_back(symbol_index);
    if (symbol_index != 32) {
      failure = "no recording";
      return std::nullopt;
    }
    return pipeline::parse_nvdisasm(
        read_text(data_path("h200/ncu-source/two_kernels_full_nvdisasm_c_fun32.txt")));
  }
  std::vector<std::uint32_t> asked;
};

TEST(SourceCounters, EveryPerInstructionValueEqualsNcusSourcePageExport) {
  const Loaded& loaded = two_kernels();
  ASSERT_EQ(loaded.report.kernels.size(), 1u);
  std::string failure;
  analysis::KernelSource view =
      pipeline::kernel_source(loaded.path, loaded.report, 0, 10, nullptr, failure);
  ASSERT_TRUE(view.unavailable.empty()) << view.unavailable;
  const analysis::SourceCounters& counters = view.counters;

  auto rows = csv_rows(read_text(data_path("h200/ncu-source/two_kernels_full_source_sass.csv")));
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[0][1], "k_stream_copy(const float4 *, float4 *, unsigned long)");
  const std::vector<std::string>& header = rows[1];
  std::vector<std::string> not_issued;
  for (const std::string& name : counters.metrics) {
    if (name.rfind(analysis::kStallPrefix, 0) == 0 && name.size() > 11 &&
        name.substr(name.size() - 11) == "_not_issued") {
      not_issued.push_back(name);
    }
  }
  EXPECT_EQ(not_issued.size(), 19u);  // warpgroup_arrive's too, which ncu shows no column for
  size_t compared = 0;
  size_t instructions = 0;
  for (size_t r = 2; r < rows.size(); ++r) {
    const std::vector<std::string>& row = rows[r];
    ASSERT_EQ(row.size(), header.size());
    std::uint64_t address = std::stoull(row[0], nullptr, 16);
    ASSERT_GE(address, counters.start);
    std::uint64_t index = (address - counters.start) / 16;
    ASSERT_LT(index, counters.instructions());
    EXPECT_EQ(index, instructions) << "ncu lists every instruction, in order";
    ++instructions;
    for (size_t c = 0; c < header.size(); ++c) {
      std::optional<double> expected = number(row[c]);
      if (!expected) continue;
      if (header[c] == "Warp Stall Sampling (Not-issued Samples)") {
        double sum = 0;
        for (const std::string& name : not_issued) sum += counters.value(index, name);
        EXPECT_EQ(sum, *expected) << header[c] << " at " << row[0];
        ++compared;
        continue;
      }
      auto metric = column_metrics().find(header[c]);
      if (metric == column_metrics().end()) continue;
      ASSERT_TRUE(counters.metric(metric->second)) << metric->second;
      EXPECT_EQ(counters.value(index, metric->second), *expected) << header[c] << " at " << row[0];
      ++compared;
    }
  }
  // ncu shows one row per instruction of the function, from its first.
  EXPECT_EQ(instructions, counters.instructions());
  EXPECT_EQ(std::stoull(rows[2][0], nullptr, 16), counters.start);
  EXPECT_EQ(counters.size, 768u);
  EXPECT_EQ(compared, 2160u);  // 48 instructions × 45 columns
}

TEST(SourceCounters, LineTotalsEqualNcusCudaSourceRows) {
  const Loaded& loaded = two_kernels();
  std::string failure;
  analysis::KernelSource view =
      pipeline::kernel_source(loaded.path, loaded.report, 0, 10, nullptr, failure);
  auto rows =
      csv_rows(read_text(data_path("h200/ncu-source/two_kernels_full_source_cuda_sass.csv")));
  const std::vector<std::string>* header = nullptr;
  std::map<std::uint64_t, std::pair<double, double>> expected;  // line → samples, executed
  for (const auto& row : rows) {
    if (row[0] == "Line No") header = &row;
    if (!header || row[0].empty() || row[0] == "Line No" || row[2] != "-") continue;
    auto column = [&](const std::string& name) {
      size_t c = std::find(header->begin(), header->end(), name) - header->begin();
      return number(row.at(c)).value_or(-1);
    };
    expected[std::stoull(row[0])] = {column("# Samples"), column("Instructions Executed")};
  }
  ASSERT_EQ(expected.size(), 4u);  // suite.cu lines 9-12
  ASSERT_EQ(view.lines.size(), expected.size());
  for (const analysis::LineTotal& line : view.lines) {
    EXPECT_EQ(line.location.file, "/work/steering/probe/suite.cu");
    ASSERT_TRUE(expected.count(line.location.line)) << line.location.line;
    EXPECT_EQ(line.samples, expected[line.location.line].first) << line.location.line;
    EXPECT_EQ(line.executed, expected[line.location.line].second) << line.location.line;
  }
  EXPECT_EQ(view.line_info, "CUDA 12 rows, PTX 26 rows");
}

TEST(SourceCounters, HottestInstructionIsTheStoreWaitingOnTheLoad) {
  const Loaded& loaded = two_kernels();
  RecordedDisassembler disassembler;
  std::string failure;
  analysis::KernelSource view =
      pipeline::kernel_source(loaded.path, loaded.report, 0, 3, &disassembler, failure);
  EXPECT_EQ(failure, "");
  EXPECT_EQ(disassembler.asked, std::vector<std::uint32_t>{32});
  ASSERT_EQ(view.hottest.size(), 3u);
  EXPECT_TRUE(view.ranked_by_samples);
  EXPECT_EQ(view.hottest[0].index * 16, 0x1e0u);
  EXPECT_EQ(view.hottest[0].samples, 62577);
  EXPECT_EQ(view.hottest[0].reasons.at(0).first, "long_scoreboard");
  EXPECT_EQ(view.sass[0x1e0 / 16], "STG.E.128 desc[UR6][R2.64], R4");
  EXPECT_EQ(view.ptx[0x1e0 / 16], "ptx:56 st.global.v4.u32 [%rd16], {%r5, %r6, %r7, %r8};");
  EXPECT_EQ(view.encoding[0x1e0 / 16], "0041d8000c101d06 0000000402007986");
  ASSERT_TRUE(view.cuda[0x1e0 / 16]);
  EXPECT_EQ(view.cuda[0x1e0 / 16]->line, 11u);
  EXPECT_EQ(view.counters.total(analysis::kSamples), 64331);
}

TEST(SourceCounters, NvdisasmOutputParsed) {
  auto text = pipeline::parse_nvdisasm(
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
      "        /*0090*/               @P0 EXIT ;\n"
      "        /*0130*/                   IMAD.SHL.U32 R2, R11.reuse, 0x10, RZ ;  /* 0x1 */\n"
      ".L_x_0:\n"
      "  .size x, (.L_x_2 - x)\n");
  ASSERT_EQ(text.size(), 3u);
  EXPECT_EQ(text[0], "LDC R1, c[0x0][0x28]");
  EXPECT_EQ(text[0x90], "@P0 EXIT");
  EXPECT_EQ(text[0x130], "IMAD.SHL.U32 R2, R11, 0x10, RZ");
}

TEST(SourceCounters, WithoutNvdisasmTheTextSaysSoInOneLine) {
  pipeline::SourceOptions options;
  options.paths = {data_path("h200/two_kernels_full.ncu-rep.zst")};
  options.kernel_regex = "k_stream_copy";
  options.no_sass = true;
  pipeline::Answer answer = pipeline::source(options, {"kprof", "source"});
  EXPECT_NE(answer.out.find("0x1e0"), std::string::npos) << answer.out;
  EXPECT_NE(answer.out.find("SASS text not shown (--no-sass)"), std::string::npos);
  options.no_sass = false;
  options.disassembler = std::make_shared<RecordedDisassembler>();
  answer = pipeline::source(options, {"kprof", "source"});
  EXPECT_NE(answer.out.find("STG.E.128 desc[UR6][R2.64], R4"), std::string::npos) << answer.out;
  EXPECT_EQ(answer.out.find("SASS text"), std::string::npos);
}

// The module's cubin damaged: every truncation and many byte flips are one InputError naming
// the report and a byte (exit 4), never a crash or a read outside the bytes.
TEST(Cubin, DamagedCubinIsOneInputErrorWithAPosition) {
  const Loaded& loaded = two_kernels();
  ASSERT_EQ(loaded.report.modules.size(), 1u);
  const model::SourceModule& module = loaded.report.modules[0];
  ASSERT_GT(module.binary.size(), 100000u);
  importers::cubin::CubinOrigin origin{"r.ncu-rep", module.binary_offset, "the cubin"};
  auto exercise = [&](const std::string& bytes) {
    try {
      auto cubin = importers::cubin::Cubin::parse(bytes, origin);
      if (auto function =
              cubin.function(module.functions.empty() ? "" : "_Z13k_stream_copyPK6float4PS_m")) {
        importers::cubin::read_line_table(cubin, ".debug_line", function->section);
        importers::cubin::read_line_table(cubin, ".nv_debug_line_sass", function->section);
      }
      importers::cubin::ptx_lines(cubin);
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
      EXPECT_NE(std::string(error.what()).find("r.ncu-rep"), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("byte"), std::string::npos) << error.what();
    }
  };
  for (size_t cut = 0; cut < module.binary.size(); cut += 997) {
    exercise(module.binary.substr(0, cut));
  }
  std::uint32_t state = 12345;
  for (int k = 0; k < 400; ++k) {
    std::string bytes = module.binary;
    for (int flips = 0; flips < 8; ++flips) {
      state = state * 1103515245u + 12345u;
      // The headers and the line tables are where damage matters: favour the first and last KiB.
      size_t at = (state >> 8) % 2048;
      at = at < 1024 ? at : bytes.size() - (at - 1023);
      bytes[at] = static_cast<char>(state >> 24);
    }
    exercise(bytes);
  }
}

TEST(Cubin, NotAnElfFileSaysWhere) {
  importers::cubin::CubinOrigin origin{"r.ncu-rep", 1000, "the cubin of module 0x17"};
  try {
    importers::cubin::Cubin::parse("not a cubin at all, not even close to sixty-four bytes long..",
                                   origin);
    FAIL();
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_NE(std::string(error.what()).find("the cubin of module 0x17, its byte 0: not an ELF"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace kprof
