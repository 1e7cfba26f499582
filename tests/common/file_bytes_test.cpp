#include "common/file_bytes.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "common/error.h"
#include "support/run_process.h"
#include "support/scratch_dir.h"
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

// /proc files say they are empty (st_size 0) and are not: the size comes from reading to the end.
TEST(ReadInputFile, ReadsToTheEndWhateverTheSizeSays) {
  FileBytes file = read_input_file("/proc/self/status");
  EXPECT_NE(file.bytes.find("VmRSS:"), std::string::npos);
  EXPECT_EQ(file.bytes.back(), '\n');
}

TEST(OpenInputFile, MapsAPlainFileAndItsBytesStayReadableAfterRelease) {
  std::string path = testing::data_path("h200/big_min_raw.csv");
  std::string expected = read_raw(path);
  InputBytes input = open_input_file(path);
  EXPECT_TRUE(input.is_mapped());
  EXPECT_FALSE(input.was_compressed());
  ASSERT_EQ(input.view(), expected);
  input.release(input.view());  // pages given back: read again, they come back from the file
  EXPECT_EQ(input.view(), expected);
  InputBytes moved = std::move(input);
  EXPECT_EQ(moved.view(), expected);
}

TEST(OpenInputFile, DecompressesZstdIntoMemory) {
  InputBytes input = open_input_file(testing::data_path("h200/big_min.ncu-rep.zst"));
  EXPECT_FALSE(input.is_mapped());
  EXPECT_TRUE(input.was_compressed());
  EXPECT_EQ(input.view().size(), 738270u);  // zstd -l
  EXPECT_EQ(input.view(), read_input_file(testing::data_path("h200/big_min.ncu-rep.zst")).bytes);
}

// Another program truncating a mapped report is a SIGBUS when its lost pages are read: one line
// naming the file and exit 3, as any unreadable input, not a crash.
TEST(OpenInputFileDeathTest, AFileTruncatedUnderTheMappingIsAnErrorNamingIt) {
  // The child runs the test again (its own file); under an emulator, which the kernel cannot
  // start the test binary again without, it is forked instead.
  GTEST_FLAG_SET(death_test_style, testing::emulated() ? "fast" : "threadsafe");
  std::string path = ::testing::TempDir() + "/kprof-shrinks-" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary) << std::string(1 << 20, 'x');
  EXPECT_EXIT(
      {
        InputBytes input = open_input_file(path);
        if (!input.is_mapped() || ::truncate(path.c_str(), 0) != 0) std::_Exit(99);
        std::filesystem::remove(path);             // the mapping stays; nothing is left behind
        volatile char last = input.view().back();  // the page is gone: SIGBUS
        (void)last;
        std::_Exit(98);
      },
      ::testing::ExitedWithCode(3),
      "^kprof: [^ ]*/kprof-shrinks-[0-9]+: the file shrank while kprof was reading it");
  std::filesystem::remove(path);
}

TEST(OpenInputFile, AnEmptyFileIsEmptyAndAFolderUnreadable) {
  std::string dir = ::testing::TempDir() + "/kprof-open-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/empty").close();
  EXPECT_EQ(open_input_file(dir + "/empty").view(), "");
  try {
    open_input_file(dir);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputUnreadable);
  }
  std::filesystem::remove_all(dir);
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

using kprof::testing::fresh_dir;

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

void write_raw(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

TEST(WriteFileAtomically, DoesNotFollowASymlinkPlantedAtTheTemporaryName) {
  std::string dir = fresh_dir("planted-temporary");
  std::string victim = dir + "/victim";
  write_raw(victim, "precious");
  std::string destination = dir + "/page.html";
  // The name the writer used to pick: anyone able to write the folder could plant this link.
  std::filesystem::create_symlink(victim, destination + ".tmp-" + std::to_string(::getpid()));
  write_file_atomically(destination, "new page");
  EXPECT_EQ(read_raw(victim), "precious");
  EXPECT_EQ(read_raw(destination), "new page");
}

TEST(WriteFileAtomically, ReplacesASymlinkAtTheDestinationNeverWritesThroughIt) {
  std::string dir = fresh_dir("link-destination");
  std::string victim = dir + "/victim";
  write_raw(victim, "precious");
  std::string destination = dir + "/receipt.json";
  std::filesystem::create_symlink(victim, destination);
  write_file_atomically(destination, "{}\n");
  EXPECT_EQ(read_raw(victim), "precious");
  EXPECT_FALSE(std::filesystem::is_symlink(std::filesystem::symlink_status(destination)));
  EXPECT_EQ(read_raw(destination), "{}\n");
}

TEST(WriteFileAtomically, RefusesADestinationThatIsNotAFile) {
  // Replacing the link /dev/stdout (as root) or a named pipe would surprise everyone: refused,
  // left as they are.
  std::string dir = fresh_dir("not-a-file");
  std::filesystem::create_symlink("/dev/null", dir + "/to-device");
  ASSERT_EQ(::mkfifo((dir + "/pipe").c_str(), 0644), 0);
  for (const char* name : {"to-device", "pipe"}) {
    try {
      write_file_atomically(dir + "/" + name, "page");
      FAIL() << "expected an InputError for " << name;
    } catch (const InputError& error) {
      EXPECT_EQ(error.code(), ExitCode::kOutputUnwritable);
      EXPECT_NE(error.message().find("not a regular file"), std::string::npos) << error.what();
    }
  }
  EXPECT_TRUE(std::filesystem::is_symlink(std::filesystem::symlink_status(dir + "/to-device")));
  EXPECT_TRUE(std::filesystem::is_fifo(std::filesystem::symlink_status(dir + "/pipe")));
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"pipe", "to-device"}));
}

TEST(WriteFileAtomically, NewFilesGetTheUsualPermissions) {
  std::string dir = fresh_dir("permissions");
  mode_t mask = ::umask(022);
  write_file_atomically(dir + "/out.html", "x");
  ::umask(mask);
  struct stat info {};
  ASSERT_EQ(::stat((dir + "/out.html").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);  // readable by others, as a report page is meant to be
}

TEST(WriteFileAtomically, ReportsTheRealCauseAndItsOwnCode) {
  std::string dir = fresh_dir("real-cause");
  write_raw(dir + "/a-file", "x");
  try {
    write_file_atomically(dir + "/a-file/page.html", "page");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kOutputUnwritable);
    EXPECT_EQ(error.path(), dir + "/a-file/page.html");
    EXPECT_NE(error.message().find(std::strerror(ENOTDIR)), std::string::npos) << error.what();
  }
}

TEST(WriteFileAtomically, AFolderInTheWayIsRefusedAndNothingLeftBehind) {
  std::string dir = fresh_dir("rename-fails");
  std::filesystem::create_directories(dir + "/page.html/inside");  // a non-empty folder in the way
  try {
    write_file_atomically(dir + "/page.html", "page");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kOutputUnwritable);
  }
  EXPECT_EQ(entries(dir), std::vector<std::string>{"page.html"});
}

// A zstd bomb: `size` bytes of `prefix` then zeros, compressed as a stream. Without a pledged
// size the frame does not declare its content size, as a streaming compressor writes it.
std::string zstd_bomb(const std::string& prefix, size_t size, bool declare_size) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> ctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(ctx.get(), ZSTD_c_contentSizeFlag, declare_size ? 1 : 0);
  if (declare_size) ZSTD_CCtx_setPledgedSrcSize(ctx.get(), size);
  std::string block(1 << 20, '\0');
  std::string out(ZSTD_CStreamOutSize(), '\0');
  std::string compressed;
  size_t done = 0;
  bool first = true;
  while (done < size) {
    std::string chunk = block.substr(0, std::min(block.size(), size - done));
    if (first) chunk.replace(0, prefix.size(), prefix);
    first = false;
    done += chunk.size();
    ZSTD_inBuffer in{chunk.data(), chunk.size(), 0};
    ZSTD_EndDirective mode = done == size ? ZSTD_e_end : ZSTD_e_continue;
    for (;;) {
      ZSTD_outBuffer buffer{out.data(), out.size(), 0};
      size_t left = ZSTD_compressStream2(ctx.get(), &buffer, &in, mode);
      EXPECT_FALSE(ZSTD_isError(left));
      compressed.append(out.data(), buffer.pos);
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size) break;
    }
  }
  return compressed;
}

constexpr size_t kMiB = 1 << 20;
const std::string kNcuRepMagic("NVR\0", 4);

TEST(ZstdBomb, AStreamingFrameStopsAtTheLimit) {
  // 600 MiB of a valid-looking report from a few kB: the limit for so small a file is the floor,
  // 256 MiB (docs/inputs.md).
  std::string dir = fresh_dir("bomb-stream");
  std::string compressed = zstd_bomb(kNcuRepMagic, 600 * kMiB, false);
  ASSERT_LT(compressed.size(), 64 * 1024u);
  ASSERT_EQ(ZSTD_getFrameContentSize(compressed.data(), compressed.size()),
            ZSTD_CONTENTSIZE_UNKNOWN);
  write_raw(dir + "/bomb.ncu-rep.zst", compressed);
  try {
    read_input_file(dir + "/bomb.ncu-rep.zst");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_EQ(error.path(), dir + "/bomb.ncu-rep.zst");
    EXPECT_NE(error.message().find("256 MiB"), std::string::npos) << error.what();
    EXPECT_NE(error.message().find("KPROF_MAX_DECOMPRESSED"), std::string::npos) << error.what();
  }
}

TEST(ZstdBomb, ADeclaredSizeOverTheLimitIsRefusedBeforeDecompressing) {
  std::string dir = fresh_dir("bomb-declared");
  std::string compressed = zstd_bomb(kNcuRepMagic, 600 * kMiB, true);
  ASSERT_EQ(ZSTD_getFrameContentSize(compressed.data(), compressed.size()), 600 * kMiB);
  // Corrupt the compressed body: a reader that decompressed anything would report the damage
  // instead of the declared size.
  for (size_t i = compressed.size() / 2; i < compressed.size(); ++i) compressed[i] ^= 0x5A;
  write_raw(dir + "/bomb.ncu-rep.zst", compressed);
  try {
    read_input_file(dir + "/bomb.ncu-rep.zst");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_NE(error.message().find("600 MiB"), std::string::npos) << error.what();
    EXPECT_NE(error.message().find("256 MiB"), std::string::npos) << error.what();
  }
}

TEST(ZstdBomb, ContentNotRecognizedStopsAfterTheFirstBytes) {
  std::string dir = fresh_dir("bomb-foreign");
  std::string compressed = zstd_bomb("not a report", 64 * kMiB, false);
  // Damage everything after the first block: only a reader that goes on past the head sees it.
  for (size_t i = compressed.size() / 2; i < compressed.size(); ++i) compressed[i] ^= 0x5A;
  write_raw(dir + "/foreign.zst", compressed);
  ContentCheck check{[](std::string_view head) { return head.substr(0, 4) == kNcuRepMagic; },
                     "an Nsight Compute report"};
  try {
    read_input_file(dir + "/foreign.zst", check);
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_EQ(error.message().find("corrupted"), std::string::npos) << error.what();
    EXPECT_NE(error.message().find("an Nsight Compute report"), std::string::npos) << error.what();
  }
  // A recognized head reads on to the end.
  std::string report = read_raw(testing::data_path("h200/big_min.ncu-rep.zst"));
  write_raw(dir + "/report.zst", report);
  EXPECT_EQ(read_input_file(dir + "/report.zst", check).bytes.size(), 738270u);
}

TEST(ZstdBomb, TheLimitFollowsTheCompressedSize) {
  // 1000 times the compressed size, at least 256 MiB, at most 8 GiB (docs/inputs.md).
  EXPECT_EQ(default_decompressed_limit(1000), 256 * kMiB);
  EXPECT_EQ(default_decompressed_limit(1024 * kMiB), 8192 * kMiB);
  EXPECT_EQ(default_decompressed_limit(1 * kMiB), 1000 * kMiB);
}

testing::ProcessResult kprof_with_env(const std::string& assignment,
                                      std::vector<std::string> args) {
  args.insert(args.begin(), {"/usr/bin/env", assignment, KPROF_BINARY});
  return testing::run_process(args);
}

TEST(ZstdBomb, TheCliNamesTheFileAndTheLimitWhichCanBeChanged) {
  // big_full decompresses to 28,712,771 bytes (zstd -l).
  std::string report = testing::data_path("h200/big_full.ncu-rep.zst");
  auto refused = kprof_with_env("KPROF_MAX_DECOMPRESSED=1M", {"analyze", report});
  EXPECT_EQ(refused.exit_code, 4) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
  EXPECT_NE(refused.err.find(report), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("1 MiB"), std::string::npos) << refused.err;
  EXPECT_EQ(kprof_with_env("KPROF_MAX_DECOMPRESSED=64M", {"analyze", report}).exit_code, 0);
  auto bad = kprof_with_env("KPROF_MAX_DECOMPRESSED=lots", {"analyze", report});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("KPROF_MAX_DECOMPRESSED"), std::string::npos) << bad.err;
}

TEST(ZstdBomb, TheCliStopsAtTheFirstBytesOfWhatItCannotRead) {
  std::string dir = fresh_dir("bomb-cli");
  std::string compressed = zstd_bomb("not a report", 64 * kMiB, false);
  for (size_t i = compressed.size() / 2; i < compressed.size(); ++i) compressed[i] ^= 0x5A;
  write_raw(dir + "/foreign.zst", compressed);
  auto result = testing::run_process({KPROF_BINARY, "analyze", dir + "/foreign.zst"});
  EXPECT_EQ(result.exit_code, 4) << result.err;
  EXPECT_NE(result.err.find("not a format kprof reads"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace kprof
