// SHA-256 of bytes or of a file (OpenSSL), as lowercase hex: evidence bundles list a digest per
// file, and copies out of a pod are verified against the digest computed inside it.
#pragma once

#include <string>
#include <string_view>

namespace kprof {

std::string sha256_hex(std::string_view bytes);
// Streams the file; throws InputError (kInputUnreadable) when it cannot be read.
std::string sha256_file_hex(const std::string& path);

}  // namespace kprof
