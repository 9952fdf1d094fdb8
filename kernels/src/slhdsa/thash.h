// SLH-DSA's addresses (FIPS 205 §4.2) and hash functions (§11.1 SHAKE, §11.2 SHA2), each in a
// form that computes many independent calls at once: the WOTS+ chains of a key pair, the leaves
// of a FORS tree and the nodes of a tree level are independent, and run side by side on the
// multi-lane Keccak of the active backend (four or eight states per permutation).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "pqcd/kernels/common.h"
#include "pqcd/kernels/slhdsa.h"
#include "slhdsa/backend.h"

namespace pqcd::kernels::slhdsa {

inline constexpr int kMaxN = 32;
inline constexpr int kMaxLen = 2 * kMaxN + 3;

// FIPS 205 §4.2 address types.
enum AdrsType : uint32_t {
  kWotsHash = 0,
  kWotsPk = 1,
  kTree = 2,
  kForsTree = 3,
  kForsRoots = 4,
  kWotsPrf = 5,
  kForsPrf = 6,
};

// The 32-byte address: layer (4 bytes), tree (12), type (4), then three 4-byte words (key pair;
// chain or tree height; hash or tree index), all big-endian.
struct Adrs {
  uint8_t b[32] = {};

  void SetLayer(uint32_t v) { Put(0, v); }
  void SetTree(uint64_t v) {  // the tree address is below 2^64 in every parameter set
    Put(4, 0);
    Put(8, static_cast<uint32_t>(v >> 32));
    Put(12, static_cast<uint32_t>(v));
  }
  void SetTypeAndClear(uint32_t type) {
    Put(16, type);
    std::memset(b + 20, 0, 12);
  }
  void SetKeyPair(uint32_t v) { Put(20, v); }
  uint32_t KeyPair() const { return Get(20); }
  void SetChain(uint32_t v) { Put(24, v); }
  void SetTreeHeight(uint32_t v) { Put(24, v); }
  void SetHash(uint32_t v) { Put(28, v); }
  void SetTreeIndex(uint32_t v) { Put(28, v); }
  uint32_t TreeIndex() const { return Get(28); }

 private:
  void Put(int at, uint32_t v) {
    b[at] = static_cast<uint8_t>(v >> 24);
    b[at + 1] = static_cast<uint8_t>(v >> 16);
    b[at + 2] = static_cast<uint8_t>(v >> 8);
    b[at + 3] = static_cast<uint8_t>(v);
  }
  uint32_t Get(int at) const {
    return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
           b[at + 3];
  }
};

// The keyed context of one signing or verifying: PK.seed, and SK.seed when signing; for the SHA2
// sets the chaining values after the block PK.seed || 0 (FIPS 205 §11.2).
class Hashes {
 public:
  // sk_seed may be null (verification: no PRF calls). Chaining values: computed here unless
  // given (a prepared key).
  Hashes(const SlhDsaParams& p, const uint8_t* pk_seed, const uint8_t* sk_seed,
         const uint32_t* sha256_chain = nullptr, const uint64_t* sha512_chain = nullptr);
  ~Hashes();
  Hashes(const Hashes&) = delete;
  Hashes& operator=(const Hashes&) = delete;

  const SlhDsaParams& params() const { return p_; }
  const uint8_t* pk_seed() const { return pk_seed_; }

  // count independent calls; in[i] and out[i] may be the same buffer (inputs are read before
  // outputs are written within a call, and out[i] never overlaps another in[j] than in[i]).
  // F(PK.seed, ADRS, M1), M1 n bytes.
  void F(const Adrs* adrs, const uint8_t* const* in, uint8_t* const* out, size_t count) const;
  // H(PK.seed, ADRS, M2), M2 2n bytes.
  void H(const Adrs* adrs, const uint8_t* const* in, uint8_t* const* out, size_t count) const;
  // PRF(PK.seed, SK.seed, ADRS).
  void Prf(const Adrs* adrs, uint8_t* const* out, size_t count) const;
  // count chains of F (WOTS+ chains, Alg. 5; a FORS leaf is a chain of one step): chain i runs
  // steps[i] steps with the address adrs[i] whose hash address is start[i], start[i] + 1, ...,
  // on values[i] (n bytes, in place). With prf (not null), chain i first sets values[i] to
  // PRF(PK.seed, SK.seed, prf[i]). start and steps are public. On the SHA2 sets the chains run on
  // the backend's sha256_chains (slhdsa/backend.h) where it has lanes of its own or the path is
  // one block at a time, else step by step in batched F.
  void Chains(const Adrs* adrs, const uint32_t* start, const uint32_t* steps, const Adrs* prf,
              uint8_t* const* values, size_t count) const;
  // T_l(PK.seed, ADRS, M), M l*n bytes.
  void T(const Adrs& adrs, const uint8_t* in, size_t in_len, uint8_t* out) const;
  // count independent T_l calls of the same length: T(adrs[i], in[i], in_len, out[i]). On the
  // SHA2 sets of n = 24, 32 they run side by side on the backend's SHA-512 lanes where it has
  // them (every message the same number of blocks); else one after another.
  void TMany(const Adrs* adrs, const uint8_t* const* in, size_t in_len, uint8_t* const* out,
             size_t count) const;

  // The chaining values for a prepared key (SHA2 sets; zero for SHAKE).
  void ExportChains(uint32_t sha256_chain[8], uint64_t sha512_chain[8]) const;

 private:
  // One-block calls: prefix (SHAKE: PK.seed; SHA2: resumed from the chain) || ADRS || data.
  void OneBlock(bool wide, const Adrs* adrs, const uint8_t* const* data, size_t data_len,
                uint8_t* const* out, size_t count) const;

  // Chains one step at a time in batched Prf and F (SHAKE sets; SHA-256 lanes without chains).
  void ChainsByStep(const Adrs* adrs, const uint32_t* start, const uint32_t* steps, const Adrs* prf,
                    uint8_t* const* values, size_t count) const;

  const SlhDsaParams& p_;
  const uint8_t* pk_seed_;
  const uint8_t* sk_seed_;
  void (*compress256_)(uint32_t[8], const uint8_t[64]);
  // The SHA-256 lanes of the backend when the chosen path is kLanes (slhdsa/sha2.h), else null.
  void (*sha256_lanes_fn_)(uint32_t*, const uint8_t* const*) = nullptr;
  size_t sha256_lanes_ = 1;
  // The backend's SHA-512 lanes where it has more than one (and the path is not portable).
  void (*sha512_lanes_fn_)(uint64_t*, const uint8_t* const*) = nullptr;
  size_t sha512_lanes_ = 1;
  // The backend's H of the n = 24, 32 sets where it has its own (with its SHA-512 lanes).
  void (*sha512_h_fn_)(const Sha512HArgs&) = nullptr;
  // The chains hook (SHA2 sets), with its lanes; null where chains run step by step.
  void (*sha256_chains_fn_)(const Sha256ChainsArgs&) = nullptr;
  size_t sha256_chain_lanes_ = 1;
  size_t group_lanes_;
  uint64_t pk_seed_lanes_[kMaxN / 8] = {};  // SHAKE: PK.seed as Keccak lanes
  uint32_t sha256_chain_[8] = {};
  uint64_t sha512_chain_[8] = {};
};

// H_msg(R, PK.seed, PK.root, M') into out (m bytes); M' is given as its parts.
void HMsg(const SlhDsaParams& p, const uint8_t* r, const uint8_t* pk_seed, const uint8_t* pk_root,
          std::span<const Bytes> mprime, uint8_t* out);
// PRF_msg(SK.prf, opt_rand, M') into out (n bytes).
void PrfMsg(const SlhDsaParams& p, const uint8_t* sk_prf, const uint8_t* opt_rand,
            std::span<const Bytes> mprime, uint8_t* out);

}  // namespace pqcd::kernels::slhdsa
