// Every scanner implementation compiled in (structural_scan.h: scalar, and SSE2 on x86-64 or NEON
// on aarch64) against a definition written independently of them, on the same inputs: each byte
// value at each of the 16 positions, random bytes at every alignment, and the files given on the
// command line (real traces). No test framework and nothing of kprof but the header, so that
// scripts/test-aarch64 can cross-compile it and run it under qemu-aarch64.
//
// usage: structural_scan_test [--require ISA] [FILE...]   exit 0 when every check passed; with
// --require, also fails unless that implementation (sse2, neon, scalar) was among those tested.
#include "importers/chrome_trace/structural_scan.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using kprof::importers::ScanIsa;

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok && ++failures <= 20) std::fprintf(stderr, "FAIL: %s\n", what.c_str());
}

// The characters the reader stops at, spelled out here rather than taken from the header.
bool is_structural(char c) {
  return std::string_view("\"\\{}[]").find(c) != std::string_view::npos;
}

std::vector<std::size_t> expected_positions(std::string_view text) {
  std::vector<std::size_t> positions;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (is_structural(text[i])) positions.push_back(i);
  }
  return positions;
}

std::uint32_t mask16(ScanIsa isa, const char* p) {
  switch (isa) {
#if defined(__SSE2__)
    case ScanIsa::kSse2:
      return kprof::importers::structural_mask16<ScanIsa::kSse2>(p);
#endif
#if defined(__ARM_NEON)
    case ScanIsa::kNeon:
      return kprof::importers::structural_mask16<ScanIsa::kNeon>(p);
#endif
    default:
      return kprof::importers::structural_mask16<ScanIsa::kScalar>(p);
  }
}

void check_every_byte_at_every_position(ScanIsa isa) {
  const std::string name = kprof::importers::scan_isa_name(isa);
  char block[32];
  for (int offset = 0; offset < 16; ++offset) {  // unaligned loads too
    for (int position = 0; position < 16; ++position) {
      for (int value = 0; value < 256; ++value) {
        std::memset(block, 'a', sizeof block);
        block[offset + position] = static_cast<char>(value);
        std::uint32_t expected = is_structural(static_cast<char>(value)) ? 1u << position : 0u;
        std::uint32_t got = mask16(isa, block + offset);
        check(got == expected, name + ": byte " + std::to_string(value) + " at position " +
                                   std::to_string(position) + " offset " + std::to_string(offset));
      }
    }
  }
  std::memset(block, '"', sizeof block);
  check(mask16(isa, block) == 0xffffu, name + ": sixteen quotes");
}

void check_text(ScanIsa isa, std::string_view text, const std::string& what) {
  const std::string name = kprof::importers::scan_isa_name(isa);
  std::vector<std::size_t> expected = expected_positions(text);
  for (std::size_t shift = 0; shift < 16 && shift <= text.size(); ++shift) {
    std::vector<std::size_t> got = kprof::importers::structural_positions(text.substr(shift), isa);
    std::vector<std::size_t> want;
    for (std::size_t p : expected) {
      if (p >= shift) want.push_back(p - shift);
    }
    check(got == want, name + ": " + what + " from offset " + std::to_string(shift) + " (" +
                           std::to_string(got.size()) + " positions, expected " +
                           std::to_string(want.size()) + ")");
  }
}

kprof::importers::BlockMasks block_masks(ScanIsa isa, const char* p) {
  switch (isa) {
#if defined(__SSE2__)
    case ScanIsa::kSse2:
      return kprof::importers::block_masks64<ScanIsa::kSse2>(p);
#endif
#if defined(__ARM_NEON)
    case ScanIsa::kNeon:
      return kprof::importers::block_masks64<ScanIsa::kNeon>(p);
#endif
    default:
      return kprof::importers::block_masks64<ScanIsa::kScalar>(p);
  }
}

// The 64-byte masks per kind against the same definition, at every offset of the text's first
// kilobytes (unaligned loads), and prefix_xor against a running XOR.
void check_block_masks(ScanIsa isa, std::string_view text, const std::string& what) {
  const std::string name = kprof::importers::scan_isa_name(isa);
  for (std::size_t at = 0; at + 64 <= text.size() && at < 4096; ++at) {
    kprof::importers::BlockMasks got = block_masks(isa, text.data() + at);
    kprof::importers::BlockMasks want;
    for (unsigned i = 0; i < 64; ++i) {
      const std::uint64_t bit = std::uint64_t{1} << i;
      const char c = text[at + i];
      if (c == '"') want.quote |= bit;
      if (c == '\\') want.backslash |= bit;
      if (c == '{' || c == '[') want.open |= bit;
      if (c == '}' || c == ']') want.close |= bit;
    }
    check(got.quote == want.quote && got.backslash == want.backslash && got.open == want.open &&
              got.close == want.close,
          name + ": 64-byte masks of " + what + " at offset " + std::to_string(at));
    std::uint64_t running = 0, expected_xor = 0;
    for (unsigned i = 0; i < 64; ++i) {
      running ^= want.quote >> i & 1;
      expected_xor |= running << i;
    }
    check(kprof::importers::prefix_xor(want.quote) == expected_xor,
          "prefix_xor of " + what + " at offset " + std::to_string(at));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string required;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--require" && i + 1 < argc) {
      required = argv[++i];
    } else {
      files.push_back(argv[i]);
    }
  }
  std::mt19937 random(18);
  std::string noise(1 << 16, '\0');
  for (char& c : noise) c = static_cast<char>(random() & 0xff);
  std::string json_like;  // dense in structural bytes, as trace events are
  const char alphabet[] = "{}[]\"\\:, ab01";
  for (int i = 0; i < (1 << 16); ++i) json_like += alphabet[random() % (sizeof alphabet - 1)];

  std::string tested;
  for (ScanIsa isa : kprof::importers::compiled_scan_isas()) {
    tested += std::string(tested.empty() ? "" : ", ") + kprof::importers::scan_isa_name(isa);
    check_every_byte_at_every_position(isa);
    check_text(isa, noise, "random bytes");
    check_text(isa, json_like, "JSON-like bytes");
    check_text(isa, std::string_view("{\"a\"}"), "a text shorter than 16 bytes");
    check_block_masks(isa, noise, "random bytes");
    check_block_masks(isa, json_like, "JSON-like bytes");
    for (const std::string& file : files) {
      std::ifstream in(file, std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      check(in.good() || in.eof(), "cannot read " + file);
      check(!text.empty(), file + " is empty");
      check_text(isa, text, file);
      check_block_masks(isa, text, file);
    }
  }
  if (!required.empty()) {
    check(tested.find(required) != std::string::npos,
          "required implementation " + required + " not compiled in (tested: " + tested + ")");
  }
  std::printf("structural scan: %s: %s\n", tested.c_str(), failures == 0 ? "ok" : "FAILED");
  return failures == 0 ? 0 : 1;
}
