// Reading an input file whole, transparently decompressing zstd (.zst, ncu's .ncu-repz), and
// writing an output file so that nobody sees it half-written and no link planted beside it is
// followed. The path "-" is stdin, read until its end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace kprof {

struct FileBytes {
  std::string path;
  std::string bytes;  // decompressed content
  bool was_compressed = false;
};

// What a caller can read, asked of the first decompressed bytes of a compressed input so that a
// file that expands into something else is refused before the rest is decompressed.
struct ContentCheck {
  std::function<bool(std::string_view head)> recognizes;  // empty: anything goes
  std::string expected;  // completes "decompresses to what is not …": "an ncu report"
};

// How far a zstd input may expand, unless KPROF_MAX_DECOMPRESSED says otherwise: 1000 times its
// compressed size, at least 256 MiB, at most 8 GiB (real reports compress 10 to 80 times; a
// zstd bomb, thousands of times).
std::uint64_t default_decompressed_limit(std::uint64_t compressed_size);

// Throws InputError (kInputInvalid) naming path once `decompressed` bytes have come out of
// `compressed` bytes of `format` data ("gzip") past the limit zstd input is held to
// (default_decompressed_limit, or KPROF_MAX_DECOMPRESSED): the same bound for every compressed
// input, checked as a stream is read.
void check_decompressed_size(const std::string& path, std::string_view format,
                             std::uint64_t compressed, std::uint64_t decompressed);

// The path that names stdin.
inline constexpr std::string_view kStdinPath = "-";
bool is_stdin_path(std::string_view path);

// For readers that stream stdin themselves (traces): claims it for `path` ("-"), throwing
// InputError (kUsage) when it was read already for another input or is a terminal.
void claim_stdin(const std::string& path);

// With a check, a stream (stdin, a pipe, a device) whose first 64 KiB are neither zstd nor
// what the check recognises is read no further: the bytes returned are that head, which the
// caller's parser then refuses. Throws InputError (kInputUnreadable for missing/unreadable files,
// stdin read a second time, and input that cannot be mapped (stdin, a pipe) longer than the limit;
// kInputInvalid for a broken zstd stream, one that expands past the limit or to content `check`
// refuses; kUsage for an unreadable KPROF_MAX_DECOMPRESSED). Offsets in later errors refer to the
// decompressed bytes when was_compressed. Reads until the end of the file, whatever its size says
// (/dev/stdin, a pipe, /proc files).
FileBytes read_input_file(const std::string& path, const ContentCheck& check = {});

// An input's bytes for a reader that only reads them, without a copy of its own where it can be
// helped: a regular file is mapped read-only (MAP_PRIVATE), so its pages are the page cache's —
// clean, shared, reclaimable — and not memory kprof allocated; they count in the process's RSS
// (RssFile) while mapped and touched, and release() gives back those a reader is done with. zstd
// input is decompressed into memory (RssAnon: the decompressed size), and so is input that
// cannot be mapped (stdin, a pipe, an empty file). A file truncated by another program while it
// is mapped ends kprof with exit code kInputUnreadable and one line naming it (SIGBUS caught).
class InputBytes {
 public:
  InputBytes() = default;
  InputBytes(InputBytes&& other) noexcept;
  InputBytes& operator=(InputBytes&& other) noexcept;
  InputBytes(const InputBytes&) = delete;
  InputBytes& operator=(const InputBytes&) = delete;
  ~InputBytes();

  std::string_view view() const { return mapping_ ? std::string_view(mapping_, size_) : owned_; }
  bool was_compressed() const { return was_compressed_; }
  bool is_mapped() const { return mapping_ != nullptr; }
  // Drops the whole pages inside `part` (a slice of view()) from the process's memory; the
  // bytes stay readable (touched again, they come back from the file). No-op when not mapped.
  void release(std::string_view part) const;

 private:
  friend InputBytes open_input_file(const std::string& path, const ContentCheck& check);
  friend InputBytes map_input_descriptor(const std::string& path, int fd, size_t size);
  void unmap();
  const char* mapping_ = nullptr;
  size_t size_ = 0;
  std::string owned_;
  bool was_compressed_ = false;
};

// Same errors as read_input_file.
InputBytes open_input_file(const std::string& path, const ContentCheck& check = {});

// A regular file of `size` bytes (more than 0) that the caller opened as `fd`, mapped as
// open_input_file maps one (a SIGBUS names path), its bytes as they are: no zstd is looked for.
// For a reader that streams a file it has told apart itself (the trace reader, whose gzip input
// is not mapped). The caller may close fd afterwards. Throws InputError (kInputUnreadable) when
// the file cannot be mapped.
InputBytes map_input_descriptor(const std::string& path, int fd, size_t size);

// Decompresses a zstd frame sequence held in memory under the same limit and check; path is used
// in error messages only.
std::string zstd_decompress(const std::string& path, std::string_view compressed,
                            const ContentCheck& check = {});

bool has_zstd_magic(std::string_view bytes);

// Writes content to a new file created exclusively (O_EXCL|O_NOFOLLOW, a random name) beside
// path, syncs it and renames it over path: readers never see a partial file, and a link planted
// at any name the writer uses is never followed. A link at path itself is replaced, not written
// through; a destination that is not a regular file (a device, a pipe, a link to one) is
// refused. An existing file's permission bits are kept. On any failure the temporary is removed
// and an InputError (kOutputUnwritable) names path and the system's reason.
void write_file_atomically(const std::string& path, std::string_view content);

// Creates a new folder prefix + random suffix (mkdir with `mode`, less the umask; never an
// existing folder or link) and returns its path; throws InputError (kOutputUnwritable).
std::string create_unique_directory(const std::string& prefix, unsigned mode = 0777);

}  // namespace kprof
