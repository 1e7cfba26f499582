#include "common/file_bytes.h"

#include <gtest/gtest.h>

#include <fstream>

#include "common/error.h"
#include "support/test_data.h"

namespace kprof {
namespace {

std::string read_raw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ReadInputFile, DecompressesZstdTransparently) {
  FileBytes file = read_input_file(testing::data_path("h200/big_min.ncu-rep.zst"));
  EXPECT_TRUE(file.was_compressed);
  // 738,270 bytes is the size of the uncompressed capture (zstd -l reports the same).
  EXPECT_EQ(file.bytes.size(), 738270u);
  EXPECT_EQ(file.bytes.substr(0, 4), std::string("NVR\0", 4));
}

TEST(ReadInputFile, PlainFilesPassThrough) {
  FileBytes file = read_input_file(testing::data_path("h200/big_min_raw.csv"));
  EXPECT_FALSE(file.was_compressed);
  EXPECT_EQ(file.bytes, read_raw(testing::data_path("h200/big_min_raw.csv")));
}

TEST(ReadInputFile, MissingFileIsUnreadable) {
  try {
    read_input_file("/nonexistent/report.ncu-rep");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputUnreadable);
    EXPECT_NE(std::string(error.what()).find("/nonexistent/report.ncu-rep"), std::string::npos);
  }
}

TEST(ReadInputFile, DirectoryIsUnreadable) {
  try {
    read_input_file(testing::data_path("h200"));
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputUnreadable);
  }
}

TEST(ZstdDecompress, TruncatedStreamIsInvalidWithOffset) {
  std::string compressed = read_raw(testing::data_path("h200/big_min.ncu-rep.zst"));
  std::string truncated = compressed.substr(0, compressed.size() / 2);
  try {
    zstd_decompress("x.zst", truncated);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
    EXPECT_NE(error.message().find("truncated"), std::string::npos);
  }
}

TEST(ZstdDecompress, CorruptedStreamIsInvalid) {
  std::string compressed = read_raw(testing::data_path("h200/big_min.ncu-rep.zst"));
  for (size_t i = 16; i < 64; ++i) compressed[i] = static_cast<char>(compressed[i] ^ 0x5A);
  EXPECT_THROW(zstd_decompress("x.zst", compressed), InputError);
}

}  // namespace
}  // namespace kprof
