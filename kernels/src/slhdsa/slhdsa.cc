// SLH-DSA (FIPS 205). The algorithm numbers are the standard's: WOTS+ (Alg. 5-8), XMSS
// (Alg. 9-11), the hypertree (Alg. 12-13), FORS (Alg. 14-17), the internal functions (Alg. 18-20)
// and the external ones (Alg. 21-25).
//
// Trees are computed whole, never node by node as Alg. 9 and 15 recurse: the leaves of a tree
// in chunks of up to 64, each chunk reduced to its root level by level, every level one batched
// call of H. The 2n+3 chains of a WOTS+ key pair, the leaves of a FORS tree and the nodes of a
// level are independent calls, which thash.cc runs side by side on multi-lane Keccak or SHA-2 lanes
// (a chain's steps one after another in the same lane: Hashes::Chains).
#include "pqcd/kernels/slhdsa.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "prehash.h"
#include "slhdsa/thash.h"

namespace pqcd::kernels {
namespace slhdsa {
namespace {

constexpr int kW = 16;  // lg_w = 4 in every parameter set
constexpr int kLen2 = 3;
constexpr int kChunkHeight = 6;  // leaves computed and reduced 64 at a time

// Alg. 4 base_2b(X, b, out_len).
void Base2b(const uint8_t* x, int b, int out_len, uint32_t* out) {
  size_t in = 0;
  int bits = 0;
  uint64_t total = 0;
  for (int i = 0; i < out_len; ++i) {
    while (bits < b) {
      total = (total << 8) | x[in++];
      bits += 8;
    }
    bits -= b;
    out[i] = static_cast<uint32_t>((total >> bits) & ((uint64_t{1} << b) - 1));
  }
}

// The chain lengths of a WOTS+ message (Alg. 7 / 8): base-16 digits of M, then the checksum's.
void WotsDigits(const SlhDsaParams& p, const uint8_t* m, uint32_t* msg) {
  const int len1 = p.len1();
  Base2b(m, 4, len1, msg);
  uint32_t csum = 0;
  for (int i = 0; i < len1; ++i) csum += kW - 1 - msg[i];
  csum <<= 4;  // (8 - ((len2 * lg_w) mod 8)) mod 8 = 4
  const uint8_t c[2] = {static_cast<uint8_t>(csum >> 8), static_cast<uint8_t>(csum)};
  Base2b(c, 4, kLen2, msg + len1);
}

// The chains of one key pair (Alg. 5): chain i from start[i] for steps[i] steps, all side by
// side; values holds the len chain values, n bytes each, updated in place, or made by PRF first
// (Alg. 6/7: a WOTS_PRF address) when with_prf. adrs has the key pair's layer, tree, type
// WOTS_HASH and key pair address.
void Chains(const Hashes& hs, const Adrs& adrs, uint8_t* values, const uint32_t* start,
            const uint32_t* steps, bool with_prf) {
  const SlhDsaParams& p = hs.params();
  const size_t n = static_cast<size_t>(p.n);
  Adrs a[kMaxLen], prf[kMaxLen];
  uint8_t* io[kMaxLen];
  for (int i = 0; i < p.len(); ++i) {
    a[i] = adrs;
    a[i].SetChain(static_cast<uint32_t>(i));
    prf[i] = adrs;
    prf[i].SetTypeAndClear(kWotsPrf);
    prf[i].SetKeyPair(adrs.KeyPair());
    prf[i].SetChain(static_cast<uint32_t>(i));
    io[i] = values + static_cast<size_t>(i) * n;
  }
  hs.Chains(a, start, steps, with_prf ? prf : nullptr, io, static_cast<size_t>(p.len()));
}

// Compresses the chain ends into the WOTS+ public key (T_len with a WOTS_PK address).
void WotsCompress(const Hashes& hs, const Adrs& adrs, const uint8_t* ends, uint8_t* pk) {
  const SlhDsaParams& p = hs.params();
  Adrs a = adrs;
  a.SetTypeAndClear(kWotsPk);
  a.SetKeyPair(adrs.KeyPair());
  hs.T(a, ends, static_cast<size_t>(p.len()) * static_cast<size_t>(p.n), pk);
}

// Alg. 6 for the key pairs first..first+count-1 of one XMSS tree (base: its layer and tree,
// type WOTS_HASH), their public keys to out (n bytes each). The chains of kGroup key pairs run
// side by side, so the hash lanes are filled (35 chains of one key pair would leave a third of
// sixteen SHA-256 lanes idle in their last group).
void WotsPkGenMany(const Hashes& hs, const Adrs& base, uint32_t first, uint32_t count,
                   uint8_t* out) {
  const SlhDsaParams& p = hs.params();
  const size_t n = static_cast<size_t>(p.n);
  const size_t len = static_cast<size_t>(p.len());
  constexpr uint32_t kGroup = 8;
  constexpr size_t kItems = kGroup * kMaxLen;
  uint8_t values[kItems * kMaxN];
  Adrs a[kItems], prf[kItems];
  uint8_t* io[kItems];
  uint32_t start[kItems] = {}, steps[kItems];
  std::fill(steps, steps + kItems, uint32_t{kW - 1});
  for (uint32_t g = 0; g < count; g += kGroup) {
    const uint32_t pairs = std::min(kGroup, count - g);
    const size_t items = pairs * len;
    for (uint32_t j = 0; j < pairs; ++j) {
      for (size_t i = 0; i < len; ++i) {
        const size_t k = j * len + i;
        prf[k] = base;
        prf[k].SetTypeAndClear(kWotsPrf);
        prf[k].SetKeyPair(first + g + j);
        prf[k].SetChain(static_cast<uint32_t>(i));
        a[k] = base;
        a[k].SetKeyPair(first + g + j);
        a[k].SetChain(static_cast<uint32_t>(i));
        io[k] = values + k * n;
      }
    }
    // Each chain from its PRF value through all w - 1 steps.
    hs.Chains(a, start, steps, prf, io, items);
    // The public keys: T_len of each pair's chain ends (WOTS_PK addresses), side by side.
    Adrs pk[kGroup];
    const uint8_t* ends[kGroup];
    uint8_t* pks[kGroup];
    for (uint32_t j = 0; j < pairs; ++j) {
      pk[j] = base;
      pk[j].SetTypeAndClear(kWotsPk);
      pk[j].SetKeyPair(first + g + j);
      ends[j] = values + j * len * n;
      pks[j] = out + static_cast<size_t>(g + j) * n;
    }
    hs.TMany(pk, ends, len * n, pks, pairs);
  }
  SecureZero(values, sizeof(values));
}

// Alg. 7 wots_sign.
void WotsSign(const Hashes& hs, const Adrs& adrs, const uint8_t* m, uint8_t* sig) {
  uint32_t msg[kMaxLen], start[kMaxLen] = {};
  WotsDigits(hs.params(), m, msg);
  Chains(hs, adrs, sig, start, msg, /*with_prf=*/true);
}

// Alg. 8 wots_pkFromSig.
void WotsPkFromSig(const Hashes& hs, const Adrs& adrs, const uint8_t* sig, const uint8_t* m,
                   uint8_t* pk) {
  const SlhDsaParams& p = hs.params();
  uint32_t msg[kMaxLen], steps[kMaxLen];
  WotsDigits(p, m, msg);
  for (int i = 0; i < p.len(); ++i) steps[i] = kW - 1 - msg[i];
  uint8_t values[kMaxLen * kMaxN];
  std::memcpy(values, sig, static_cast<size_t>(p.len()) * static_cast<size_t>(p.n));
  Chains(hs, adrs, values, msg, steps, /*with_prf=*/false);
  WotsCompress(hs, adrs, values, pk);
}

// A Merkle tree of the given height, computed whole: its root, and the authentication path of
// leaf `target` (height nodes, leaf level first) when auth is not null. leaves(first, count, out)
// writes leaves first..first+count-1; nodes(z, first, count, children, out) the nodes first..
// of level z from their 2*count children (in place allowed).
template <class Leaves, class Nodes>
void MerkleTree(size_t n, int height, uint32_t target, Leaves&& leaves, Nodes&& nodes,
                uint8_t* auth, uint8_t* root) {
  const int c = std::min(height, kChunkHeight);
  const uint32_t chunk = uint32_t{1} << c;
  const uint32_t chunks = uint32_t{1} << (height - c);
  std::vector<uint8_t> top(static_cast<size_t>(chunks) * n);
  uint8_t buf[(size_t{1} << kChunkHeight) * kMaxN];
  for (uint32_t q = 0; q < chunks; ++q) {
    leaves(q * chunk, chunk, buf);
    for (int z = 1; z <= c; ++z) {
      // The sibling on level z - 1 of the target's path, if it is in this chunk.
      const uint32_t sib = (target >> (z - 1)) ^ 1;
      const uint32_t first = q << (c - z + 1);
      if (auth != nullptr && sib >= first && sib < first + (uint32_t{1} << (c - z + 1))) {
        std::memcpy(auth + static_cast<size_t>(z - 1) * n, buf + (sib - first) * n, n);
      }
      nodes(z, q << (c - z), uint32_t{1} << (c - z), buf, buf);
    }
    std::memcpy(top.data() + static_cast<size_t>(q) * n, buf, n);
  }
  for (int z = c + 1; z <= height; ++z) {
    const uint32_t sib = (target >> (z - 1)) ^ 1;
    if (auth != nullptr)
      std::memcpy(auth + static_cast<size_t>(z - 1) * n, top.data() + sib * n, n);
    nodes(z, 0, uint32_t{1} << (height - z), top.data(), top.data());
  }
  std::memcpy(root, top.data(), n);
  SecureZero(buf, sizeof(buf));
}

// The nodes of a tree level in one batched H: parent first+i from children 2i, 2i+1 of `in`.
// base: the tree's address with its type (TREE or FORS_TREE); index_offset: added to the index
// (FORS trees share one index space).
void Level(const Hashes& hs, const Adrs& base, int z, uint32_t first, uint32_t count,
           uint32_t index_offset, const uint8_t* in, uint8_t* out) {
  const size_t n = static_cast<size_t>(hs.params().n);
  constexpr uint32_t kBatch = 40;  // a multiple of the 5 or 8 Keccak states per call
  Adrs a[kBatch];
  const uint8_t* ins[kBatch];
  uint8_t* outs[kBatch];
  for (uint32_t b = 0; b < count; b += kBatch) {
    const uint32_t m = std::min(kBatch, count - b);
    for (uint32_t i = 0; i < m; ++i) {
      a[i] = base;
      a[i].SetTreeHeight(static_cast<uint32_t>(z));
      a[i].SetTreeIndex(index_offset + first + b + i);
      ins[i] = in + static_cast<size_t>(b + i) * 2 * n;
      outs[i] = out + static_cast<size_t>(b + i) * n;
    }
    hs.H(a, ins, outs, m);
  }
}

// The XMSS tree at (layer, tree): root, and the auth path of leaf idx if auth is not null
// (Alg. 9 for every node, Alg. 10's AUTH).
void XmssTree(const Hashes& hs, uint32_t layer, uint64_t tree, uint32_t idx, uint8_t* auth,
              uint8_t* root) {
  const SlhDsaParams& p = hs.params();
  const size_t n = static_cast<size_t>(p.n);
  Adrs base;
  base.SetLayer(layer);
  base.SetTree(tree);
  Adrs node_base = base;
  node_base.SetTypeAndClear(kTree);
  MerkleTree(
      n, p.hp, idx,
      [&](uint32_t first, uint32_t count, uint8_t* out) {
        Adrs a = base;
        a.SetTypeAndClear(kWotsHash);
        WotsPkGenMany(hs, a, first, count, out);
      },
      [&](int z, uint32_t first, uint32_t count, const uint8_t* in, uint8_t* out) {
        Level(hs, node_base, z, first, count, 0, in, out);
      },
      auth, root);
}

// Alg. 11 xmss_pkFromSig.
void XmssPkFromSig(const Hashes& hs, uint32_t layer, uint64_t tree, uint32_t idx,
                   const uint8_t* sig, const uint8_t* m, uint8_t* root) {
  const SlhDsaParams& p = hs.params();
  const size_t n = static_cast<size_t>(p.n);
  Adrs a;
  a.SetLayer(layer);
  a.SetTree(tree);
  a.SetTypeAndClear(kWotsHash);
  a.SetKeyPair(idx);
  uint8_t node[2 * kMaxN];
  WotsPkFromSig(hs, a, sig, m, node);
  const uint8_t* auth = sig + static_cast<size_t>(p.len()) * n;
  a.SetTypeAndClear(kTree);
  uint32_t index = idx;
  for (int k = 0; k < p.hp; ++k) {
    a.SetTreeHeight(static_cast<uint32_t>(k + 1));
    uint8_t pair[2 * kMaxN];
    if ((index & 1) == 0) {
      std::memcpy(pair, node, n);
      std::memcpy(pair + n, auth + static_cast<size_t>(k) * n, n);
    } else {
      std::memcpy(pair, auth + static_cast<size_t>(k) * n, n);
      std::memcpy(pair + n, node, n);
    }
    index >>= 1;
    a.SetTreeIndex(index);
    const uint8_t* in = pair;
    uint8_t* out = node;
    hs.H(&a, &in, &out, 1);
  }
  std::memcpy(root, node, n);
}

uint64_t TreeMask(int bits) {
  return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// Alg. 12 ht_sign: d XMSS signatures, each layer's tree root signed by the layer above.
void HtSign(const Hashes& hs, const uint8_t* m, uint64_t idx_tree, uint32_t idx_leaf,
            uint8_t* sig) {
  const SlhDsaParams& p = hs.params();
  const size_t n = static_cast<size_t>(p.n);
  const size_t xmss_bytes = static_cast<size_t>(p.len() + p.hp) * n;
  uint8_t root[kMaxN];
  std::memcpy(root, m, n);
  for (int j = 0; j < p.d; ++j) {
    uint8_t* s = sig + static_cast<size_t>(j) * xmss_bytes;
    Adrs a;
    a.SetLayer(static_cast<uint32_t>(j));
    a.SetTree(idx_tree);
    a.SetTypeAndClear(kWotsHash);
    a.SetKeyPair(idx_leaf);
    // The message signed on each layer (PK_FORS, then the root of the tree below) is public: a
    // verifier recomputes it from the signature. The chain lengths depend on it.
    CtPublic(root, n);
    WotsSign(hs, a, root, s);
    // Alg. 10's AUTH, and the tree's root: what xmss_pkFromSig would return.
    XmssTree(hs, static_cast<uint32_t>(j), idx_tree, idx_leaf, s + static_cast<size_t>(p.len()) * n,
             root);
    idx_leaf = static_cast<uint32_t>(idx_tree & TreeMask(p.hp));
    idx_tree = p.hp >= 64 ? 0 : idx_tree >> p.hp;
  }
}

// Alg. 13 ht_verify.
bool HtVerify(const Hashes& hs, const uint8_t* m, const uint8_t* sig, uint64_t idx_tree,
              uint32_t idx_leaf, const uint8_t* pk_root) {
  const SlhDsaParams& p = hs.params();
  const size_t n = static_cast<size_t>(p.n);
  const size_t xmss_bytes = static_cast<size_t>(p.len() + p.hp) * n;
  uint8_t node[kMaxN];
  std::memcpy(node, m, n);
  for (int j = 0; j < p.d; ++j) {
    XmssPkFromSig(hs, static_cast<uint32_t>(j), idx_tree, idx_leaf,
                  sig + static_cast<size_t>(j) * xmss_bytes, node, node);
    idx_leaf = static_cast<uint32_t>(idx_tree & TreeMask(p.hp));
    idx_tree = idx_tree >> p.hp;
  }
  return std::memcmp(node, pk_root, n) == 0;  // public values: no need for constant time
}

// FORS leaves first..first+count-1 of tree t (Alg. 14 fors_skGen, then F: Alg. 15 at z = 0).
// adrs: type FORS_TREE with the key pair address. sk_out (optional) receives the secret values.
void ForsLeaves(const Hashes& hs, const Adrs& adrs, uint32_t global_first, uint32_t count,
                uint8_t* out) {
  const size_t n = static_cast<size_t>(hs.params().n);
  constexpr uint32_t kBatch = 80;  // a multiple of the 5 or 8 Keccak states, 16 SHA-256 lanes
  Adrs a[kBatch], prf[kBatch];
  uint8_t* outs[kBatch];
  uint32_t index[kBatch], steps[kBatch];
  std::fill(steps, steps + kBatch, uint32_t{1});
  for (uint32_t b = 0; b < count; b += kBatch) {
    const uint32_t m = std::min(kBatch, count - b);
    for (uint32_t i = 0; i < m; ++i) {
      index[i] = global_first + b + i;
      prf[i] = adrs;
      prf[i].SetTypeAndClear(kForsPrf);
      prf[i].SetKeyPair(adrs.KeyPair());
      prf[i].SetTreeIndex(index[i]);
      a[i] = adrs;
      a[i].SetTreeHeight(0);
      outs[i] = out + static_cast<size_t>(b + i) * n;
    }
    // A leaf is a chain of one step from its secret value: F with the leaf's tree index.
    hs.Chains(a, index, steps, prf, outs, m);
  }
}

// Alg. 16 fors_sign, with the FORS public key (Alg. 17's result) computed on the way: the roots
// of the k trees compressed by T_k.
void ForsSign(const Hashes& hs, const uint8_t* md, const Adrs& adrs, uint8_t* sig,
              uint8_t* pk_fors) {
  const SlhDsaParams& p = hs.params();
  const size_t n = static_cast<size_t>(p.n);
  uint32_t indices[64];
  Base2b(md, p.a, p.k, indices);
  std::vector<uint8_t> roots(static_cast<size_t>(p.k) * n);
  for (int i = 0; i < p.k; ++i) {
    const uint32_t offset = static_cast<uint32_t>(i) << p.a;
    uint8_t* s = sig + static_cast<size_t>(i) * static_cast<size_t>(p.a + 1) * n;
    // The secret value of the chosen leaf.
    Adrs prf = adrs;
    prf.SetTypeAndClear(kForsPrf);
    prf.SetKeyPair(adrs.KeyPair());
    prf.SetTreeIndex(offset + indices[i]);
    hs.Prf(&prf, &s, 1);
    MerkleTree(
        n, p.a, indices[i],
        [&](uint32_t first, uint32_t count, uint8_t* out) {
          ForsLeaves(hs, adrs, offset + first, count, out);
        },
        [&](int z, uint32_t first, uint32_t count, const uint8_t* in, uint8_t* out) {
          Level(hs, adrs, z, first, count, static_cast<uint32_t>(i) << (p.a - z), in, out);
        },
        s + n, roots.data() + static_cast<size_t>(i) * n);
  }
  Adrs pk = adrs;
  pk.SetTypeAndClear(kForsRoots);
  pk.SetKeyPair(adrs.KeyPair());
  hs.T(pk, roots.data(), roots.size(), pk_fors);
}

// Alg. 17 fors_pkFromSig.
void ForsPkFromSig(const Hashes& hs, const uint8_t* sig, const uint8_t* md, const Adrs& adrs,
                   uint8_t* pk_fors) {
  const SlhDsaParams& p = hs.params();
  const size_t n = static_cast<size_t>(p.n);
  uint32_t indices[64];
  Base2b(md, p.a, p.k, indices);
  std::vector<uint8_t> roots(static_cast<size_t>(p.k) * n);
  // The k leaves in one batched F, then the k paths level by level in batched H.
  Adrs a[64];
  const uint8_t* ins[64];
  uint8_t* outs[64];
  std::vector<uint8_t> pairs(static_cast<size_t>(p.k) * 2 * n);
  uint32_t index[64];
  for (int i = 0; i < p.k; ++i) {
    const uint8_t* s = sig + static_cast<size_t>(i) * static_cast<size_t>(p.a + 1) * n;
    index[i] = (static_cast<uint32_t>(i) << p.a) + indices[i];
    a[i] = adrs;
    a[i].SetTreeHeight(0);
    a[i].SetTreeIndex(index[i]);
    ins[i] = s;
    outs[i] = roots.data() + static_cast<size_t>(i) * n;
  }
  hs.F(a, ins, outs, static_cast<size_t>(p.k));
  for (int j = 0; j < p.a; ++j) {
    for (int i = 0; i < p.k; ++i) {
      const uint8_t* auth =
          sig + (static_cast<size_t>(i) * static_cast<size_t>(p.a + 1) + 1 + j) * n;
      uint8_t* pair = pairs.data() + static_cast<size_t>(i) * 2 * n;
      uint8_t* node = roots.data() + static_cast<size_t>(i) * n;
      if (((indices[i] >> j) & 1) == 0) {
        std::memcpy(pair, node, n);
        std::memcpy(pair + n, auth, n);
      } else {
        std::memcpy(pair, auth, n);
        std::memcpy(pair + n, node, n);
      }
      index[i] >>= 1;
      a[i].SetTreeHeight(static_cast<uint32_t>(j + 1));
      a[i].SetTreeIndex(index[i]);
      ins[i] = pair;
    }
    hs.H(a, ins, outs, static_cast<size_t>(p.k));
  }
  Adrs pk = adrs;
  pk.SetTypeAndClear(kForsRoots);
  pk.SetKeyPair(adrs.KeyPair());
  hs.T(pk, roots.data(), roots.size(), pk_fors);
}

// The message digest split of Alg. 19 / 20: md, idx_tree, idx_leaf.
struct DigestParts {
  const uint8_t* md;
  uint64_t idx_tree;
  uint32_t idx_leaf;
};
DigestParts SplitDigest(const SlhDsaParams& p, const uint8_t* digest) {
  const size_t md_bytes = static_cast<size_t>((p.k * p.a + 7) / 8);
  const int tree_bits = p.h - p.hp;
  const size_t tree_bytes = static_cast<size_t>((tree_bits + 7) / 8);
  const size_t leaf_bytes = static_cast<size_t>((p.hp + 7) / 8);
  uint64_t tree = 0;
  for (size_t i = 0; i < tree_bytes; ++i) tree = (tree << 8) | digest[md_bytes + i];
  uint64_t leaf = 0;
  for (size_t i = 0; i < leaf_bytes; ++i) leaf = (leaf << 8) | digest[md_bytes + tree_bytes + i];
  return {digest, tree & TreeMask(tree_bits), static_cast<uint32_t>(leaf & TreeMask(p.hp))};
}

// Alg. 18 slh_keygen_internal: PK.root, the root of the top layer's tree.
void KeyGenInternal(const SlhDsaParams& p, const uint8_t* sk_seed, const uint8_t* sk_prf,
                    const uint8_t* pk_seed, uint8_t* pk, uint8_t* sk) {
  const size_t n = static_cast<size_t>(p.n);
  Hashes hs(p, pk_seed, sk_seed);
  uint8_t root[kMaxN];
  XmssTree(hs, static_cast<uint32_t>(p.d - 1), 0, 0, nullptr, root);
  CtPublic(root, n);  // PK.root is the public key
  std::memmove(sk, sk_seed, n);
  std::memmove(sk + n, sk_prf, n);
  std::memmove(sk + 2 * n, pk_seed, n);
  std::memcpy(sk + 3 * n, root, n);
  if (pk != nullptr) {
    std::memcpy(pk, pk_seed, n);
    std::memcpy(pk + n, root, n);
  }
  SecureZero(root, sizeof(root));
}

// Alg. 19 slh_sign_internal; sk is the 4n-byte key; chains: the prepared key's SHA-2 chaining
// values or null.
void SignInternal(const SlhDsaParams& p, const uint8_t* sk, const uint32_t* sha256_chain,
                  const uint64_t* sha512_chain, std::span<const Bytes> mprime,
                  const uint8_t* addrnd, uint8_t* sig) {
  const size_t n = static_cast<size_t>(p.n);
  const uint8_t* sk_seed = sk;
  const uint8_t* sk_prf = sk + n;
  const uint8_t* pk_seed = sk + 2 * n;
  const uint8_t* pk_root = sk + 3 * n;
  Hashes hs(p, pk_seed, sk_seed, sha256_chain, sha512_chain);
  // R = PRF_msg(SK.prf, addrnd, M'): public (the first n bytes of the signature).
  PrfMsg(p, sk_prf, addrnd, mprime, sig);
  CtPublic(sig, n);
  uint8_t digest[64];
  HMsg(p, sig, pk_seed, pk_root, mprime, digest);
  const DigestParts parts = SplitDigest(p, digest);
  Adrs adrs;
  adrs.SetTree(parts.idx_tree);
  adrs.SetTypeAndClear(kForsTree);
  adrs.SetKeyPair(parts.idx_leaf);
  uint8_t pk_fors[kMaxN];
  uint8_t* sig_fors = sig + n;
  ForsSign(hs, parts.md, adrs, sig_fors, pk_fors);
  uint8_t* sig_ht = sig_fors + static_cast<size_t>(p.k) * static_cast<size_t>(p.a + 1) * n;
  HtSign(hs, pk_fors, parts.idx_tree, parts.idx_leaf, sig_ht);
}

// Alg. 20 slh_verify_internal.
bool VerifyInternal(const SlhDsaParams& p, const uint8_t* pk, std::span<const Bytes> mprime,
                    Bytes sig) {
  const size_t n = static_cast<size_t>(p.n);
  if (sig.size() != p.sig) return false;
  const uint8_t* pk_seed = pk;
  const uint8_t* pk_root = pk + n;
  Hashes hs(p, pk_seed, nullptr);
  uint8_t digest[64];
  HMsg(p, sig.data(), pk_seed, pk_root, mprime, digest);
  const DigestParts parts = SplitDigest(p, digest);
  Adrs adrs;
  adrs.SetTree(parts.idx_tree);
  adrs.SetTypeAndClear(kForsTree);
  adrs.SetKeyPair(parts.idx_leaf);
  const uint8_t* sig_fors = sig.data() + n;
  uint8_t pk_fors[kMaxN];
  ForsPkFromSig(hs, sig_fors, parts.md, adrs, pk_fors);
  const uint8_t* sig_ht = sig_fors + static_cast<size_t>(p.k) * static_cast<size_t>(p.a + 1) * n;
  return HtVerify(hs, pk_fors, sig_ht, parts.idx_tree, parts.idx_leaf, pk_root);
}

// M' of Alg. 22 / 23 as parts: the two-byte header, the context, then M or OID || PH(M).
struct FormattedMessage {
  uint8_t header[2];
  uint8_t tail[prehash::kPreHashTailMaxBytes];
  std::array<Bytes, 3> parts;
};
absl::Status FormatMessage(const SlhDsaParams& p, Bytes message, const DsaMessageOptions& o,
                           FormattedMessage& f) {
  if (o.external_mu) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(p.name), " has no external-mu interface (FIPS 205)"));
  }
  if (o.context.size() > kSlhDsaMaxContextBytes) {
    return absl::InvalidArgumentError(absl::StrCat("context: at most ", kSlhDsaMaxContextBytes,
                                                   " bytes, got ", o.context.size()));
  }
  f.header[0] = o.prehash == PreHash::kNone ? 0 : 1;
  f.header[1] = static_cast<uint8_t>(o.context.size());
  f.parts[0] = Bytes(f.header, 2);
  f.parts[1] = o.context;
  if (o.prehash == PreHash::kNone) {
    f.parts[2] = message;
    return absl::OkStatus();
  }
  absl::StatusOr<size_t> len = prehash::PreHashTail(o.prehash, message, f.tail);
  if (!len.ok()) return len.status();
  f.parts[2] = Bytes(f.tail, *len);
  return absl::OkStatus();
}

absl::Status SizeError(std::string_view field, const SlhDsaParams& p, std::string_view what,
                       size_t got) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": expected ",
                                                 std::string(what), " for ", std::string(p.name),
                                                 ", got ", got));
}

}  // namespace
}  // namespace slhdsa

// ---- The class interface --------------------------------------------------------------------

namespace {
constexpr size_t kChainOffset(size_t n) {
  return 4 * n + 8;  // after the key, 8 bytes of room (the prepared layout in slhdsa.h)
}
}  // namespace

template <const SlhDsaParams& P>
absl::Status SlhDsa<P>::KeyGenFromSeed(Bytes seed, MutBytes pk, MutBytes sk) {
  if (seed.size() != kSeedBytes) {
    return slhdsa::SizeError("seed", P, absl::StrCat(kSeedBytes, " bytes"), seed.size());
  }
  if (pk.size() != kPublicKeyBytes) {
    return slhdsa::SizeError("public key buffer", P, absl::StrCat(kPublicKeyBytes, " bytes"),
                             pk.size());
  }
  if (sk.size() != kPrivateKeyBytes) {
    return slhdsa::SizeError("private key buffer", P, absl::StrCat(kPrivateKeyBytes, " bytes"),
                             sk.size());
  }
  uint8_t s[3 * slhdsa::kMaxN];
  std::memcpy(s, seed.data(), kSeedBytes);
  slhdsa::KeyGenInternal(P, s, s + kN, s + 2 * kN, pk.data(), sk.data());
  SecureZero(s, sizeof(s));
  CtPublic(pk.data(), pk.size());
  return absl::OkStatus();
}

template <const SlhDsaParams& P>
absl::Status SlhDsa<P>::KeyGen(MutBytes pk, MutBytes sk, RandomSource& rng, MutBytes seed_out) {
  if (!seed_out.empty() && seed_out.size() != kSeedBytes) {
    return slhdsa::SizeError("seed buffer", P, absl::StrCat(kSeedBytes, " bytes"), seed_out.size());
  }
  uint8_t seed[3 * slhdsa::kMaxN];
  if (absl::Status s = rng.Generate(MutBytes(seed, kSeedBytes)); !s.ok()) return s;
  absl::Status s = KeyGenFromSeed(Bytes(seed, kSeedBytes), pk, sk);
  if (s.ok() && !seed_out.empty()) std::memcpy(seed_out.data(), seed, kSeedBytes);
  SecureZero(seed, sizeof(seed));
  return s;
}

template <const SlhDsaParams& P>
absl::Status SlhDsa<P>::Sign(Bytes sk, Bytes message, const DsaSignOptions& options, MutBytes sig,
                             RandomSource& rng, bool prepared) {
  if (sig.size() != kSignatureBytes) {
    return slhdsa::SizeError("signature buffer", P, absl::StrCat(kSignatureBytes, " bytes"),
                             sig.size());
  }
  slhdsa::FormattedMessage f;
  if (absl::Status s = slhdsa::FormatMessage(P, message, options, f); !s.ok()) return s;
  // The 4n-byte key: given, in the prepared form, or made from the seed.
  uint8_t expanded[4 * slhdsa::kMaxN];
  const uint8_t* key = nullptr;
  const uint32_t* c256 = nullptr;
  const uint64_t* c512 = nullptr;
  alignas(8) uint32_t chain256[8];
  alignas(8) uint64_t chain512[8];
  if (prepared) {
    if (sk.size() != kPreparedBytes) {
      return slhdsa::SizeError("prepared private key", P, absl::StrCat(kPreparedBytes, " bytes"),
                               sk.size());
    }
    key = sk.data();
    std::memcpy(chain256, sk.data() + kChainOffset(kN), 32);
    std::memcpy(chain512, sk.data() + kChainOffset(kN) + 32, 64);
    c256 = chain256;
    c512 = chain512;
  } else if (sk.size() == kPrivateKeyBytes) {
    key = sk.data();
  } else if (sk.size() == kSeedBytes) {
    slhdsa::KeyGenInternal(P, sk.data(), sk.data() + kN, sk.data() + 2 * kN, nullptr, expanded);
    key = expanded;
  } else {
    return slhdsa::SizeError(
        "private key", P,
        absl::StrCat(kPrivateKeyBytes, " bytes (or a ", kSeedBytes, "-byte seed)"), sk.size());
  }
  uint8_t addrnd[slhdsa::kMaxN];
  if (!options.rnd.empty()) {
    if (options.rnd.size() != kRndBytes) {
      return slhdsa::SizeError("rnd", P, absl::StrCat(kRndBytes, " bytes"), options.rnd.size());
    }
    std::memcpy(addrnd, options.rnd.data(), kN);
  } else if (options.deterministic) {
    std::memcpy(addrnd, key + 2 * kN, kN);  // opt_rand = PK.seed (§10.2.1)
  } else if (absl::Status s = rng.Generate(MutBytes(addrnd, kN)); !s.ok()) {
    SecureZero(expanded, sizeof(expanded));
    return s;
  }
  slhdsa::SignInternal(P, key, c256, c512, f.parts, addrnd, sig.data());
  CtPublic(sig.data(), sig.size());
  SecureZero(expanded, sizeof(expanded));
  SecureZero(addrnd, sizeof(addrnd));
  SecureZero(chain256, sizeof(chain256));
  SecureZero(chain512, sizeof(chain512));
  return absl::OkStatus();
}

template <const SlhDsaParams& P>
absl::Status SlhDsa<P>::SignInternal(Bytes sk, Bytes mprime, Bytes addrnd, MutBytes sig) {
  if (sk.size() != kPrivateKeyBytes) {
    return slhdsa::SizeError("private key", P, absl::StrCat(kPrivateKeyBytes, " bytes"), sk.size());
  }
  if (addrnd.size() != kRndBytes) {
    return slhdsa::SizeError("addrnd", P, absl::StrCat(kRndBytes, " bytes"), addrnd.size());
  }
  if (sig.size() != kSignatureBytes) {
    return slhdsa::SizeError("signature buffer", P, absl::StrCat(kSignatureBytes, " bytes"),
                             sig.size());
  }
  const Bytes parts[1] = {mprime};
  slhdsa::SignInternal(P, sk.data(), nullptr, nullptr, parts, addrnd.data(), sig.data());
  CtPublic(sig.data(), sig.size());
  return absl::OkStatus();
}

template <const SlhDsaParams& P>
absl::StatusOr<bool> SlhDsa<P>::Verify(Bytes pk, Bytes message, Bytes sig,
                                       const DsaMessageOptions& options) {
  if (pk.size() != kPublicKeyBytes) {
    return slhdsa::SizeError("public key", P, absl::StrCat(kPublicKeyBytes, " bytes"), pk.size());
  }
  slhdsa::FormattedMessage f;
  if (absl::Status s = slhdsa::FormatMessage(P, message, options, f); !s.ok()) return s;
  return slhdsa::VerifyInternal(P, pk.data(), f.parts, sig);
}

template <const SlhDsaParams& P>
absl::StatusOr<bool> SlhDsa<P>::VerifyInternal(Bytes pk, Bytes mprime, Bytes sig) {
  if (pk.size() != kPublicKeyBytes) {
    return slhdsa::SizeError("public key", P, absl::StrCat(kPublicKeyBytes, " bytes"), pk.size());
  }
  const Bytes parts[1] = {mprime};
  return slhdsa::VerifyInternal(P, pk.data(), parts, sig);
}

template <const SlhDsaParams& P>
absl::Status SlhDsa<P>::PairwiseCheck(Bytes pk, Bytes sk) {
  static constexpr uint8_t kMessage[] = "pqcd SLH-DSA pairwise consistency test";
  DsaSignOptions o;
  o.deterministic = true;
  std::vector<uint8_t> sig(kSignatureBytes);
  if (absl::Status s =
          Sign(sk, Bytes(kMessage, sizeof(kMessage) - 1), o, MutBytes(sig), OsRandom());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<bool> ok = Verify(pk, Bytes(kMessage, sizeof(kMessage) - 1), sig, o);
  if (!ok.ok()) return ok.status();
  if (!*ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(P.name), ": the public key does not verify the private key's signature"));
  }
  return absl::OkStatus();
}

template <const SlhDsaParams& P>
absl::Status SlhDsa<P>::CheckExpandedPrivateKey(Bytes sk, Bytes pk, MutBytes pk_out) {
  if (sk.size() != kPrivateKeyBytes) {
    return slhdsa::SizeError("private key", P, absl::StrCat(kPrivateKeyBytes, " bytes"), sk.size());
  }
  if (!pk.empty() && pk.size() != kPublicKeyBytes) {
    return slhdsa::SizeError("public key", P, absl::StrCat(kPublicKeyBytes, " bytes"), pk.size());
  }
  if (!pk_out.empty() && pk_out.size() != kPublicKeyBytes) {
    return slhdsa::SizeError("public key buffer", P, absl::StrCat(kPublicKeyBytes, " bytes"),
                             pk_out.size());
  }
  uint8_t again[4 * slhdsa::kMaxN];
  slhdsa::KeyGenInternal(P, sk.data(), sk.data() + kN, sk.data() + 2 * kN, nullptr, again);
  // PK.root is public: the verdict reveals nothing secret.
  const bool root_ok = std::memcmp(again + 3 * kN, sk.data() + 3 * kN, kN) == 0;
  SecureZero(again, sizeof(again));
  if (!root_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("private key: PK.root is not the root made from SK.seed and PK.seed (",
                     std::string(P.name), ")"));
  }
  if (!pk.empty() && std::memcmp(pk.data(), sk.data() + 2 * kN, kPublicKeyBytes) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("public key: does not match the private key (", std::string(P.name), ")"));
  }
  if (!pk_out.empty()) std::memcpy(pk_out.data(), sk.data() + 2 * kN, kPublicKeyBytes);
  return absl::OkStatus();
}

template <const SlhDsaParams& P>
absl::Status SlhDsa<P>::PublicKeyOf(Bytes sk, MutBytes pk) {
  if (pk.size() != kPublicKeyBytes) {
    return slhdsa::SizeError("public key buffer", P, absl::StrCat(kPublicKeyBytes, " bytes"),
                             pk.size());
  }
  if (sk.size() == kPrivateKeyBytes) return CheckExpandedPrivateKey(sk, {}, pk);
  if (sk.size() == kSeedBytes) {
    uint8_t full[4 * slhdsa::kMaxN];
    slhdsa::KeyGenInternal(P, sk.data(), sk.data() + kN, sk.data() + 2 * kN, pk.data(), full);
    SecureZero(full, sizeof(full));
    CtPublic(pk.data(), pk.size());
    return absl::OkStatus();
  }
  return slhdsa::SizeError(
      "private key", P, absl::StrCat(kPrivateKeyBytes, " bytes (or a ", kSeedBytes, "-byte seed)"),
      sk.size());
}

template <const SlhDsaParams& P>
absl::Status SlhDsa<P>::PreparePrivateKey(Bytes sk, MutBytes prepared) {
  if (prepared.size() != kPreparedBytes) {
    return slhdsa::SizeError("prepared key buffer", P, absl::StrCat(kPreparedBytes, " bytes"),
                             prepared.size());
  }
  std::memset(prepared.data(), 0, prepared.size());
  if (sk.size() == kSeedBytes) {
    slhdsa::KeyGenInternal(P, sk.data(), sk.data() + kN, sk.data() + 2 * kN, nullptr,
                           prepared.data());
  } else if (absl::Status s = CheckExpandedPrivateKey(sk); !s.ok()) {
    return s;
  } else {
    std::memcpy(prepared.data(), sk.data(), kPrivateKeyBytes);
  }
  slhdsa::Hashes hs(P, prepared.data() + 2 * kN, prepared.data());
  uint32_t c256[8];
  uint64_t c512[8];
  hs.ExportChains(c256, c512);
  std::memcpy(prepared.data() + kChainOffset(kN), c256, 32);
  std::memcpy(prepared.data() + kChainOffset(kN) + 32, c512, 64);
  return absl::OkStatus();
}

template <const SlhDsaParams& P>
void SlhDsa<P>::KeyGenBatch(std::span<DsaKeyGenItem> items, RandomSource& rng) {
  for (DsaKeyGenItem& it : items) {
    if (!it.seed.empty()) {
      it.status = KeyGenFromSeed(it.seed, it.pk, it.sk);
    } else {
      it.status = KeyGen(it.pk, it.sk, rng, it.seed_out);
    }
  }
}

template <const SlhDsaParams& P>
void SlhDsa<P>::SignBatch(std::span<DsaSignItem> items, RandomSource& rng) {
  for (DsaSignItem& it : items) {
    it.status = Sign(it.sk, it.message, it.options, it.sig, rng, it.prepared);
  }
}

template <const SlhDsaParams& P>
void SlhDsa<P>::VerifyBatch(std::span<DsaVerifyItem> items) {
  for (DsaVerifyItem& it : items) {
    absl::StatusOr<bool> ok = Verify(it.pk, it.message, it.sig, it.options);
    it.status = ok.status();
    it.valid = ok.ok() && *ok;
  }
}

template class SlhDsa<kSlhDsaSha2_128s>;
template class SlhDsa<kSlhDsaSha2_128f>;
template class SlhDsa<kSlhDsaSha2_192s>;
template class SlhDsa<kSlhDsaSha2_192f>;
template class SlhDsa<kSlhDsaSha2_256s>;
template class SlhDsa<kSlhDsaSha2_256f>;
template class SlhDsa<kSlhDsaShake128s>;
template class SlhDsa<kSlhDsaShake128f>;
template class SlhDsa<kSlhDsaShake192s>;
template class SlhDsa<kSlhDsaShake192f>;
template class SlhDsa<kSlhDsaShake256s>;
template class SlhDsa<kSlhDsaShake256f>;

}  // namespace pqcd::kernels
