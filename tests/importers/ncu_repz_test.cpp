// Reports of newer Nsight Compute versions, on fixtures derived from real 2025.3.1 reports of
// data/h200 (no 2025.4+ report was available):
//  - .ncu-repz. NVIDIA documents "a new ncu-repz file format for zstd compressed report files"
//    (https://docs.nvidia.com/nsight-compute/ReleaseNotes/topics/updates-2025-4.html) but not
//    its framing. kprof infers two, and these fixtures are those inferences applied to real
//    reports: (1) the whole .ncu-rep compressed (one frame, or several concatenated); (2) the
//    magic and file header plain and everything after them compressed. Either must read exactly
//    as the plain report does, told by content whatever the file is named.
//  - a format version kprof does not know: the real report with its FileHeader's version field
//    bumped from 7 to 8 (the byte after the field's tag), so that only the version differs.
#include <gtest/gtest.h>
#include <zstd.h>

#include <fstream>

#include "common/error.h"
#include "common/file_bytes.h"
#include "importers/importer.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof::importers {
namespace {

using testing::data_path;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string write_scratch(const std::string& name, const std::string& bytes) {
  std::string path = testing::scratch_dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string compress(std::string_view bytes, int level = 3) {
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  size_t size = ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), level);
  EXPECT_FALSE(ZSTD_isError(size));
  out.resize(size);
  return out;
}

// The decompressed bytes of a committed report.
const std::string& plain_report() {
  static const std::string plain = [] {
    std::string path = data_path("h200/two_kernels_full.ncu-rep.zst");
    return zstd_decompress(path, read_file(path));
  }();
  return plain;
}

// Where the blocks start: the magic, the header's uint32 length, the header.
size_t body_offset(const std::string& report) {
  const auto* p = reinterpret_cast<const unsigned char*>(report.data() + 4);
  std::uint32_t length = p[0] | p[1] << 8 | p[2] << 16 | std::uint32_t{p[3]} << 24;
  return 8 + length;
}

void expect_same_report(const model::Report& read, const model::Report& reference) {
  EXPECT_EQ(read.format_version, reference.format_version);
  ASSERT_EQ(read.kernels.size(), reference.kernels.size());
  for (size_t i = 0; i < read.kernels.size(); ++i) {
    const model::Kernel& a = read.kernels[i];
    const model::Kernel& b = reference.kernels[i];
    EXPECT_EQ(a.mangled_name, b.mangled_name);
    ASSERT_EQ(a.metrics.size(), b.metrics.size());
    for (size_t m = 0; m < a.metrics.size(); ++m) {
      EXPECT_EQ(a.metrics[m].name.str(), b.metrics[m].name.str());
      EXPECT_EQ(a.metrics[m].value.to_string(), b.metrics[m].value.to_string());
    }
  }
  EXPECT_EQ(read.session.ncu_version, reference.session.ncu_version);
}

const model::Report& reference() {
  static const model::Report report = import_bytes("plain.ncu-rep", plain_report());
  return report;
}

TEST(NcuRepz, WholeReportInOneZstdFrame) {
  std::string path = write_scratch("whole.ncu-repz", compress(plain_report()));
  model::Report report = import_report(path);
  expect_same_report(report, reference());
  EXPECT_TRUE(report.format_note.empty());
}

TEST(NcuRepz, WholeReportInSeveralConcatenatedFrames) {
  const std::string& plain = plain_report();
  size_t half = plain.size() / 2;
  std::string framed = compress(std::string_view(plain).substr(0, half)) +
                       compress(std::string_view(plain).substr(half), 1);
  expect_same_report(import_report(write_scratch("frames.ncu-repz", framed)), reference());
}

TEST(NcuRepz, PlainHeaderThenCompressedBlocks) {
  const std::string& plain = plain_report();
  size_t body = body_offset(plain);
  std::string framed = plain.substr(0, body) + compress(std::string_view(plain).substr(body));
  ASSERT_EQ(framed.substr(0, 4), std::string("NVR\0", 4));
  model::Report report = import_report(write_scratch("body.ncu-repz", framed));
  expect_same_report(report, reference());
  // Several frames after the header read the same.
  size_t split = body + (plain.size() - body) / 3;
  std::string two = plain.substr(0, body) +
                    compress(std::string_view(plain).substr(body, split - body)) +
                    compress(std::string_view(plain).substr(split));
  expect_same_report(import_report(write_scratch("body2.ncu-repz", two)), reference());
}

TEST(NcuRepz, ToldByContentNotByName) {
  const std::string& plain = plain_report();
  size_t body = body_offset(plain);
  std::string framed = plain.substr(0, body) + compress(std::string_view(plain).substr(body));
  // A compressed report named .ncu-rep, a plain one named .ncu-repz, one with no suffix.
  expect_same_report(import_report(write_scratch("named-plain.ncu-rep", framed)), reference());
  expect_same_report(import_report(write_scratch("plain-content.ncu-repz", plain)), reference());
  expect_same_report(import_report(write_scratch("no-suffix", compress(plain))), reference());
}

TEST(NcuRepz, TruncatedCompressedBlocksAreOneErrorNamingTheFile) {
  const std::string& plain = plain_report();
  size_t body = body_offset(plain);
  std::string compressed = compress(std::string_view(plain).substr(body));
  std::string framed = plain.substr(0, body) + compressed.substr(0, compressed.size() / 2);
  std::string path = write_scratch("cut.ncu-repz", framed);
  try {
    import_report(path);
    FAIL() << "a cut zstd stream read";
  } catch (const InputError& error) {
    EXPECT_EQ(error.path(), path);
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_NE(std::string(error.what()).find("zstd"), std::string::npos) << error.what();
  }
}

// The FileHeader is uint32 length + {field 1 varint Version}: tag 0x08, then 7.
std::string with_version(std::string report, unsigned char version) {
  EXPECT_EQ(static_cast<unsigned char>(report[8]), 0x08);
  EXPECT_EQ(static_cast<unsigned char>(report[9]), 7);
  report[9] = static_cast<char>(version);
  return report;
}

TEST(NcuRepUnknownVersion, BumpedVersionReadsWithTheKnownSchemaAndSaysSo) {
  model::Report report =
      import_report(write_scratch("v8.ncu-rep", with_version(plain_report(), 8)));
  EXPECT_EQ(report.format_version, 8u);
  ASSERT_EQ(report.kernels.size(), reference().kernels.size());
  EXPECT_EQ(report.kernels[0].metrics.size(), reference().kernels[0].metrics.size());
  EXPECT_NE(report.format_note.find("report format version 8 (written by Nsight Compute "
                                    "2025.3.1.0 (build 36398880) (public-release)) is newer than "
                                    "the version 7"),
            std::string::npos)
      << report.format_note;
  EXPECT_NE(report.format_note.find("fields it does not know ignored"), std::string::npos);
  EXPECT_EQ(report.format_note.find("skipped"), std::string::npos) << report.format_note;
}

TEST(NcuRepUnknownVersion, WhatTheKnownSchemaCannotReadIsSkippedAndNamed) {
  // A block the walk cannot read after the real ones (as a newer ncu might append): a length
  // running past the end of the file.
  std::string bumped = with_version(plain_report(), 8);
  size_t end = bumped.size();
  std::string appended = bumped + std::string("\xff\xff\x00\x00", 4) + "newer";
  model::Report report = import_report(write_scratch("v8-extra.ncu-rep", appended));
  ASSERT_EQ(report.kernels.size(), reference().kernels.size());
  EXPECT_NE(report.format_note.find("the rest from byte " + std::to_string(end + 4) + " skipped"),
            std::string::npos)
      << report.format_note;
  // The same bytes under the known version stay an error, as before.
  std::string known = plain_report() + std::string("\xff\xff\x00\x00", 4) + "newer";
  EXPECT_THROW(import_report(write_scratch("v7-extra.ncu-rep", known)), InputError);
}

TEST(NcuRepUnknownVersion, OlderVersionIsNamedAsOlder) {
  model::Report report =
      import_report(write_scratch("v6.ncu-rep", with_version(plain_report(), 6)));
  EXPECT_NE(report.format_note.find("public-release)) is older than"), std::string::npos)
      << report.format_note;
}

TEST(NcuRepUnknownVersion, CompressedAndBumpedTogether) {
  std::string bumped = with_version(plain_report(), 9);
  size_t body = body_offset(bumped);
  std::string framed = bumped.substr(0, body) + compress(std::string_view(bumped).substr(body));
  model::Report report = import_report(write_scratch("v9.ncu-repz", framed));
  EXPECT_EQ(report.format_version, 9u);
  EXPECT_EQ(report.kernels.size(), reference().kernels.size());
}

}  // namespace
}  // namespace kprof::importers
