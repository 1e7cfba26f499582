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
