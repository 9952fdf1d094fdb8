// The SLH-DSA backend hook sha256_chains (slhdsa/backend.h): every implementation (the portable
// one on the portable compression and on SHA-NI, and the lanes of each backend that has its own)
// beside a reference written here from FIPS 205 §11.2, one compression per step: random chaining
// values, addresses, values and SK.seed; n = 16, 24, 32; counts that leave lanes idle; steps mixed
// from 0 to 15 within a group of lanes, with and without the PRF that starts a chain; hash
// addresses above 2^16 (FORS tree indices of the 256s set). Values outside `count` must stay as
// they were.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/test_support.h"
#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/random.h"
#include "slhdsa/backend.h"
#include "slhdsa/sha2.h"

namespace pqcd::kernels {
namespace {

using slhdsa::kAdrscBytes;

void PutBe32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// One F or PRF: SHA-256 from `chain` over ADRSc || msg (n bytes) || padding, the first n bytes.
void OneCall(const uint32_t chain[8], const uint8_t* adrsc, const uint8_t* msg, size_t n,
             uint8_t* out) {
  uint8_t blk[64] = {};
  std::memcpy(blk, adrsc, kAdrscBytes);
  std::memcpy(blk + kAdrscBytes, msg, n);
  blk[kAdrscBytes + n] = 0x80;
  PutBe32(blk + 60, static_cast<uint32_t>((64 + kAdrscBytes + n) * 8));
  uint32_t h[8];
  std::memcpy(h, chain, sizeof(h));
  slhdsa::Sha256CompressPortable(h, blk);
  for (size_t w = 0; w < n / 4; ++w) PutBe32(out + 4 * w, h[w]);
}

struct Impl {
  std::string name;
  void (*fn)(const slhdsa::Sha256ChainsArgs&);
  void (*compress)(uint32_t*, const uint8_t*);
};

std::vector<Impl> Implementations() {
  std::vector<Impl> impls = {{"portable", &slhdsa::portable::Sha256Chains, nullptr}};
  if (slhdsa::Sha256ShaNiSupported()) {
    impls.push_back(
        {"portable+sha-ni", &slhdsa::portable::Sha256Chains, &slhdsa::Sha256CompressShaNi});
  }
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    const slhdsa::Backend& b = slhdsa::BackendFor(isa);
    if (b.sha256_chain_lanes > 1) {
      impls.push_back({"lanes:" + std::string(IsaName(isa)), b.sha256_chains, nullptr});
    }
  }
  return impls;
}

TEST(SlhDsaChains, EqualsOneCompressionPerStep) {
  SeededRandom rng(uint64_t{28});
  const std::vector<Impl> impls = Implementations();
  size_t checked = 0;
  for (const Impl& impl : impls) {
    for (size_t n : {size_t{16}, size_t{24}, size_t{32}}) {
      for (size_t count : {1, 5, 15, 16, 17, 35, 40, 67}) {
        for (int with_prf = 0; with_prf < 2; ++with_prf) {
          for (int pattern = 0; pattern < 3; ++pattern) {
            uint32_t chain[8];
            ASSERT_TRUE(rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(chain), 32)).ok());
            std::vector<uint8_t> adrsc(count * kAdrscBytes), prf_adrsc(count * kAdrscBytes);
            std::vector<uint8_t> sk_seed(n);
            ASSERT_TRUE(rng.Generate(adrsc).ok());
            ASSERT_TRUE(rng.Generate(prf_adrsc).ok());
            ASSERT_TRUE(rng.Generate(sk_seed).ok());
            std::vector<uint32_t> start(count), steps(count);
            std::vector<uint8_t> rnd(2 * count);
            ASSERT_TRUE(rng.Generate(rnd).ok());
            for (size_t i = 0; i < count; ++i) {
              switch (pattern) {
                case 0:  // a WOTS+ key generation: every chain all 15 steps from 0
                  start[i] = 0;
                  steps[i] = 15;
                  break;
                case 1:  // signing or verifying: chains of mixed lengths, some of none
                  start[i] = rnd[2 * i] & 15;
                  steps[i] = 15 - start[i];
                  if (rnd[2 * i + 1] % 5 == 0) steps[i] = 0;
                  break;
                default:  // FORS leaves: one step, hash addresses past 2^16
                  start[i] = (uint32_t{rnd[2 * i]} << 12) + static_cast<uint32_t>(i);
                  steps[i] = 1;
                  break;
              }
            }
            // Values with a guard of sentinel bytes after each.
            const size_t stride = n + 8;
            std::vector<uint8_t> values((count + 1) * stride), want;
            ASSERT_TRUE(rng.Generate(values).ok());
            want = values;
            for (size_t i = 0; i < count; ++i) {
              uint8_t* v = want.data() + i * stride;
              if (with_prf) OneCall(chain, &prf_adrsc[i * kAdrscBytes], sk_seed.data(), n, v);
              uint8_t a[kAdrscBytes];
              std::memcpy(a, &adrsc[i * kAdrscBytes], kAdrscBytes);
              for (uint32_t t = 0; t < steps[i]; ++t) {
                PutBe32(a + kAdrscBytes - 4, start[i] + t);
                OneCall(chain, a, v, n, v);
              }
            }
            std::vector<uint8_t*> ptrs(count);
            for (size_t i = 0; i < count; ++i) ptrs[i] = values.data() + i * stride;
            slhdsa::Sha256ChainsArgs args;
            args.chain = chain;
            args.compress = impl.compress;
            args.n = n;
            args.count = count;
            args.adrsc = adrsc.data();
            args.start = start.data();
            args.steps = steps.data();
            args.prf_adrsc = with_prf ? prf_adrsc.data() : nullptr;
            args.sk_seed = sk_seed.data();
            args.values = ptrs.data();
            impl.fn(args);
            ASSERT_EQ(values, want) << impl.name << " n=" << n << " count=" << count
                                    << " prf=" << with_prf << " pattern=" << pattern;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, impls.size() * 3 * 8 * 2 * 3);
  std::printf("[sha256_chains] %zu implementation(s) checked\n", impls.size());
}

// A chain of s steps in one call equals s calls of one step each (the lanes carry a chain's value
// from step to step exactly as writing it out and reading it back would), with the lanes' groups
// cut differently: 16 chains and 3.
TEST(SlhDsaChains, ManyStepsEqualOneStepAtATime) {
  SeededRandom rng(uint64_t{205});
  for (const Impl& impl : Implementations()) {
    for (size_t count : {size_t{3}, size_t{16}}) {
      constexpr size_t n = 16;
      uint32_t chain[8];
      ASSERT_TRUE(rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(chain), 32)).ok());
      std::vector<uint8_t> adrsc(count * kAdrscBytes), values(count * n);
      ASSERT_TRUE(rng.Generate(adrsc).ok());
      ASSERT_TRUE(rng.Generate(values).ok());
      std::vector<uint8_t> stepped = values;
      std::vector<uint32_t> start(count), steps(count);
      for (size_t i = 0; i < count; ++i) {
        start[i] = static_cast<uint32_t>(i % 4);
        steps[i] = static_cast<uint32_t>(15 - i % 4 - i % 3);
      }
      auto run = [&](std::vector<uint8_t>& v, const uint32_t* st, const uint32_t* sp) {
        std::vector<uint8_t*> ptrs(count);
        for (size_t i = 0; i < count; ++i) ptrs[i] = v.data() + i * n;
        slhdsa::Sha256ChainsArgs args;
        args.chain = chain;
        args.compress = impl.compress;
        args.n = n;
        args.count = count;
        args.adrsc = adrsc.data();
        args.start = st;
        args.steps = sp;
        args.values = ptrs.data();
        impl.fn(args);
      };
      run(values, start.data(), steps.data());
      for (uint32_t t = 0; t < 15; ++t) {
        std::vector<uint32_t> st(count), sp(count);
        for (size_t i = 0; i < count; ++i) {
          st[i] = start[i] + t;
          sp[i] = t < steps[i] ? 1 : 0;
        }
        run(stepped, st.data(), sp.data());
      }
      EXPECT_EQ(values, stepped) << impl.name << " count=" << count;
    }
  }
}

// sha512_h (H of the n = 24, 32 sets): the portable one and every backend's own beside one
// Sha512Compress per call, on counts that leave lanes idle, with separate outputs and with a tree
// level computed in place (out[i] inside the input of call i / 2, as MerkleTree's Level does).
TEST(SlhDsaChains, Sha512HEqualsOneCompressionPerCall) {
  SeededRandom rng(uint64_t{512});
  struct HImpl {
    std::string name;
    void (*fn)(const slhdsa::Sha512HArgs&);
  };
  std::vector<HImpl> impls = {{"portable", &slhdsa::portable::Sha512H}};
  for (Isa isa : pqcd::testing::SupportedIsas()) {
    const slhdsa::Backend& b = slhdsa::BackendFor(isa);
    if (b.sha512_h_lanes > 1) impls.push_back({"lanes:" + std::string(IsaName(isa)), b.sha512_h});
  }
  for (const HImpl& impl : impls) {
    for (size_t n : {size_t{24}, size_t{32}}) {
      for (size_t count : {1, 3, 7, 8, 9, 17, 64}) {
        for (int in_place = 0; in_place < 2; ++in_place) {
          uint64_t chain[8];
          ASSERT_TRUE(rng.Generate(MutBytes(reinterpret_cast<uint8_t*>(chain), 64)).ok());
          std::vector<uint8_t> adrsc(count * kAdrscBytes), in(count * 2 * n + 8);
          ASSERT_TRUE(rng.Generate(adrsc).ok());
          ASSERT_TRUE(rng.Generate(in).ok());
          // The expected outputs, one compression per call, from the inputs as they were.
          std::vector<uint8_t> want(count * n);
          for (size_t i = 0; i < count; ++i) {
            uint8_t blk[128] = {};
            std::memcpy(blk, &adrsc[i * kAdrscBytes], kAdrscBytes);
            std::memcpy(blk + kAdrscBytes, &in[i * 2 * n], 2 * n);
            blk[kAdrscBytes + 2 * n] = 0x80;
            PutBe32(blk + 124, static_cast<uint32_t>((128 + kAdrscBytes + 2 * n) * 8));
            uint64_t h[8];
            std::memcpy(h, chain, sizeof(h));
            slhdsa::Sha512Compress(h, blk);
            for (size_t w = 0; w < n / 8; ++w) {
              PutBe32(&want[i * n + 8 * w], static_cast<uint32_t>(h[w] >> 32));
              PutBe32(&want[i * n + 8 * w + 4], static_cast<uint32_t>(h[w]));
            }
          }
          std::vector<uint8_t> separate(count * n + 8, 0xa5);
          std::vector<const uint8_t*> ins(count);
          std::vector<uint8_t*> outs(count);
          for (size_t i = 0; i < count; ++i) {
            ins[i] = in.data() + i * 2 * n;
            outs[i] = in_place ? in.data() + i * n : separate.data() + i * n;
          }
          slhdsa::Sha512HArgs args;
          args.chain = chain;
          args.n = n;
          args.count = count;
          args.adrsc = adrsc.data();
          args.in = ins.data();
          args.out = outs.data();
          impl.fn(args);
          const uint8_t* got = in_place ? in.data() : separate.data();
          EXPECT_EQ(std::vector<uint8_t>(got, got + count * n), want)
              << impl.name << " n=" << n << " count=" << count << " in_place=" << in_place;
          if (!in_place) {  // nothing past the last output is written
            for (size_t k = count * n; k < separate.size(); ++k) ASSERT_EQ(separate[k], 0xa5);
          }
        }
      }
    }
  }
  std::printf("[sha512_h] %zu implementation(s) checked\n", impls.size());
}

}  // namespace
}  // namespace pqcd::kernels
