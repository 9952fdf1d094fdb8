// SHA-256 / SHA-512 compression and padding (FIPS 180-4 §5.1, §6.2, §6.4).
#include "slhdsa/sha2.h"

#include <atomic>
#include <cstring>

// SHA512_Transform (below) is deprecated in OpenSSL 3.0 and still there; this file alone uses it.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#include "pqcd/kernels/isa.h"
#include "slhdsa/backend.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace pqcd::kernels::slhdsa {
namespace {

constexpr uint32_t Rotr32(uint32_t x, int r) {
  return (x >> r) | (x << (32 - r));
}

}  // namespace

void Sha256CompressPortable(uint32_t h[8], const uint8_t block[64]) {
  uint32_t w[64];
  for (int t = 0; t < 16; ++t) w[t] = LoadBe32(block + 4 * t);
  for (int t = 16; t < 64; ++t) {
    const uint32_t s0 = Rotr32(w[t - 15], 7) ^ Rotr32(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = Rotr32(w[t - 2], 17) ^ Rotr32(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; ++t) {
    const uint32_t t1 = hh + (Rotr32(e, 6) ^ Rotr32(e, 11) ^ Rotr32(e, 25)) + ((e & f) ^ (~e & g)) +
                        kSha256K[t] + w[t];
    const uint32_t t2 =
        (Rotr32(a, 2) ^ Rotr32(a, 13) ^ Rotr32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
  SecureZero(w, sizeof(w));
}

// OpenSSL's block function, which has assembly for every CPU it knows (on x86-64 with AVX2 and
// BMI2 about 1.5x the C compression this file had: 236 against 356 ns per block here). SHA-512 is
// OpenSSL's in the rest of pqcd too; resuming from a chaining value needs the block function,
// which OpenSSL 3.0 marks deprecated but keeps (there is no other way to compress one block from
// a given state). The context is a copy: its state is written back and the copy wiped.
void Sha512Compress(uint64_t h[8], const uint8_t block[128]) {
  SHA512_CTX ctx;
  static_assert(sizeof(ctx.h) == 8 * sizeof(uint64_t));
  std::memcpy(ctx.h, h, sizeof(ctx.h));
  SHA512_Transform(&ctx, block);
  std::memcpy(h, ctx.h, sizeof(ctx.h));
  SecureZero(&ctx, sizeof(ctx));
}

__attribute__((noinline)) void WipeStackBelow() {
  // Well beyond the frames of SHA512_Transform and the assembly under it (about 1.5 KiB).
  uint8_t burn[8192];
  SecureZero(burn, sizeof(burn));
  __asm__ volatile("" : : "r"(burn) : "memory");
}

#if defined(__x86_64__)
// FIPS 180-4 §6.2.2 with SHA256RNDS2 (two rounds), SHA256MSG1/MSG2 (the message schedule). The
// instructions keep the state as ABEF and CDGH; the words are big-endian.
__attribute__((target("sha,sse4.1"))) void Sha256CompressShaNi(uint32_t h[8],
                                                               const uint8_t block[64]) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
  __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));
  const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
  const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
  __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
  __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
  const __m128i abef0 = abef, cdgh0 = cdgh;
  __m128i w[16];
  for (int g = 0; g < 4; ++g) {
    w[g] =
        _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * g)), bswap);
  }
  for (int g = 4; g < 16; ++g) {
    const __m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(w[g - 4], w[g - 3]),
                                    _mm_alignr_epi8(w[g - 1], w[g - 2], 4));
    w[g] = _mm_sha256msg2_epu32(t, w[g - 1]);
  }
  for (int g = 0; g < 16; ++g) {
    __m128i m =
        _mm_add_epi32(w[g], _mm_loadu_si128(reinterpret_cast<const __m128i*>(kSha256K + 4 * g)));
    cdgh = _mm_sha256rnds2_epu32(cdgh, abef, m);
    m = _mm_shuffle_epi32(m, 0x0E);
    abef = _mm_sha256rnds2_epu32(abef, cdgh, m);
  }
  abef = _mm_add_epi32(abef, abef0);
  cdgh = _mm_add_epi32(cdgh, cdgh0);
  const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
  const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
  dcba = _mm_blend_epi16(feba, dchg, 0xF0);
  hgfe = _mm_alignr_epi8(dchg, feba, 8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), dcba);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), hgfe);
  for (__m128i& x : w) x = _mm_setzero_si128();
}

bool Sha256ShaNiSupported() {
  // CPUID directly: clang 14's __builtin_cpu_supports does not know "sha". SHA: leaf 7 EBX bit
  // 29; SSE4.1: leaf 1 ECX bit 19.
  static const bool supported = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx) || eax < 7) return false;
    __cpuid_count(1, 0, eax, ebx, ecx, edx);
    const bool sse41 = (ecx >> 19) & 1;
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    return sse41 && ((ebx >> 29) & 1) != 0;
  }();
  return supported;
}
#else
void Sha256CompressShaNi(uint32_t h[8], const uint8_t block[64]) {
  Sha256CompressPortable(h, block);
}
bool Sha256ShaNiSupported() {
  return false;
}
#endif

namespace {
std::atomic<Sha256Path> g_forced{Sha256Path::kAuto};
}  // namespace

Sha256Path ChosenSha256Path() {
  const Sha256Path forced = g_forced.load(std::memory_order_relaxed);
  if (forced != Sha256Path::kAuto) return forced;
  if (ActiveIsa() == Isa::kPortable) return Sha256Path::kPortable;
  const size_t lanes = ActiveBackend().sha256_lanes;
  // Sixteen AVX-512 lanes beat one SHA-NI stream, and so do eight AVX2 lanes that keep each F
  // chain's values across its steps (sha256_chains); eight lanes that lay every step's blocks out
  // only tie with it (bench/RESULTS.md, "SLH-DSA").
  if (lanes >= 16 || ActiveBackend().sha256_chain_lanes > 1) return Sha256Path::kLanes;
  if (Sha256ShaNiSupported()) return Sha256Path::kShaNi;
  return lanes > 1 ? Sha256Path::kLanes : Sha256Path::kPortable;
}

void SetSha256PathForTesting(Sha256Path path) {
  g_forced.store(path, std::memory_order_relaxed);
}

Sha256CompressFn ActiveSha256Compress() {
  // The single-stream hashes (T_l, H_msg, PRF_msg) take SHA-NI on the lanes path too.
  const Sha256Path path = ChosenSha256Path();
  const bool sha_ni =
      path == Sha256Path::kShaNi || (path == Sha256Path::kLanes && Sha256ShaNiSupported());
  return sha_ni ? &Sha256CompressShaNi : &Sha256CompressPortable;
}

Sha256::Sha256() {
  std::memcpy(h_, kSha256Iv, sizeof(h_));
}
Sha256::Sha256(const uint32_t chain[8], uint64_t blocks) : total_(blocks * 64) {
  std::memcpy(h_, chain, sizeof(h_));
}
Sha256::~Sha256() {
  SecureZero(h_, sizeof(h_));
  SecureZero(buf_, sizeof(buf_));
}

void Sha256::Update(Bytes in) {
  if (in.empty()) return;  // an empty span may have no data pointer at all
  const uint8_t* p = in.data();
  size_t len = in.size();
  total_ += len;
  if (fill_ > 0) {
    const size_t take = len < 64 - fill_ ? len : 64 - fill_;
    std::memcpy(buf_ + fill_, p, take);
    fill_ += take;
    p += take;
    len -= take;
    if (fill_ < 64) return;
    compress_(h_, buf_);
    fill_ = 0;
  }
  for (; len >= 64; p += 64, len -= 64) compress_(h_, p);
  if (len > 0) std::memcpy(buf_, p, len);
  fill_ = len;
}

void Sha256::Final(uint8_t* out, size_t out_len) {
  const uint64_t bits = total_ * 8;
  buf_[fill_++] = 0x80;
  if (fill_ > 56) {
    std::memset(buf_ + fill_, 0, 64 - fill_);
    compress_(h_, buf_);
    fill_ = 0;
  }
  std::memset(buf_ + fill_, 0, 56 - fill_);
  StoreBe64(buf_ + 56, bits);
  compress_(h_, buf_);
  uint8_t digest[32];
  for (int i = 0; i < 8; ++i) StoreBe32(digest + 4 * i, h_[i]);
  std::memcpy(out, digest, out_len);
  SecureZero(digest, sizeof(digest));
}

Sha512::Sha512() {
  std::memcpy(h_, kSha512Iv, sizeof(h_));
}
Sha512::Sha512(const uint64_t chain[8], uint64_t blocks) : total_(blocks * 128) {
  std::memcpy(h_, chain, sizeof(h_));
}
Sha512::~Sha512() {
  SecureZero(h_, sizeof(h_));
  SecureZero(buf_, sizeof(buf_));
}

void Sha512::Update(Bytes in) {
  if (in.empty()) return;  // an empty span may have no data pointer at all
  const uint8_t* p = in.data();
  size_t len = in.size();
  total_ += len;
  if (fill_ > 0) {
    const size_t take = len < 128 - fill_ ? len : 128 - fill_;
    std::memcpy(buf_ + fill_, p, take);
    fill_ += take;
    p += take;
    len -= take;
    if (fill_ < 128) return;
    Sha512Compress(h_, buf_);
    fill_ = 0;
  }
  for (; len >= 128; p += 128, len -= 128) Sha512Compress(h_, p);
  if (len > 0) std::memcpy(buf_, p, len);
  fill_ = len;
}

void Sha512::Final(uint8_t* out, size_t out_len) {
  // The length field is 128 bits; messages here are far below 2^64 bits.
  const uint64_t bits = total_ * 8;
  buf_[fill_++] = 0x80;
  if (fill_ > 112) {
    std::memset(buf_ + fill_, 0, 128 - fill_);
    Sha512Compress(h_, buf_);
    fill_ = 0;
  }
  std::memset(buf_ + fill_, 0, 120 - fill_);
  StoreBe64(buf_ + 120, bits);
  Sha512Compress(h_, buf_);
  uint8_t digest[64];
  for (int i = 0; i < 8; ++i) StoreBe64(digest + 8 * i, h_[i]);
  std::memcpy(out, digest, out_len);
  SecureZero(digest, sizeof(digest));
}

}  // namespace pqcd::kernels::slhdsa
