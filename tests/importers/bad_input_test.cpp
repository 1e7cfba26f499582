// Damaged and foreign inputs: every one gets an InputError naming the file and a position, and
// nothing crashes (the fuzzers push much further; these are the cases a user actually meets).
#include <gtest/gtest.h>

#include <random>

#include "common/error.h"
#include "common/file_bytes.h"
#include "importers/importer.h"
#include "support/test_data.h"

namespace kprof::importers {
namespace {

using testing::data_path;

std::string report_bytes() {
  static const std::string bytes = read_input_file(data_path("h200/big_min.ncu-rep.zst")).bytes;
  return bytes;
}

InputError expect_invalid(const std::string& bytes, const std::string& path = "bad.ncu-rep") {
  try {
    import_bytes(path, bytes);
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid) << error.what();
    EXPECT_EQ(std::string(error.what()).rfind(path + ": ", 0), 0u) << error.what();
    return error;
  }
  ADD_FAILURE() << "no error for " << bytes.size() << " bytes";
  return InputError(ExitCode::kOk, "", {}, "");
}

TEST(BadInput, EmptyFile) {
  InputError error = expect_invalid("");
  EXPECT_NE(error.message().find("empty"), std::string::npos);
}

TEST(BadInput, TracesAreRejectedWithTheCommandsThatReadThem) {
  for (std::string bytes :
       {std::string("\x1f\x8b\x08\0\0\0\0\0", 8), std::string("  {\"traceEvents\": []}"),
        std::string("[]"), std::string("SQLite format 3\0", 16)}) {
    InputError error = expect_invalid(bytes, "t.json.gz");
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
    EXPECT_EQ(error.position().value, 0u);
    EXPECT_NE(error.message().find("not an Nsight Compute report but "), std::string::npos)
        << error.message();
    EXPECT_NE(error.message().find("`kprof rank t.json.gz` or `kprof budget t.json.gz`"),
              std::string::npos)
        << error.message();
  }
}

TEST(BadInput, OtherFileTypesAreRejectedAtByteZero) {
  for (std::string bytes : {std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16),
                            std::string("\x7f"
                                        "ELF\x02\x01\x01\0",
                                        8),
                            std::string("Kernel,Duration\nk,1\n")}) {
    InputError error = expect_invalid(bytes);
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
    EXPECT_EQ(error.position().value, 0u);
    EXPECT_NE(error.message().find("not a format kprof reads"), std::string::npos);
  }
}

TEST(BadInput, EveryTruncationOfAReportIsReportedWithAnOffsetInsideTheFile) {
  const std::string full = report_bytes();
  std::vector<size_t> cuts;
  for (size_t cut = 1; cut < 64; ++cut) cuts.push_back(cut);
  // Every 1009th byte (every 4036th under the sanitizers: testing::sanitizer_share).
  const size_t stride = testing::under_sanitizers() ? 4 * 1009 : 1009;
  for (size_t cut = 64; cut < full.size(); cut += stride) cuts.push_back(cut);
  cuts.push_back(full.size() - 1);
  for (size_t cut : cuts) {
    InputError error = expect_invalid(full.substr(0, cut));
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte) << cut;
    EXPECT_LE(error.position().value, cut) << cut;
  }
}

// Issue 30: a format version kprof does not know is no longer refused but read with the known
// schema and named (tests/importers/ncu_repz_test.cpp has the rest); garbage after it stays an
// error only for the known version.
TEST(BadInput, UnknownVersionIsNamedNotRefused) {
  std::string bytes = report_bytes();
  ASSERT_EQ(bytes[9], 7);  // FileHeader { Version = 7 } is 08 07 at bytes 8..9
  bytes[9] = 9;
  model::Report report = import_bytes("v9.ncu-rep", bytes);
  EXPECT_EQ(report.format_version, 9u);
  EXPECT_NE(report.format_note.find("report format version 9"), std::string::npos)
      << report.format_note;
  EXPECT_EQ(report.kernels.size(), import_bytes("v7.ncu-rep", report_bytes()).kernels.size());
}

TEST(BadInput, CorruptedBytesNeverCrash) {
  const std::string full = report_bytes();
  std::mt19937 random(20261129);
  size_t errors = 0;
  for (size_t trial = 0; trial < testing::sanitizer_share(300); ++trial) {
    std::string bytes = full;
    for (int flips = 0; flips < 8; ++flips) {
      size_t at = random() % bytes.size();
      bytes[at] = static_cast<char>(random());
    }
    try {
      import_bytes("corrupt.ncu-rep", bytes);
    } catch (const InputError& error) {
      ++errors;
      EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    }
  }
  // Bytes inside metric values can change without breaking the structure; many flips do break it.
  EXPECT_GT(errors, 0u);
}

std::string raw_csv() {
  static const std::string bytes = read_input_file(data_path("h200/big_min_raw.csv")).bytes;
  return bytes;
}

TEST(BadInput, CsvWithoutTheKernelNameColumn) {
  std::string bytes = raw_csv();
  size_t at = bytes.find("\"Kernel Name\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 13, "\"Kernel\"");
  InputError error = expect_invalid(bytes, "bad.csv");
  EXPECT_EQ(error.position().kind, InputPosition::Kind::kLine);
  EXPECT_EQ(error.position().value, 1u);
  EXPECT_NE(error.message().find("missing column \"Kernel Name\""), std::string::npos);
}

TEST(BadInput, CsvRowWithAMissingFieldNamesItsLine) {
  std::string bytes = raw_csv();
  // Drop the last field of the fourth line (the second kernel row).
  size_t line_start = 0;
  for (int i = 0; i < 3; ++i) line_start = bytes.find('\n', line_start) + 1;
  size_t line_end = bytes.find('\n', line_start);
  size_t last_comma = bytes.rfind(',', line_end);
  bytes.erase(last_comma, line_end - last_comma);
  InputError error = expect_invalid(bytes, "bad.csv");
  EXPECT_EQ(error.position().value, 4u);
  EXPECT_NE(error.message().find("fields, the header has"), std::string::npos);
}

TEST(BadInput, TruncatedCsvInsideAQuotedField) {
  std::string bytes = raw_csv();
  InputError error = expect_invalid(bytes.substr(0, bytes.size() / 2 + 1), "bad.csv");
  EXPECT_EQ(error.position().kind, InputPosition::Kind::kLine);
}

TEST(BadInput, CsvWithoutUnitsRow) {
  std::string bytes = raw_csv();
  size_t first = bytes.find('\n') + 1;
  size_t second = bytes.find('\n', first) + 1;
  bytes.erase(first, second - first);
  InputError error = expect_invalid(bytes, "bad.csv");
  EXPECT_EQ(error.position().value, 2u);
}

// Found by the CSV fuzzer: with "Metric Unit" after "Metric Value" in the header, a metric row
// that ends at the value column was read past its end (a crash in a release build).
TEST(BadInput, CsvDetailsRowEndingBeforeALaterColumnNamesItsLine) {
  const std::string header =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
      "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\","
      "\"Metric Value\",\"Metric Unit\",\"Rule Name\",\"Rule Type\",\"Rule Description\","
      "\"Estimated Speedup Type\",\"Estimated Speedup\"\n";
  const std::string row =
      "\"0\",\"516\",\"m\",\"127.0.0.1\",\"k(float *)\",\"1\",\"7\",\"(256, 1, 1)\",\"(4, 1, 1)\","
      "\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"DRAM Frequency\",\"3.14\"\n";
  const std::string good_row =
      "\"0\",\"516\",\"m\",\"127.0.0.1\",\"k(float *)\",\"1\",\"7\",\"(256, 1, 1)\",\"(4, 1, 1)\","
      "\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"DRAM Frequency\",\"3.14\",\"Ghz\",\n";
  // The same export with the unit present reads (so the short row, not the order, is refused).
  model::Report report = import_bytes("ok.csv", header + good_row);
  ASSERT_EQ(report.kernels.size(), 1u);
  ASSERT_EQ(report.kernels[0].metrics.size(), 1u);
  EXPECT_EQ(report.kernels[0].metrics[0].unit, "hz");
  InputError error = expect_invalid(header + good_row + row, "bad.csv");
  EXPECT_EQ(error.position().kind, InputPosition::Kind::kLine);
  EXPECT_EQ(error.position().value, 3u);
  EXPECT_NE(error.message().find("14 fields"), std::string::npos) << error.what();
  // A rule row is read through the same checked accessor: too short for its section column.
  const std::string short_header =
      "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\","
      "\"Section Name\"\n";
  error =
      expect_invalid(short_header + "\"0\",\"k\",\"n\",\"\",\"1\",\"SOLBottleneck\"\n", "bad.csv");
  EXPECT_EQ(error.position().value, 2u);
}

}  // namespace
// Found by fuzz_ncu_csv under UBSan: an integer too large for 64 bits was cast to uint64_t
// (undefined; on x86 it read as 2^63). It is kept as the double it is.
TEST(BadInput, CsvIntegerBeyondSixtyFourBitsIsKeptAsADouble) {
  const std::string header =
      "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric "
      "Value\"\n";
  const std::string huge = "1" + std::string(30, '0');
  model::Report report =
      import_bytes("big.csv", header + "\"0\",\"k\",\"s\",\"n\",\"\",\"" + huge + "\"\n" +
                                  "\"0\",\"k\",\"s\",\"m\",\"\",\"18446744073709551615\"\n");
  ASSERT_EQ(report.kernels.size(), 1u);
  ASSERT_EQ(report.kernels[0].metrics.size(), 2u);
  auto value_of = [&](const std::string& name) {
    for (const auto& metric : report.kernels[0].metrics) {
      if (metric.name == name) return metric.value;
    }
    ADD_FAILURE() << "no metric " << name;
    return model::MetricValue{};
  };
  const model::MetricValue big = value_of("s: n");
  EXPECT_EQ(big.kind(), model::MetricValue::Kind::kDouble);
  EXPECT_EQ(big.real(), 1e30);
  // The largest 64-bit integer's text rounds to 2^64 as a double: kept as a double too, not
  // wrapped.
  const model::MetricValue edge = value_of("s: m");
  EXPECT_EQ(edge.kind(), model::MetricValue::Kind::kDouble);
  EXPECT_EQ(edge.real(), 18446744073709551616.0);
}

// Found by fuzz_ncu_csv under UBSan on the H200's CPUs after the fix above: a kernel ID of 105
// digits was cast to size_t. Refused as not a whole number, naming the line.
TEST(BadInput, CsvKernelIdBeyondSixtyFourBitsIsRefused) {
  const std::string header =
      "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric "
      "Value\"\n";
  const std::string id = "4" + std::string(104, '4');
  InputError error =
      expect_invalid(header + "\"" + id + "\",\"k\",\"s\",\"n\",\"\",\"1\"\n", "id.csv");
  EXPECT_EQ(error.position().value, 2u);
  EXPECT_NE(error.message().find("column \"ID\""), std::string::npos) << error.what();
  EXPECT_NE(error.message().find("expected a whole number"), std::string::npos) << error.what();
}

}  // namespace kprof::importers
