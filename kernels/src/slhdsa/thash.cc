// SLH-DSA hash functions: SHAKE (FIPS 205 §11.1) on multi-lane Keccak, SHA2 (§11.2) from the
// saved chaining value of PK.seed's block.
#include "slhdsa/thash.h"

#include <algorithm>

#include "keccak/keccak_multi.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/sha3.h"
#include "slhdsa/backend.h"
#include "slhdsa/sha2.h"

namespace pqcd::kernels::slhdsa {
namespace {

constexpr size_t kShake256Rate = 136;
// Below this many one-block calls the SHA-2 lanes are not used (Hashes::OneBlock).
constexpr size_t kFewCalls = 3;
// Keccak states per permutation call for the one-block SHAKE hashes: eight where the backend
// permutes eight at once (AVX-512); four on AVX2, its vector permutation (the fused four + one
// scalar state of keccak_multi.h costs 1.38x the four alone on a Sapphire Rapids class Xeon, 320
// against 292 ticks per state, and 1.23x on Zen 5: per state no better anywhere, 10% worse on
// Intel); else five (the NEON table's fused x4x1, the portable code one state at a time).
constexpr size_t kMaxLanes = 8;
size_t GroupLanes() {
  switch (ActiveIsa()) {
    case Isa::kAvx512:
      return 8;
    case Isa::kAvx2:
      return 4;
    default:
      return 5;
  }
}

uint64_t Load64Le(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // x86_64 and aarch64 are little-endian (checked in common.h)
}
void Store64Le(uint8_t* p, uint64_t v) {
  std::memcpy(p, &v, 8);
}

// ADRSc (§11.2): layer (1 byte), the low 8 bytes of the tree address, type (1 byte), the last
// 12 bytes.
void Compress(const Adrs& a, uint8_t out[kAdrscBytes]) {
  out[0] = a.b[3];
  std::memcpy(out + 1, a.b + 8, 8);
  out[9] = a.b[19];
  std::memcpy(out + 10, a.b + 20, 12);
}

// The SHA2 hash of the set's "wide" functions (H, T_l, H_msg, PRF_msg): SHA-256 for n = 16,
// SHA-512 for n = 24 and 32 (§11.2.1 / §11.2.2).
bool Wide(const SlhDsaParams& p) {
  return !p.shake && p.n > 16;
}

template <class Sha>
void Mgf1(const uint8_t* seed, size_t seed_len, uint8_t* out, size_t out_len, size_t digest) {
  uint8_t block[64];
  for (uint32_t counter = 0; out_len > 0; ++counter) {
    uint8_t c[4];
    StoreBe32(c, counter);
    Sha h;
    h.Update(Bytes(seed, seed_len));
    h.Update(Bytes(c, 4));
    h.Final(block, digest);
    const size_t take = std::min(out_len, digest);
    std::memcpy(out, block, take);
    out += take;
    out_len -= take;
  }
}

template <class Sha>
void Hmac(const uint8_t* key, size_t key_len, size_t block, size_t digest, Bytes first,
          std::span<const Bytes> rest, uint8_t* out, size_t out_len) {
  uint8_t pad[128] = {};
  std::memcpy(pad, key, key_len);  // key_len <= 32 < block: no key hashing
  for (size_t i = 0; i < block; ++i) pad[i] ^= 0x36;
  uint8_t inner[64];
  {
    Sha h;
    h.Update(Bytes(pad, block));
    h.Update(first);
    for (Bytes part : rest) h.Update(part);
    h.Final(inner, digest);
  }
  for (size_t i = 0; i < block; ++i) pad[i] ^= 0x36 ^ 0x5c;
  Sha h;
  h.Update(Bytes(pad, block));
  h.Update(Bytes(inner, digest));
  uint8_t full[64];
  h.Final(full, digest);
  std::memcpy(out, full, out_len);
  SecureZero(pad, sizeof(pad));
  SecureZero(inner, sizeof(inner));
  SecureZero(full, sizeof(full));
  WipeStackBelow();  // the compressions' schedules of the key block (OpenSSL's, for SHA-512)
}

// One-block hashes on a backend's SHA-2 lanes (SHA-256: Word uint32_t, 64-byte blocks; SHA-512:
// uint64_t, 128): ADRSc || data || padding after the chaining value of PK.seed's block, `lanes`
// blocks per call with the chaining words interleaved (word w of lane j at v[w * lanes + j]).
template <class Word, size_t kBlock, size_t kMax>
void CompressLanes(void (*fn)(Word*, const uint8_t* const*), size_t lanes, const Word* chain,
                   const Adrs* adrs, const uint8_t* const* data, size_t data_len,
                   uint8_t* const* out, size_t n, size_t count) {
  uint8_t blks[kMax][kBlock];
  const uint8_t* ptrs[kMax];
  Word v[8 * kMax];
  for (size_t done = 0; done < count; done += lanes) {
    const size_t live = std::min(lanes, count - done);
    for (size_t j = 0; j < lanes; ++j) {
      uint8_t* b = blks[j];
      if (j < live) {
        Compress(adrs[done + j], b);
        std::memcpy(b + kAdrscBytes, data[done + j], data_len);
      } else {
        std::memset(b, 0, kAdrscBytes + data_len);  // an idle lane: a block of zeros
      }
      PadAfterChain(b, kBlock, kBlock, kAdrscBytes + data_len);
      ptrs[j] = b;
      for (int w = 0; w < 8; ++w) v[w * lanes + j] = chain[w];
    }
    fn(v, ptrs);
    for (size_t j = 0; j < live; ++j) {
      uint8_t full[8 * sizeof(Word)];
      for (int w = 0; w < 8; ++w) {
        if constexpr (sizeof(Word) == 4) {
          StoreBe32(full + 4 * w, v[w * lanes + j]);
        } else {
          StoreBe64(full + 8 * w, v[w * lanes + j]);
        }
      }
      std::memcpy(out[done + j], full, n);
      SecureZero(full, sizeof(full));  // PRF outputs are secret
    }
  }
  SecureZero(blks, sizeof(blks));
  SecureZero(v, sizeof(v));
}

// The order of m chains by their steps, most first, stable (steps are public): a counting sort
// where every chain is below 16 steps (WOTS+ chains; FORS leaves), else std::stable_sort.
void OrderBySteps(const uint32_t* steps, size_t m, uint16_t* order) {
  constexpr uint32_t kBuckets = 16;
  uint32_t most = 0;
  for (size_t k = 0; k < m; ++k) most = std::max(most, steps[k]);
  if (most >= kBuckets) {
    for (size_t k = 0; k < m; ++k) order[k] = static_cast<uint16_t>(k);
    std::stable_sort(order, order + m, [&](uint16_t x, uint16_t y) { return steps[x] > steps[y]; });
    return;
  }
  uint16_t at[kBuckets + 1] = {};
  for (size_t k = 0; k < m; ++k) ++at[most - steps[k] + 1];
  for (uint32_t b = 1; b <= kBuckets; ++b) at[b] = static_cast<uint16_t>(at[b] + at[b - 1]);
  for (size_t k = 0; k < m; ++k) order[at[most - steps[k]]++] = static_cast<uint16_t>(k);
}

}  // namespace

Hashes::Hashes(const SlhDsaParams& p, const uint8_t* pk_seed, const uint8_t* sk_seed,
               const uint32_t* sha256_chain, const uint64_t* sha512_chain)
    : p_(p),
      pk_seed_(pk_seed),
      sk_seed_(sk_seed),
      compress256_(ActiveSha256Compress()),
      group_lanes_(GroupLanes()) {
  if (!p.shake && ChosenSha256Path() == Sha256Path::kLanes) {
    sha256_lanes_fn_ = ActiveBackend().sha256_compress_lanes;
    sha256_lanes_ = ActiveBackend().sha256_lanes;
  }
  if (!p.shake && ChosenSha256Path() != Sha256Path::kPortable && ActiveBackend().sha512_lanes > 1) {
    sha512_lanes_fn_ = ActiveBackend().sha512_compress_lanes;
    sha512_lanes_ = ActiveBackend().sha512_lanes;
    if (ActiveBackend().sha512_h_lanes > 1) sha512_h_fn_ = ActiveBackend().sha512_h;
  }
  if (!p.shake) {
    // Chains keep their values in the backend's lanes where it has chain lanes of its own; one
    // chain at a time on the single-block compression where that is the path; step by step on
    // lanes without chains (sha256_compress_lanes, every step's blocks laid out).
    if (ChosenSha256Path() != Sha256Path::kLanes) {
      sha256_chains_fn_ = &portable::Sha256Chains;
    } else if (ActiveBackend().sha256_chain_lanes > 1) {
      sha256_chains_fn_ = ActiveBackend().sha256_chains;
      sha256_chain_lanes_ = ActiveBackend().sha256_chain_lanes;
    }
  }
  if (p.shake) {
    for (int l = 0; l < p.n / 8; ++l) pk_seed_lanes_[l] = Load64Le(pk_seed + 8 * l);
    return;
  }
  if (sha256_chain != nullptr && sha512_chain != nullptr) {
    std::memcpy(sha256_chain_, sha256_chain, sizeof(sha256_chain_));
    std::memcpy(sha512_chain_, sha512_chain, sizeof(sha512_chain_));
    return;
  }
  uint8_t block[128] = {};
  std::memcpy(block, pk_seed, static_cast<size_t>(p.n));
  std::memcpy(sha256_chain_, kSha256Iv, sizeof(sha256_chain_));
  compress256_(sha256_chain_, block);
  if (Wide(p)) {
    std::memcpy(sha512_chain_, kSha512Iv, sizeof(sha512_chain_));
    Sha512Compress(sha512_chain_, block);
  }
}

Hashes::~Hashes() {
  SecureZero(sha256_chain_, sizeof(sha256_chain_));
  SecureZero(sha512_chain_, sizeof(sha512_chain_));
}

void Hashes::ExportChains(uint32_t sha256_chain[8], uint64_t sha512_chain[8]) const {
  std::memcpy(sha256_chain, sha256_chain_, sizeof(sha256_chain_));
  std::memcpy(sha512_chain, sha512_chain_, sizeof(sha512_chain_));
}

void Hashes::OneBlock(bool wide, const Adrs* adrs, const uint8_t* const* data, size_t data_len,
                      uint8_t* const* out, size_t count) const {
  const size_t n = static_cast<size_t>(p_.n);
  if (p_.shake) {
    // PK.seed || ADRS || data fits one SHAKE256 block (at most 32 + 32 + 64 = 128 bytes), and
    // every part is a whole number of 8-byte lanes: the lanes are written directly, PK.seed's
    // from the copy made once.
    const size_t kLanes = group_lanes_;
    alignas(64) uint64_t st[kKeccakLanes * kMaxLanes];
    const size_t seed_lanes = n / 8, data_lanes = data_len / 8;
    const size_t pad_lane = seed_lanes + 4 + data_lanes;
    for (size_t base = 0; base < count; base += kLanes) {
      const size_t lanes = std::min(kLanes, count - base);
      std::memset(st, 0, kKeccakLanes * kLanes * sizeof(uint64_t));
      for (size_t j = 0; j < lanes; ++j) {
        uint64_t* lane = st + j;
        for (size_t l = 0; l < seed_lanes; ++l) lane[l * kLanes] = pk_seed_lanes_[l];
        for (size_t l = 0; l < 4; ++l) {
          lane[(seed_lanes + l) * kLanes] = Load64Le(adrs[base + j].b + 8 * l);
        }
        const uint8_t* d = data[base + j];
        for (size_t l = 0; l < data_lanes; ++l) {
          lane[(seed_lanes + 4 + l) * kLanes] = Load64Le(d + 8 * l);
        }
        lane[pad_lane * kLanes] = 0x1f;
        lane[(kShake256Rate / 8 - 1) * kLanes] ^= uint64_t{0x80} << 56;
      }
      KeccakF1600xN(st, kLanes);
      for (size_t j = 0; j < lanes; ++j) {
        for (size_t l = 0; l < n / 8; ++l) Store64Le(out[base + j] + 8 * l, st[l * kLanes + j]);
      }
    }
    SecureZero(st, sizeof(st));
    return;
  }
  if (!wide) {
    // SHA-256 resumed after PK.seed || 0^(64-n): ADRSc || data || padding is one block (at most
    // 22 + 32 + 9 bytes).
    uint8_t blk[64];
    // A call or two alone (the path of a signature's XMSS node) would leave the lanes nearly idle:
    // one compression at a time is cheaper there.
    if (sha256_lanes_fn_ != nullptr && count >= kFewCalls) {
      CompressLanes<uint32_t, 64, 16>(sha256_lanes_fn_, sha256_lanes_, sha256_chain_, adrs, data,
                                      data_len, out, n, count);
      return;
    }
    for (size_t i = 0; i < count; ++i) {
      Compress(adrs[i], blk);
      std::memcpy(blk + kAdrscBytes, data[i], data_len);
      PadAfterChain(blk, 64, 64, kAdrscBytes + data_len);
      uint32_t h[8];
      std::memcpy(h, sha256_chain_, sizeof(h));
      compress256_(h, blk);
      uint8_t full[32];
      for (int w = 0; w < 8; ++w) StoreBe32(full + 4 * w, h[w]);
      std::memcpy(out[i], full, n);
      SecureZero(full, sizeof(full));  // PRF outputs are secret
      SecureZero(h, sizeof(h));
    }
    SecureZero(blk, sizeof(blk));
    return;
  }
  // SHA-512 resumed after PK.seed || 0^(128-n): at most 22 + 64 + 17 bytes.
  uint8_t blk[128];
  if (sha512_h_fn_ != nullptr && count >= kFewCalls && data_len == 2 * n) {
    // H on the backend's own kernel: no block laid out in memory.
    constexpr size_t kSlab = 64;
    uint8_t adrsc[kSlab * kAdrscBytes];
    Sha512HArgs args;
    args.chain = sha512_chain_;
    args.n = n;
    args.adrsc = adrsc;
    for (size_t base = 0; base < count; base += kSlab) {
      const size_t m = std::min(kSlab, count - base);
      for (size_t i = 0; i < m; ++i) Compress(adrs[base + i], adrsc + i * kAdrscBytes);
      args.count = m;
      args.in = data + base;
      args.out = out + base;
      sha512_h_fn_(args);
    }
    return;
  }
  if (sha512_lanes_fn_ != nullptr && count >= kFewCalls) {
    CompressLanes<uint64_t, 128, 8>(sha512_lanes_fn_, sha512_lanes_, sha512_chain_, adrs, data,
                                    data_len, out, n, count);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    Compress(adrs[i], blk);
    std::memcpy(blk + kAdrscBytes, data[i], data_len);
    PadAfterChain(blk, 128, 128, kAdrscBytes + data_len);
    uint64_t h[8];
    std::memcpy(h, sha512_chain_, sizeof(h));
    Sha512Compress(h, blk);
    uint8_t full[64];
    for (int w = 0; w < 8; ++w) StoreBe64(full + 8 * w, h[w]);
    std::memcpy(out[i], full, n);
    SecureZero(full, sizeof(full));
    SecureZero(h, sizeof(h));
  }
  SecureZero(blk, sizeof(blk));
}

void Hashes::F(const Adrs* adrs, const uint8_t* const* in, uint8_t* const* out,
               size_t count) const {
  OneBlock(false, adrs, in, static_cast<size_t>(p_.n), out, count);
}

void Hashes::H(const Adrs* adrs, const uint8_t* const* in, uint8_t* const* out,
               size_t count) const {
  OneBlock(Wide(p_), adrs, in, 2 * static_cast<size_t>(p_.n), out, count);
}

void Hashes::Prf(const Adrs* adrs, uint8_t* const* out, size_t count) const {
  // One SK.seed for every call: a pointer array of the same pointer.
  const uint8_t* seeds[64];
  for (size_t base = 0; base < count; base += 64) {
    const size_t m = std::min<size_t>(64, count - base);
    std::fill(seeds, seeds + m, sk_seed_);
    OneBlock(false, adrs + base, seeds, static_cast<size_t>(p_.n), out + base, m);
  }
}

void Hashes::Chains(const Adrs* adrs, const uint32_t* start, const uint32_t* steps, const Adrs* prf,
                    uint8_t* const* values, size_t count) const {
  if (sha256_chains_fn_ == nullptr) {
    ChainsByStep(adrs, start, steps, prf, values, count);
    return;
  }
  // Slabs of 80 chains: 67 (the WOTS+ chains of n = 32) fit one, and a multiple of 16 lanes.
  constexpr size_t kSlab = 80;
  uint8_t adrsc[kSlab * kAdrscBytes];
  uint8_t prf_adrsc[kSlab * kAdrscBytes];
  uint32_t slab_start[kSlab], slab_steps[kSlab];
  uint8_t* slab_values[kSlab];
  uint16_t order[kSlab];
  Sha256ChainsArgs args;
  args.chain = sha256_chain_;
  args.compress = compress256_;
  args.n = static_cast<size_t>(p_.n);
  args.adrsc = adrsc;
  args.start = slab_start;
  args.steps = slab_steps;
  args.prf_adrsc = prf != nullptr ? prf_adrsc : nullptr;
  args.sk_seed = sk_seed_;
  args.values = slab_values;
  for (size_t base = 0; base < count; base += kSlab) {
    const size_t m = std::min(kSlab, count - base);
    // Chains of about the same length share a group of lanes, whose steps are its longest
    // chain's: where the lanes are wider than one, the chains in order of their steps, most first.
    if (sha256_chain_lanes_ > 1) {
      OrderBySteps(steps + base, m, order);
    } else {
      for (size_t k = 0; k < m; ++k) order[k] = static_cast<uint16_t>(k);
    }
    for (size_t k = 0; k < m; ++k) {
      const size_t i = base + order[k];
      Compress(adrs[i], adrsc + k * kAdrscBytes);
      if (prf != nullptr) Compress(prf[i], prf_adrsc + k * kAdrscBytes);
      slab_start[k] = start[i];
      slab_steps[k] = steps[i];
      slab_values[k] = values[i];
    }
    args.count = m;
    sha256_chains_fn_(args);
  }
}

void Hashes::ChainsByStep(const Adrs* adrs, const uint32_t* start, const uint32_t* steps,
                          const Adrs* prf, uint8_t* const* values, size_t count) const {
  if (prf != nullptr) Prf(prf, values, count);
  // Batches of chains (a multiple of the 5, 8 or 16 calls per permutation or compression), longest
  // first: the chains still running at a step are a prefix of the batch, whose addresses are
  // copied once; each step changes their hash addresses only.
  constexpr size_t kBatch = 320;
  Adrs a[kBatch];
  uint32_t first[kBatch], left[kBatch];
  const uint8_t* in[kBatch];
  uint8_t* out[kBatch];
  uint16_t order[kBatch];
  for (size_t base = 0; base < count; base += kBatch) {
    const size_t m = std::min(kBatch, count - base);
    OrderBySteps(steps + base, m, order);
    for (size_t k = 0; k < m; ++k) {
      const size_t i = base + order[k];
      a[k] = adrs[i];
      first[k] = start[i];
      left[k] = steps[i];
      in[k] = out[k] = values[i];
    }
    size_t live = m;
    for (uint32_t t = 0;; ++t) {
      while (live > 0 && left[live - 1] <= t) --live;  // public
      if (live == 0) break;
      for (size_t k = 0; k < live; ++k) a[k].SetHash(first[k] + t);
      F(a, in, out, live);
    }
  }
}

void Hashes::T(const Adrs& adrs, const uint8_t* in, size_t in_len, uint8_t* out) const {
  const size_t n = static_cast<size_t>(p_.n);
  if (p_.shake) {
    Shake256 x;
    x.Absorb(Bytes(pk_seed_, n));
    x.Absorb(Bytes(adrs.b, 32));
    x.Absorb(Bytes(in, in_len));
    x.Finalize();
    x.Squeeze(MutBytes(out, n));
    return;
  }
  uint8_t c[kAdrscBytes];
  Compress(adrs, c);
  if (Wide(p_)) {
    Sha512 h(sha512_chain_, 1);
    h.Update(Bytes(c, kAdrscBytes));
    h.Update(Bytes(in, in_len));
    h.Final(out, n);
  } else {
    Sha256 h(sha256_chain_, 1);
    h.Update(Bytes(c, kAdrscBytes));
    h.Update(Bytes(in, in_len));
    h.Final(out, n);
  }
}

void Hashes::TMany(const Adrs* adrs, const uint8_t* const* in, size_t in_len, uint8_t* const* out,
                   size_t count) const {
  constexpr size_t kMaxLanes512 = 8;
  constexpr size_t kMaxBlocks = (kAdrscBytes + kMaxLen * kMaxN + 17 + 127) / 128;
  const size_t msg = kAdrscBytes + in_len;
  const size_t blocks = (msg + 17 + 127) / 128;  // 0x80 and the 16-byte length field
  if (p_.shake || !Wide(p_) || sha512_lanes_fn_ == nullptr || count < 2 || blocks > kMaxBlocks) {
    for (size_t i = 0; i < count; ++i) T(adrs[i], in[i], in_len, out[i]);
    return;
  }
  const size_t n = static_cast<size_t>(p_.n);
  const size_t lanes = sha512_lanes_;
  // Each lane's message laid out once, padded (after PK.seed's block), then compressed block by
  // block in all lanes together.
  alignas(64) uint8_t buf[kMaxLanes512][kMaxBlocks * 128];
  const uint8_t* ptrs[kMaxLanes512];
  uint64_t v[8 * kMaxLanes512];
  for (size_t base = 0; base < count; base += lanes) {
    const size_t live = std::min(lanes, count - base);
    for (size_t j = 0; j < lanes; ++j) {
      uint8_t* b = buf[j];
      if (j < live) {
        Compress(adrs[base + j], b);
        std::memcpy(b + kAdrscBytes, in[base + j], in_len);
      } else {
        std::memset(b, 0, msg);  // an idle lane: blocks of zeros
      }
      PadAfterChain(b, blocks * 128, 128, msg);
      for (int w = 0; w < 8; ++w) v[w * lanes + j] = sha512_chain_[w];
    }
    for (size_t k = 0; k < blocks; ++k) {
      for (size_t j = 0; j < lanes; ++j) ptrs[j] = buf[j] + 128 * k;
      sha512_lanes_fn_(v, ptrs);
    }
    for (size_t j = 0; j < live; ++j) {
      uint8_t full[64];
      for (int w = 0; w < 8; ++w) StoreBe64(full + 8 * w, v[w * lanes + j]);
      std::memcpy(out[base + j], full, n);
    }
  }
  SecureZero(buf, sizeof(buf));
  SecureZero(v, sizeof(v));
}

void HMsg(const SlhDsaParams& p, const uint8_t* r, const uint8_t* pk_seed, const uint8_t* pk_root,
          std::span<const Bytes> mprime, uint8_t* out) {
  const size_t n = static_cast<size_t>(p.n), m = static_cast<size_t>(p.m);
  if (p.shake) {
    Shake256 x;
    x.Absorb(Bytes(r, n));
    x.Absorb(Bytes(pk_seed, n));
    x.Absorb(Bytes(pk_root, n));
    for (Bytes part : mprime) x.Absorb(part);
    x.Finalize();
    x.Squeeze(MutBytes(out, m));
    return;
  }
  // MGF1-SHA-x(R || PK.seed || SHA-x(R || PK.seed || PK.root || M'), m).
  uint8_t seed[2 * kMaxN + 64];
  std::memcpy(seed, r, n);
  std::memcpy(seed + n, pk_seed, n);
  if (Wide(p)) {
    Sha512 h;
    h.Update(Bytes(r, n));
    h.Update(Bytes(pk_seed, n));
    h.Update(Bytes(pk_root, n));
    for (Bytes part : mprime) h.Update(part);
    h.Final(seed + 2 * n, 64);
    Mgf1<Sha512>(seed, 2 * n + 64, out, m, 64);
  } else {
    Sha256 h;
    h.Update(Bytes(r, n));
    h.Update(Bytes(pk_seed, n));
    h.Update(Bytes(pk_root, n));
    for (Bytes part : mprime) h.Update(part);
    h.Final(seed + 2 * n, 32);
    Mgf1<Sha256>(seed, 2 * n + 32, out, m, 32);
  }
}

void PrfMsg(const SlhDsaParams& p, const uint8_t* sk_prf, const uint8_t* opt_rand,
            std::span<const Bytes> mprime, uint8_t* out) {
  const size_t n = static_cast<size_t>(p.n);
  if (p.shake) {
    Shake256 x;
    x.Absorb(Bytes(sk_prf, n));
    x.Absorb(Bytes(opt_rand, n));
    for (Bytes part : mprime) x.Absorb(part);
    x.Finalize();
    x.Squeeze(MutBytes(out, n));
    return;
  }
  if (Wide(p)) {
    Hmac<Sha512>(sk_prf, n, 128, 64, Bytes(opt_rand, n), mprime, out, n);
  } else {
    Hmac<Sha256>(sk_prf, n, 64, 32, Bytes(opt_rand, n), mprime, out, n);
  }
}

}  // namespace pqcd::kernels::slhdsa
