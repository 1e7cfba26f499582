// Reading an input file whole, transparently decompressing zstd (.zst, ncu's .ncu-repz), and
// writing an output file so that nobody sees it half-written and no link planted beside it is
// followed.
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

// Throws InputError (kInputUnreadable for missing/unreadable files, kInputInvalid for a broken
// zstd stream, one that expands past the limit or to content `check` refuses; kUsage for an
// unreadable KPROF_MAX_DECOMPRESSED). Offsets in later errors refer to the decompressed bytes
// when was_compressed.
FileBytes read_input_file(const std::string& path, const ContentCheck& check = {});

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

// Creates a new folder prefix + random suffix (mkdir, never an existing folder or link) and
// returns its path; throws InputError (kOutputUnwritable).
std::string create_unique_directory(const std::string& prefix);

}  // namespace kprof
