// Reading an input file whole, transparently decompressing zstd (.zst, ncu's .ncu-repz).
#pragma once

#include <string>
#include <string_view>

namespace kprof {

struct FileBytes {
  std::string path;
  std::string bytes;         // decompressed content
  bool was_compressed = false;
};

// Throws InputError (kInputUnreadable for missing/unreadable files, kInputInvalid for a broken
// zstd stream). Offsets in later errors refer to the decompressed bytes when was_compressed.
FileBytes read_input_file(const std::string& path);

// Decompresses a zstd frame sequence held in memory; path is used in error messages only.
std::string zstd_decompress(const std::string& path, std::string_view compressed);

bool has_zstd_magic(std::string_view bytes);

// Writes to a temporary name beside path, then renames: readers never see a partial file.
// Throws InputError (kInputUnreadable) when the directory is not writable.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace kprof
