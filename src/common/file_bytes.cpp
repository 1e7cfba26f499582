#include "common/file_bytes.h"

#include <fmt/format.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "common/error.h"

namespace kprof {

bool has_zstd_magic(std::string_view bytes) {
  static constexpr unsigned char kMagic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  return bytes.size() >= 4 && std::memcmp(bytes.data(), kMagic, 4) == 0;
}

std::string zstd_decompress(const std::string& path, std::string_view compressed) {
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) throw std::bad_alloc();
  std::string out;
  std::string chunk(ZSTD_DStreamOutSize(), '\0');
  ZSTD_inBuffer in{compressed.data(), compressed.size(), 0};
  size_t remaining_in_frame = 0;
  for (;;) {
    ZSTD_outBuffer buffer{chunk.data(), chunk.size(), 0};
    remaining_in_frame = ZSTD_decompressStream(ctx.get(), &buffer, &in);
    if (ZSTD_isError(remaining_in_frame)) {
      throw_invalid(path, InputPosition::byte(in.pos),
                    fmt::format("corrupted zstd data: {}", ZSTD_getErrorName(remaining_in_frame)));
    }
    out.append(chunk.data(), buffer.pos);
    // All input consumed and the decoder did not fill the buffer: it has nothing more to give.
    if (in.pos == in.size && buffer.pos < buffer.size) break;
  }
  if (remaining_in_frame != 0) {
    throw_invalid(path, InputPosition::byte(compressed.size()),
                  "truncated zstd data: the compressed stream ends inside a frame");
  }
  return out;
}

void write_file_atomically(const std::string& path, std::string_view content) {
  std::string temporary = fmt::format("{}.tmp-{}", path, ::getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                       fmt::format("cannot write: {}", std::strerror(errno)));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    int error = errno;
    std::remove(temporary.c_str());
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     fmt::format("cannot write: {}", std::strerror(error)));
  }
}

FileBytes read_input_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     fmt::format("cannot open: {}", std::strerror(errno)));
  }
  if (S_ISDIR(info.st_mode)) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     "is a directory, expected a report file");
  }
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     fmt::format("cannot open: {}", std::strerror(errno)));
  }
  FileBytes file;
  file.path = path;
  file.bytes.resize(static_cast<size_t>(info.st_size));
  stream.read(file.bytes.data(), static_cast<std::streamsize>(file.bytes.size()));
  if (static_cast<size_t>(stream.gcount()) != file.bytes.size()) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(),
                     "read error: the file changed size while being read");
  }
  if (has_zstd_magic(file.bytes)) {
    file.bytes = zstd_decompress(path, file.bytes);
    file.was_compressed = true;
  }
  return file;
}

}  // namespace kprof
