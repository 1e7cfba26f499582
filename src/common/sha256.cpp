#include "common/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>

#include "common/error.h"

namespace kprof {
namespace {

class Digest {
 public:
  Digest() : context_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
      throw std::runtime_error("OpenSSL could not start a SHA-256 digest");
    }
  }
  void update(const char* data, size_t size) { EVP_DigestUpdate(context_.get(), data, size); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(context_.get(), digest, &length);
    static const char* kHex = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
      out += kHex[digest[i] >> 4];
      out += kHex[digest[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context_;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  Digest digest;
  digest.update(bytes.data(), bytes.size());
  return digest.hex();
}

std::string sha256_file_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(), std::strerror(errno));
  }
  Digest digest;
  std::unique_ptr<char[]> buffer(new char[1 << 20]);
  while (in) {
    in.read(buffer.get(), 1 << 20);
    digest.update(buffer.get(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) {
    throw InputError(ExitCode::kInputUnreadable, path, InputPosition::none(), "read error");
  }
  return digest.hex();
}

}  // namespace kprof
