#include "common/file_bytes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/error.h"

namespace kprof {
namespace {

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kMiB = 1024 * kKiB;
constexpr std::uint64_t kGiB = 1024 * kMiB;
constexpr std::uint64_t kLimitRatio = 1000;
constexpr std::uint64_t kLimitFloor = 256 * kMiB;
constexpr std::uint64_t kLimitCeiling = 8 * kGiB;
constexpr const char* kLimitVariable = "KPROF_MAX_DECOMPRESSED";
// How much of a compressed input is decompressed before its content is checked: enough for any
// importer's recognizes() (a magic number, a CSV header line).
constexpr size_t kHeadBytes = 64 * 1024;

std::string describe_size(std::uint64_t bytes) {
  for (auto [unit, name] : {std::pair{kGiB, "GiB"}, {kMiB, "MiB"}, {kKiB, "KiB"}}) {
    if (bytes < unit) continue;
    if (bytes % unit == 0) return fmt::format("{} {}", bytes / unit, name);
    return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(unit), name);
  }
  return fmt::format("{} bytes", bytes);
}

// The limit for this input and how to say where it comes from.
struct DecompressionLimit {
  std::uint64_t bytes;
  std::string origin;
};

DecompressionLimit decompression_limit(std::uint64_t compressed_size) {
  const char* value = std::getenv(kLimitVariable);
  if (value == nullptr || *value == '\0') {
    return {default_decompressed_limit(compressed_size),
            fmt::format("kprof's limit for {} of zstd data ({} times that, at least {}, at most "
                        "{}); set {}=SIZE (e.g. 16G) to allow more",
                        describe_size(compressed_size), kLimitRatio, describe_size(kLimitFloor),
                        describe_size(kLimitCeiling), kLimitVariable)};
  }
  char* end = nullptr;
  errno = 0;
  unsigned long long number = std::strtoull(value, &end, 10);
  std::string_view suffix(end);
  std::uint64_t unit = suffix.empty()                     ? 1
                       : (suffix == "K" || suffix == "k") ? kKiB
                       : (suffix == "M" || suffix == "m") ? kMiB
                       : (suffix == "G" || suffix == "g") ? kGiB
                       : (suffix == "T" || suffix == "t") ? 1024 * kGiB
                                                          : 0;
  if (end == value || !std::isdigit(static_cast<unsigned char>(*value)) || errno != 0 ||
      unit == 0 || number == 0 || number > UINT64_MAX / unit) {
    throw InputError(ExitCode::kUsage, kLimitVariable, InputPosition::none(),
                     fmt::format("expected a size in bytes with an optional K, M, G or T suffix "
                                 "(e.g. 16G), found \"{}\"",
                                 value));
  }
  return {number * unit, fmt::format("the limit {} sets", kLimitVariable)};
}

[[noreturn]] void throw_too_large(const std::string& path, const DecompressionLimit& limit,
                                  const std::string& what) {
  throw_invalid(path, InputPosition::none(),
                fmt::format("{} {}: {}", what, describe_size(limit.bytes), limit.origin));
}

[[noreturn]] void throw_unrecognized(const std::string& path, const ContentCheck& check,
                                     size_t head) {
  throw_invalid(path, InputPosition::byte(0),
                fmt::format("zstd data that decompresses to what is not {} (checked on its first "
                            "{}; the rest was not decompressed)",
                            check.expected, describe_size(head)));
}

// The sum of the content sizes the frames declare; frames that declare none (streaming
// compressors) count as 0 and are held to the limit while they are decompressed.
std::uint64_t declared_content_size(std::string_view compressed) {
  std::uint64_t total = 0;
  size_t at = 0;
  while (at < compressed.size()) {
    const char* frame = compressed.data() + at;
    unsigned long long size = ZSTD_getFrameContentSize(frame, compressed.size() - at);
    if (size == ZSTD_CONTENTSIZE_ERROR) break;  // the decoder will say what is wrong
    if (size != ZSTD_CONTENTSIZE_UNKNOWN) {
      total = size > UINT64_MAX - total ? UINT64_MAX : total + size;
    }
    size_t length = ZSTD_findFrameCompressedSize(frame, compressed.size() - at);
    if (ZSTD_isError(length)) break;
    at += length;
  }
  return total;
}

std::string random_suffix() {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char random[12];
  size_t filled = 0;
  while (filled < sizeof random) {
    ssize_t n = ::getrandom(random + filled, sizeof random - filled, 0);
    if (n < 0 && errno != EINTR) throw std::runtime_error("getrandom failed");
    if (n > 0) filled += static_cast<size_t>(n);
  }
  std::string suffix;
  for (unsigned char byte : random) suffix += kAlphabet[byte % (sizeof kAlphabet - 1)];
  return suffix;
}

[[noreturn]] void throw_unwritable(const std::string& path, const char* doing, int error) {
  throw InputError(ExitCode::kOutputUnwritable, path, InputPosition::none(),
                   fmt::format("{}: {}", doing, std::strerror(error)));
}

}  // namespace

std::uint64_t default_decompressed_limit(std::uint64_t compressed_size) {
  std::uint64_t scaled =
      compressed_size > kLimitCeiling / kLimitRatio ? kLimitCeiling : compressed_size * kLimitRatio;
  return std::clamp(scaled, kLimitFloor, kLimitCeiling);
}

bool has_zstd_magic(std::string_view bytes) {
  static constexpr unsigned char kMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0;
}

std::string zstd_decompress(const std::string& path, std::string_view compressed,
                            const ContentCheck& check) {
  DecompressionLimit limit = decompression_limit(compressed.size());
  if (std::uint64_t declared = declared_content_size(compressed); declared > limit.bytes) {
    throw_too_large(path, limit,
                    fmt::format("declares {} of content, more than", describe_size(declared)));
  }
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) throw std::bad_alloc();
  std::string out;
  std::string chunk(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  size_t remaining_in_frame = 0;
  bool checked = !check.recognizes;
  for (;;) {
    ZSTD_outBuffer buffer{chunk.data(), chunk.size(), 0};
    remaining_in_frame = ZSTD_decompressStream(ctx.get(), &buffer, &in);
    if (ZSTD_isError(remaining_in_frame)) {
      throw_invalid(path, InputPosition::byte(in.pos),
                    fmt::format("corrupted zstd data: {}", ZSTD_getErrorName(remaining_in_frame)));
    }
    if (buffer.pos > limit.bytes - out.size()) {
      throw_too_large(path, limit, "decompresses to more than");
    }
    out.append(chunk.data(), buffer.pos);
    if (!checked && out.size() >= kHeadBytes) {
      checked = true;
      if (!check.recognizes(out)) throw_unrecognized(path, check, out.size());
    }
    // All input consumed and the decoder did not fill the buffer: it has nothing more to give.
    if (in.pos == in.size && buffer.pos < buffer.size) break;
  }
  if (remaining_in_frame != 0) {
    throw_invalid(path, InputPosition::byte(compressed.size()),
                  "truncated zstd data: the compressed stream ends inside a frame");
  }
  if (!checked && !check.recognizes(out)) throw_unrecognized(path, check, out.size());
  return out;
}

void write_file_atomically(const std::string& path, std::string_view content) {
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") throw_unwritable(path, "cannot write", EISDIR);
  // The destination is replaced, so it must be a file or a link to one (or nothing yet): a link
  // to a device (/dev/stdout) or a named pipe would be replaced instead of written to.
  struct stat target {};
  if (::stat(path.c_str(), &target) == 0 && !S_ISREG(target.st_mode)) {
    if (S_ISDIR(target.st_mode)) throw_unwritable(path, "cannot write", EISDIR);
    throw InputError(ExitCode::kOutputUnwritable, path, InputPosition::none(),
                     "not a regular file (a device, a pipe or a link to one); kprof writes "
                     "files by replacing them, give a file name");
  }

  // O_EXCL: never an existing file, never a link (planted or not); a random name: nobody can
  // plant anything at it in advance. Mode 0666 less the umask, as any new file.
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < 64 && fd < 0; ++attempt) {
    temporary = (slash == std::string::npos ? "" : folder) + name + ".tmp-" + random_suffix();
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw_unwritable(path, "cannot write", errno);

  // Every failure below: the errno of the failing call, then the temporary goes.
  auto fail = [&](const char* doing, int error) {
    if (fd >= 0) ::close(fd);
    ::unlink(temporary.c_str());
    throw_unwritable(path, doing, error);
  };
  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0 && S_ISREG(existing.st_mode) &&
      ::fchmod(fd, existing.st_mode & 07777) != 0) {
    fail("cannot write", errno);
  }
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      fail("cannot write", errno);
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
  if (::fsync(fd) != 0) fail("cannot write", errno);
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail("cannot write", errno);
  if (::rename(temporary.c_str(), path.c_str()) != 0) fail("cannot replace it", errno);
  // The rename itself survives a crash once the folder is synced; failing that loses nothing now.
  if (int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

std::string create_unique_directory(const std::string& prefix) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::string path = prefix + random_suffix();
    if (::mkdir(path.c_str(), 0777) == 0) return path;
    if (errno != EEXIST) throw_unwritable(path, "cannot create the folder", errno);
  }
  throw_unwritable(prefix, "cannot create the folder", EEXIST);
}

FileBytes read_input_file(const std::string& path, const ContentCheck& check) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     fmt::format("cannot open: {}", std::strerror(errno)));
  }
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { ::close(*f); });
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     fmt::format("cannot open: {}", std::strerror(errno)));
  }
  if (S_ISDIR(info.st_mode)) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     "is a directory, expected a report file");
  }
  FileBytes file;
  file.path = path;
  file.bytes.resize(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < file.bytes.size()) {
    ssize_t n = ::read(fd, file.bytes.data() + done, file.bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("read error: {}", std::strerror(errno)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done != file.bytes.size()) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     "read error: the file changed size while being read");
  }
  if (has_zstd_magic(file.bytes)) {
    file.bytes = zstd_decompress(path, file.bytes, check);
    file.was_compressed = true;
  }
  return file;
}

}  // namespace kprof
