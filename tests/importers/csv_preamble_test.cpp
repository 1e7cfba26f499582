// Issue 43, "CSV exports with something before the header": `ncu --csv ./app > out.csv` captures
// what ran before ncu's table (an NGC CUDA container's licence banner, which starts with an empty
// line; the program's own output; ncu's ==PROF== and ==WARNING== lines) and what ran after it.
// kprof refused such files ("byte 0: not a format kprof reads"). The fixtures under
// tests/importers/data/ are written in that shape: ncu's raw and details page layouts as ncu 2025.3
// writes them (data/h200's own exports show the columns, units row and rule rows), the console
// lines as data/h200/ncu-outputs recorded them (a ==WARNING== inside a progress line included).
#include <gtest/gtest.h>
#include <zstd.h>

#include <fstream>
#include <iterator>

#include "common/error.h"
#include "common/file_bytes.h"
#include "importers/importer.h"
#include "render/report_json.h"
#include "support/scratch_dir.h"

namespace kprof::importers {
namespace {

std::string fixture_path(const std::string& name) {
  return std::string(KPROF_TESTS_DIR) + "/importers/data/" + name;
}

std::string fixture_text(const std::string& name) {
  std::ifstream in(fixture_path(name), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The table alone: from its header line to the line after its last record.
std::string table_only(const std::string& text, const std::string& last_line_after) {
  size_t begin = text.find("\"ID\",\"Process ID\"");
  size_t end = text.find(last_line_after, begin);
  return text.substr(begin, end - begin);
}

std::string kernels_json(const model::Report& report) {
  std::vector<size_t> all(report.kernels.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  nlohmann::json document = render::report_json(report, all, {});
  return document.at("kernels").dump() + document.at("devices").dump();
}

InputError refusal(const std::string& path, const std::string& bytes) {
  try {
    import_bytes(path, bytes);
  } catch (const InputError& error) {
    return error;
  }
  ADD_FAILURE() << path << " was read";
  return InputError(ExitCode::kOk, "", InputPosition::none(), "");
}

TEST(CsvWithBannerBeforeHeader, RawPageAfterAContainerBannerProgramOutputAndNcuLines) {
  const std::string name = "ncu_csv_after_ngc_banner_raw.csv";
  model::Report report = import_bytes(name, fixture_text(name));
  EXPECT_EQ(report.format, model::SourceFormat::kNcuCsvRaw);
  ASSERT_EQ(report.kernels.size(), 2u);
  EXPECT_EQ(report.kernels[0].demangled_name,
            "vector_add(const float *, const float *, float *, int)");
  EXPECT_EQ(report.kernels[1].number("gpu__time_duration.sum"), 8260.0);  // 8.26 us
  EXPECT_EQ(report.kernels[0].number("dram__bytes.sum.per_second"), 2.89e12);
  ASSERT_EQ(report.devices.size(), 1u);
  EXPECT_EQ(report.devices[0].name, "NVIDIA H100 80GB HBM3");
  // The banner (15 lines, the first empty), the program's lines and ncu's: 24 lines before the
  // header; the program's last line after the table.
  EXPECT_EQ(report.reading_note,
            "read the ncu CSV table at lines 25 to 28; skipped 24 lines before it and 1 line after "
            "it (not ncu's CSV: a container's banner, the program's own output, ncu's ==PROF== "
            "and ==WARNING== lines)");
}

TEST(CsvWithBannerBeforeHeader, DetailsPageWithNcuDisconnectedAndProgramOutputAfterIt) {
  const std::string name = "ncu_csv_after_program_output_details.csv";
  model::Report report = import_bytes(name, fixture_text(name));
  EXPECT_EQ(report.format, model::SourceFormat::kNcuCsvDetails);
  ASSERT_EQ(report.kernels.size(), 2u);
  EXPECT_EQ(report.kernels[0].number("gpu__time_duration.sum"), 11620.0);
  EXPECT_EQ(report.kernels[1].number("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
            80.96);
  ASSERT_EQ(report.kernels[0].rules.size(), 1u);
  EXPECT_EQ(report.kernels[0].rules[0].rule, "SOLBottleneck");
  EXPECT_EQ(report.kernels[0].rules[0].estimated_speedup, 13.49);
  EXPECT_EQ(report.reading_note,
            "read the ncu CSV table at lines 6 to 20; skipped 5 lines before it and 2 lines after "
            "it (not ncu's CSV: a container's banner, the program's own output, ncu's ==PROF== "
            "and ==WARNING== lines)");
}

// What surrounds the table changes nothing of what is read from it, and a table alone gets no
// note.
TEST(CsvWithBannerBeforeHeader, TheTableReadsAsItWouldAlone) {
  for (const auto& [name, after] :
       {std::pair<std::string, std::string>{"ncu_csv_after_ngc_banner_raw.csv", "bench done"},
        {"ncu_csv_after_program_output_details.csv", "==PROF== Disconnected"}}) {
    SCOPED_TRACE(name);
    std::string text = fixture_text(name);
    model::Report alone = import_bytes("alone.csv", table_only(text, after));
    EXPECT_EQ(alone.reading_note, "");
    model::Report surrounded = import_bytes("surrounded.csv", text);
    EXPECT_EQ(kernels_json(surrounded), kernels_json(alone));
  }
}

// A compressed or piped input is recognised on its first bytes: the banner and ncu's lines there,
// the table beyond them.
TEST(CsvWithBannerBeforeHeader, ReadsCompressedWhenTheTableStartsPastTheFirstBytes) {
  std::string text = fixture_text("ncu_csv_after_ngc_banner_raw.csv");
  // Program output past the 128 KiB a compressed input's first check reads.
  std::string padding;
  while (padding.size() < 200 * 1024) padding += "step 17: loss 2.3125, lr 3.0e-04\n";
  text.insert(text.find("max error"), padding);
  std::string compressed(ZSTD_compressBound(text.size()), '\0');
  compressed.resize(
      ZSTD_compress(compressed.data(), compressed.size(), text.data(), text.size(), 3));
  std::string path = testing::scratch_dir() + "/banner.csv.zst";
  std::ofstream(path, std::ios::binary) << compressed;
  model::Report report = import_report(path);
  ASSERT_EQ(report.kernels.size(), 2u);
  EXPECT_NE(report.reading_note.find("lines before it"), std::string::npos) << report.reading_note;
}

TEST(CsvWithBannerBeforeHeader, NcuConsoleOutputWithoutTheTableIsRefusedNamingTheFile) {
  InputError error = refusal("console.txt", fixture_text("ncu_console_without_csv.txt"));
  EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
  EXPECT_EQ(error.path(), "console.txt");
  EXPECT_EQ(error.position().kind, InputPosition::Kind::kLine);
  EXPECT_EQ(error.position().value, 1u);
  EXPECT_NE(error.message().find("ncu's console output without its CSV table"), std::string::npos)
      << error.message();
}

// Program output that merely starts with an "ID" column is no header: a header after other text
// names "Kernel Name" and is followed by the raw page's units row, or has the details page's
// columns.
TEST(CsvWithBannerBeforeHeader, ProgramOutputWithAnIdColumnIsNoHeader) {
  const std::string program =
      "training step 1\n"
      "\"ID\",\"Kernel Name\",\"Duration\"\n"
      "\"0\",\"gemm\",\"1.5\"\n";
  InputError error = refusal("program.csv", program);
  EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
  EXPECT_EQ(error.position().value, 0u);
  EXPECT_NE(error.message().find("not a format kprof reads"), std::string::npos);
  // With ncu's console lines around it, the file is ncu's, and still has no table.
  error = refusal("program.csv", "==PROF== Connected to process 1 (/a)\n" + program);
  EXPECT_EQ(error.position().kind, InputPosition::Kind::kLine);
  EXPECT_NE(error.message().find("without its CSV table"), std::string::npos) << error.message();
  // Program output with an "ID" column on the very first line, ncu's table after it: the table.
  std::string text = fixture_text("ncu_csv_after_ngc_banner_raw.csv");
  model::Report report = import_bytes(
      "first.csv", "\"ID\",\"step\"\n\"0\",\"warm-up\"\n" + table_only(text, "bench done"));
  EXPECT_EQ(report.kernels.size(), 2u);
  EXPECT_EQ(report.reading_note.rfind("read the ncu CSV table at lines 3 to 6; skipped 2 lines "
                                      "before it (",
                                      0),
            0u)
      << report.reading_note;
}

// Text inside the table, with records of it on both sides, is refused rather than read in part.
TEST(CsvWithBannerBeforeHeader, ATableInterruptedByOtherTextIsRefused) {
  InputError error = refusal("cut.csv", fixture_text("ncu_csv_interrupted_raw.csv"));
  EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
  EXPECT_EQ(error.position().kind, InputPosition::Kind::kLine);
  EXPECT_EQ(error.position().value, 4u);
  EXPECT_NE(error.message().find("records of it go on at line 5"), std::string::npos)
      << error.message();
  // A row cut short at the end of the file is no trailing text either.
  std::string text = fixture_text("ncu_csv_after_ngc_banner_raw.csv");
  text = text.substr(0, text.rfind("\"1\",\"2817\"") + 4);
  error = refusal("truncated.csv", text);
  EXPECT_EQ(error.position().kind, InputPosition::Kind::kLine);
  EXPECT_EQ(error.position().value, 28u);
}

}  // namespace
}  // namespace kprof::importers
