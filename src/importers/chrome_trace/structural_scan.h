// The Chrome trace reader's inner loop: which of 16 bytes are the characters that matter when a
// JSON value is skipped (quote, backslash, brackets, braces). One implementation per instruction
// set — SSE2 on x86-64, NEON on aarch64, plain C++ everywhere — with the same answers; the reader
// uses the native one, tests run every one compiled in on the same inputs. Header-only and free of
// kprof's other code, so it can be cross-compiled and run under qemu on its own
// (scripts/test-aarch64).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__ARM_NEON)
#include <arm_neon.h>
#endif

namespace kprof::importers {

enum class ScanIsa { kScalar, kSse2, kNeon };

#if defined(__SSE2__)
inline constexpr ScanIsa kNativeScanIsa = ScanIsa::kSse2;
#elif defined(__ARM_NEON)
inline constexpr ScanIsa kNativeScanIsa = ScanIsa::kNeon;
#else
inline constexpr ScanIsa kNativeScanIsa = ScanIsa::kScalar;
#endif

inline constexpr const char* scan_isa_name(ScanIsa isa) {
  switch (isa) {
    case ScanIsa::kSse2:
      return "sse2";
    case ScanIsa::kNeon:
      return "neon";
    case ScanIsa::kScalar:
      break;
  }
  return "scalar";
}

// The implementations compiled into this build: the scalar one and the native one, if any.
inline std::vector<ScanIsa> compiled_scan_isas() {
  std::vector<ScanIsa> isas = {ScanIsa::kScalar};
  if (kNativeScanIsa != ScanIsa::kScalar) isas.push_back(kNativeScanIsa);
  return isas;
}

inline constexpr std::array<bool, 256> kStructuralByte = [] {
  std::array<bool, 256> table{};
  for (unsigned char c : {'"', '\\', '{', '}', '[', ']'}) table[c] = true;
  return table;
}();

// Bit i of the result is set when p[i] (of the 16 bytes at p, any alignment) is structural. Only
// the ISAs compiled_scan_isas() lists may be instantiated.
template <ScanIsa Isa>
std::uint32_t structural_mask16(const char* p);

template <>
inline std::uint32_t structural_mask16<ScanIsa::kScalar>(const char* p) {
  std::uint32_t mask = 0;
  for (unsigned i = 0; i < 16; ++i) {
    if (kStructuralByte[static_cast<unsigned char>(p[i])]) mask |= 1u << i;
  }
  return mask;
}

#if defined(__SSE2__)
template <>
inline std::uint32_t structural_mask16<ScanIsa::kSse2>(const char* p) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  // '[' | 0x20 == '{' and ']' | 0x20 == '}': one comparison each for both bracket kinds.
  const __m128i folded = _mm_or_si128(bytes, _mm_set1_epi8(0x20));
  const __m128i hits = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"')),
                                                 _mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\'))),
                                    _mm_or_si128(_mm_cmpeq_epi8(folded, _mm_set1_epi8('{')),
                                                 _mm_cmpeq_epi8(folded, _mm_set1_epi8('}'))));
  return static_cast<std::uint32_t>(_mm_movemask_epi8(hits));
}
#endif

#if defined(__ARM_NEON)
template <>
inline std::uint32_t structural_mask16<ScanIsa::kNeon>(const char* p) {
  const uint8x16_t bytes = vld1q_u8(reinterpret_cast<const std::uint8_t*>(p));
  const uint8x16_t folded = vorrq_u8(bytes, vdupq_n_u8(0x20));
  const uint8x16_t hits =
      vorrq_u8(vorrq_u8(vceqq_u8(bytes, vdupq_n_u8('"')), vceqq_u8(bytes, vdupq_n_u8('\\'))),
               vorrq_u8(vceqq_u8(folded, vdupq_n_u8('{')), vceqq_u8(folded, vdupq_n_u8('}'))));
  // NEON has no movemask: keep bit (i mod 8) of each hit byte, then add each half's bytes.
  static constexpr std::uint8_t kBits[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                             1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bits = vandq_u8(hits, vld1q_u8(kBits));
  return static_cast<std::uint32_t>(vaddv_u8(vget_low_u8(bits))) |
         static_cast<std::uint32_t>(vaddv_u8(vget_high_u8(bits))) << 8;
}
#endif

// The structural bytes of 64 bytes, one mask per kind (bit i: p[i]): what lets the reader walk a
// block whose strings hold no backslash by its brackets alone, the strings found from the quotes
// by a prefix XOR (prefix_xor below) instead of quote by quote.
struct BlockMasks {
  std::uint64_t quote = 0, backslash = 0, open = 0, close = 0;  // open: { [  close: } ]
};

template <ScanIsa Isa>
BlockMasks block_masks64(const char* p);

template <>
inline BlockMasks block_masks64<ScanIsa::kScalar>(const char* p) {
  BlockMasks m;
  for (unsigned i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    switch (p[i]) {
      case '"':
        m.quote |= bit;
        break;
      case '\\':
        m.backslash |= bit;
        break;
      case '{':
      case '[':
        m.open |= bit;
        break;
      case '}':
      case ']':
        m.close |= bit;
        break;
      default:
        break;
    }
  }
  return m;
}

#if defined(__SSE2__)
template <>
inline BlockMasks block_masks64<ScanIsa::kSse2>(const char* p) {
  BlockMasks m;
  for (unsigned k = 0; k < 4; ++k) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    const __m128i folded = _mm_or_si128(bytes, _mm_set1_epi8(0x20));  // [ -> {, ] -> }
    auto bits = [&](__m128i hits) {
      return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(hits)))
             << (16 * k);
    };
    m.quote |= bits(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"')));
    m.backslash |= bits(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('\\')));
    m.open |= bits(_mm_cmpeq_epi8(folded, _mm_set1_epi8('{')));
    m.close |= bits(_mm_cmpeq_epi8(folded, _mm_set1_epi8('}')));
  }
  return m;
}
#endif

#if defined(__ARM_NEON)
template <>
inline BlockMasks block_masks64<ScanIsa::kNeon>(const char* p) {
  static constexpr std::uint8_t kBits[16] = {1, 2, 4, 8, 16, 32, 64, 128,
                                             1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t weights = vld1q_u8(kBits);
  BlockMasks m;
  for (unsigned k = 0; k < 4; ++k) {
    const uint8x16_t bytes = vld1q_u8(reinterpret_cast<const std::uint8_t*>(p + 16 * k));
    const uint8x16_t folded = vorrq_u8(bytes, vdupq_n_u8(0x20));
    auto bits = [&](uint8x16_t hits) {  // as structural_mask16: no movemask on NEON
      const uint8x16_t weighted = vandq_u8(hits, weights);
      const std::uint64_t low = vaddv_u8(vget_low_u8(weighted));
      const std::uint64_t high = vaddv_u8(vget_high_u8(weighted));
      return (low | high << 8) << (16 * k);
    };
    m.quote |= bits(vceqq_u8(bytes, vdupq_n_u8('"')));
    m.backslash |= bits(vceqq_u8(bytes, vdupq_n_u8('\\')));
    m.open |= bits(vceqq_u8(folded, vdupq_n_u8('{')));
    m.close |= bits(vceqq_u8(folded, vdupq_n_u8('}')));
  }
  return m;
}
#endif

// Bit i of the result: the XOR of bits 0..i of x (with x the quotes of a block, the bytes from
// an opening quote up to, not including, its closing one).
inline std::uint64_t prefix_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// Offsets of every structural byte of text, found 16 bytes at a time with Isa and the tail byte
// by byte (what the reader's loop does; for tests).
template <ScanIsa Isa>
std::vector<std::size_t> structural_positions(std::string_view text) {
  std::vector<std::size_t> positions;
  std::size_t i = 0;
  for (; i + 16 <= text.size(); i += 16) {
    for (std::uint32_t mask = structural_mask16<Isa>(text.data() + i); mask != 0;
         mask &= mask - 1) {
      positions.push_back(i + static_cast<std::size_t>(__builtin_ctz(mask)));
    }
  }
  for (; i < text.size(); ++i) {
    if (kStructuralByte[static_cast<unsigned char>(text[i])]) positions.push_back(i);
  }
  return positions;
}

inline std::vector<std::size_t> structural_positions(std::string_view text, ScanIsa isa) {
  switch (isa) {
#if defined(__SSE2__)
    case ScanIsa::kSse2:
      return structural_positions<ScanIsa::kSse2>(text);
#endif
#if defined(__ARM_NEON)
    case ScanIsa::kNeon:
      return structural_positions<ScanIsa::kNeon>(text);
#endif
    case ScanIsa::kScalar:
      return structural_positions<ScanIsa::kScalar>(text);
    default:
      break;
  }
  throw std::invalid_argument(std::string("scan ISA not compiled in: ") + scan_isa_name(isa));
}

}  // namespace kprof::importers
