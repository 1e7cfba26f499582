#include "common/file_bytes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <utility>

#include "common/error.h"
#include "common/opened_inputs.h"

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

DecompressionLimit decompression_limit(std::uint64_t compressed_size,
                                       std::string_view format = "zstd") {
  const char* value = std::getenv(kLimitVariable);
  if (value == nullptr || *value == '\0') {
    return {default_decompressed_limit(compressed_size),
            fmt::format("kprof's limit for {} of {} data ({} times that, at least {}, at most "
                        "{}); set {}=SIZE (e.g. 16G) to allow more",
                        describe_size(compressed_size), format, kLimitRatio,
                        describe_size(kLimitFloor), describe_size(kLimitCeiling), kLimitVariable)};
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

void check_decompressed_size(const std::string& path, std::string_view format,
                             std::uint64_t compressed, std::uint64_t decompressed) {
  if (decompressed <= kLimitFloor && std::getenv(kLimitVariable) == nullptr) return;  // cheap path
  DecompressionLimit limit = decompression_limit(compressed, format);
  if (decompressed > limit.bytes) {
    throw_too_large(path, limit, fmt::format("{} data that decompresses to more than", format));
  }
}

bool has_zstd_magic(std::string_view bytes) {
  static constexpr unsigned char kMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0;
}

std::string zstd_decompress(const std::string& path, std::string_view compressed,
                            const ContentCheck& check) {
  DecompressionLimit limit = decompression_limit(compressed.size());
  std::uint64_t declared = declared_content_size(compressed);
  if (declared > limit.bytes) {
    throw_too_large(path, limit,
                    fmt::format("declares {} of content, more than", describe_size(declared)));
  }
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) throw std::bad_alloc();
  std::string out;
  // The declared size at once: growing by doubling would hold the old and the new buffer, up to
  // twice the content, while copying. Its pages are only touched as the content arrives.
  // A declared size the machine cannot reserve (a bomb within the limit) is left to grow.
  try {
    out.reserve(static_cast<size_t>(declared));
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
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

std::string create_unique_directory(const std::string& prefix, unsigned mode) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::string path = prefix + random_suffix();
    if (::mkdir(path.c_str(), static_cast<mode_t>(mode)) == 0) return path;
    if (errno != EEXIST) throw_unwritable(path, "cannot create the folder", errno);
  }
  throw_unwritable(prefix, "cannot create the folder", EEXIST);
}

bool is_stdin_path(std::string_view path) { return path == kStdinPath; }

void claim_stdin(const std::string& path) {
  // stdin can be read once: a second "-" would read nothing and call it empty.
  static std::atomic<bool> taken{false};
  if (taken.exchange(true)) {
    throw InputError(ExitCode::kUsage, path, InputPosition::none(),
                     "stdin was already read for another input; give \"-\" once");
  }
  if (::isatty(STDIN_FILENO)) {
    throw InputError(ExitCode::kUsage, path, InputPosition::none(),
                     "stdin is a terminal: pipe the input in (`kprof ... - < FILE`)");
  }
}

namespace {

// Where messages say an input is: "-" is stdin.
std::string describe_input(const std::string& path) {
  return is_stdin_path(path) ? "stdin" : "the file";
}

[[noreturn]] void throw_unreadable(const std::string& path, std::string message) {
  throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(), std::move(message));
}

// An open input: the file, or stdin (which is not closed: it is the process's).
class InputFd {
 public:
  explicit InputFd(const std::string& path) : path_(path) {
    const OpenedInputs* inputs = OpenedInputs::current();
    if (is_stdin_path(path) && inputs == nullptr) {
      claim_stdin(path);
      fd_ = STDIN_FILENO;
    } else {
      // Where the request's files were opened before it ran (kprof mcp), the descriptor of the
      // one checked, reopened through /proc for an offset of its own; a name it was not given is
      // refused (opened_inputs.h).
      const std::string opened = inputs != nullptr ? inputs->reopen_name(path) : path;
      fd_ = ::open(opened.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) throw_unreadable(path, fmt::format("cannot open: {}", std::strerror(errno)));
      owned_ = true;
    }
    if (::fstat(fd_, &info_) != 0) {
      int error = errno;
      close();
      throw_unreadable(path, fmt::format("cannot open: {}", std::strerror(error)));
    }
    if (S_ISDIR(info_.st_mode)) {
      close();
      throw_unreadable(path, "is a directory, expected a report file");
    }
  }
  ~InputFd() { close(); }
  InputFd(const InputFd&) = delete;
  InputFd& operator=(const InputFd&) = delete;

  int fd() const { return fd_; }
  // A regular file with content: it can be mapped (stdin redirected from a file too).
  bool mappable() const { return S_ISREG(info_.st_mode) && info_.st_size > 0; }
  size_t size() const { return static_cast<size_t>(info_.st_size); }

  // Everything until the end of the input. Input that cannot be mapped (stdin from a pipe) is
  // held to the same limit as decompressed data, since it is all held in memory. With a check,
  // a stream is sniffed first: once its first kHeadBytes are neither zstd nor recognised, only
  // they are returned (the reader then says what they are not), so /dev/zero or a pipe of
  // something else is refused after 64 KiB, not after gigabytes.
  std::string read_to_end(const ContentCheck& check = {}) const {
    bool sniffed = !check.recognizes || S_ISREG(info_.st_mode);
    std::string bytes;
    std::uint64_t limit = UINT64_MAX;
    std::string limit_origin;
    if (S_ISREG(info_.st_mode)) {
      bytes.reserve(size() + 1);
    } else if (const char* set = std::getenv(kLimitVariable); set != nullptr && *set != '\0') {
      DecompressionLimit held = decompression_limit(0);
      limit = held.bytes;
      limit_origin = held.origin;
    } else {
      limit = kLimitCeiling;
      limit_origin = fmt::format(
          "kprof's limit for {} (held in memory); set {}=SIZE (e.g. 16G) to allow more",
          is_stdin_path(path_) ? "stdin" : "input that is not a regular file", kLimitVariable);
    }
    for (;;) {
      if (bytes.size() == bytes.capacity()) {
        // Full (a regular file is sized exactly, with a byte to spare): grow only if there is
        // more to read, so that reading a file whole never doubles its buffer.
        char probe[64 * 1024];
        ssize_t n = read_some(probe, sizeof probe);
        if (n == 0) break;
        bytes.reserve(std::max(bytes.size() * 2, bytes.size() + sizeof probe));
        bytes.append(probe, static_cast<size_t>(n));
      } else {
        size_t start = bytes.size();
        bytes.resize(bytes.capacity());
        ssize_t n = read_some(bytes.data() + start, bytes.size() - start);
        bytes.resize(start + static_cast<size_t>(n));
        if (n == 0) break;
      }
      if (!sniffed && bytes.size() >= kHeadBytes) {
        sniffed = true;
        if (!has_zstd_magic(bytes) && !check.recognizes(bytes)) return bytes;
      }
      if (bytes.size() > limit) {
        throw_unreadable(path_,
                         fmt::format("more than {}: {}", describe_size(limit), limit_origin));
      }
    }
    return bytes;
  }

 private:
  // Some bytes, 0 at the end; retried on EINTR.
  ssize_t read_some(char* into, size_t capacity) const {
    for (;;) {
      ssize_t n = ::read(fd_, into, capacity);
      if (n >= 0) return n;
      if (errno != EINTR) {
        throw_unreadable(path_, fmt::format("read error: {}", std::strerror(errno)));
      }
    }
  }

  void close() {
    if (owned_ && fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  const std::string& path_;
  int fd_ = -1;
  bool owned_ = false;
  struct stat info_ {};
};

void refuse_empty(const std::string& path, std::string_view bytes) {
  if (bytes.empty() && is_stdin_path(path)) {
    throw_invalid(path, InputPosition::none(),
                  "stdin is empty: pipe the input in (`kprof ... - < FILE`) or give its path");
  }
}

// Live mappings, so that a SIGBUS (the file shrank under the mapping) names the file. A fixed
// table: the handler may only read memory that is there already.
struct MappingSlot {
  std::atomic<const char*> start{nullptr};
  std::atomic<size_t> size{0};
  char path[512] = {};
};
std::array<MappingSlot, 16> mapping_slots;

void on_sigbus(int signal, siginfo_t* info, void*) {
  const char* address = static_cast<const char*>(info->si_addr);
  for (MappingSlot& slot : mapping_slots) {
    const char* start = slot.start.load();
    if (start == nullptr || address < start || address >= start + slot.size.load()) continue;
    // Async-signal-safe: write(2) and _exit(2) only.
    auto say = [](const char* text) {
      if (::write(STDERR_FILENO, text, std::strlen(text)) < 0) return;
    };
    say("kprof: ");
    say(slot.path);
    say(": the file shrank while kprof was reading it (another program truncated or replaced "
        "it in place)\n");
    ::_exit(static_cast<int>(ExitCode::kInputUnreadable));
  }
  ::signal(signal, SIG_DFL);  // not ours: the default action, as if no handler were there
  ::raise(signal);
}

void track_mapping(const char* start, size_t size, const std::string& path) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, nullptr);
  });
  static std::mutex lock;
  std::lock_guard guard(lock);
  for (MappingSlot& slot : mapping_slots) {
    if (slot.start.load() != nullptr) continue;
    std::snprintf(slot.path, sizeof slot.path, "%s", path.c_str());
    slot.size.store(size);
    slot.start.store(start);
    return;
  }
  // More live mappings than slots: a SIGBUS there ends kprof as an uncaught signal would.
}

void untrack_mapping(const char* start) {
  for (MappingSlot& slot : mapping_slots) {
    const char* expected = start;
    if (slot.start.compare_exchange_strong(expected, nullptr)) return;
  }
}

}  // namespace

FileBytes read_input_file(const std::string& path, const ContentCheck& check) {
  InputFd input(path);
  FileBytes file;
  file.path = path;
  file.bytes = input.read_to_end(check);
  refuse_empty(path, file.bytes);
  if (has_zstd_magic(file.bytes)) {
    file.bytes = zstd_decompress(path, file.bytes, check);
    file.was_compressed = true;
  }
  return file;
}

InputBytes::InputBytes(InputBytes&& other) noexcept { *this = std::move(other); }

InputBytes& InputBytes::operator=(InputBytes&& other) noexcept {
  if (this == &other) return *this;
  unmap();
  mapping_ = std::exchange(other.mapping_, nullptr);
  size_ = std::exchange(other.size_, 0);
  owned_ = std::move(other.owned_);
  was_compressed_ = other.was_compressed_;
  return *this;
}

InputBytes::~InputBytes() { unmap(); }

void InputBytes::unmap() {
  if (mapping_ == nullptr) return;
  untrack_mapping(mapping_);
  ::munmap(const_cast<char*>(mapping_), size_);
  mapping_ = nullptr;
  size_ = 0;
}

void InputBytes::release(std::string_view part) const {
  if (mapping_ == nullptr || part.empty()) return;
  static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto begin = reinterpret_cast<std::uintptr_t>(part.data());
  auto end = begin + part.size();
  auto map_begin = reinterpret_cast<std::uintptr_t>(mapping_);
  if (begin < map_begin || end > map_begin + size_) return;  // not a slice of this input
  std::uintptr_t first = (begin + page - 1) / page * page;
  std::uintptr_t last = end / page * page;
  // MADV_DONTNEED on a private, never written file mapping drops the pages from this process
  // only; the page cache keeps them and a later read maps them again: nothing is lost.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

InputBytes map_input_descriptor(const std::string& path, int fd, size_t size) {
  InputBytes result;
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (mapped == MAP_FAILED) {
    throw_unreadable(path,
                     fmt::format("cannot map {}: {}", describe_input(path), std::strerror(errno)));
  }
  result.mapping_ = static_cast<const char*>(mapped);
  result.size_ = size;
  track_mapping(result.mapping_, result.size_, path);
  // Read front to back (an ncu report by its container walk, then result by result; a trace
  // event by event).
  ::madvise(mapped, size, MADV_SEQUENTIAL);
  return result;
}

InputBytes open_input_file(const std::string& path, const ContentCheck& check) {
  InputFd input(path);
  InputBytes result;
  std::string_view bytes;
  if (input.mappable()) {
    result = map_input_descriptor(path, input.fd(), input.size());
    bytes = result.view();
  } else {
    result.owned_ = input.read_to_end(check);
    bytes = result.owned_;
  }
  refuse_empty(path, bytes);
  if (has_zstd_magic(bytes)) {
    std::string decompressed = zstd_decompress(path, bytes, check);
    result.unmap();
    result.owned_ = std::move(decompressed);
    result.was_compressed_ = true;
  }
  return result;
}

}  // namespace kprof
