// slhdsa-peers: pqcd's SLH-DSA beside liboqs's, interleaved in one process (../shared/PEERS.md's
// method): every call bracketed by lfence; rdtsc ... rdtscp; lfence, R rounds, in each round the
// (parameter set, operation, implementation) blocks in shuffled order, the median of the per-call
// ticks. Before timing, each set's signatures cross-verify (pqcd's in liboqs, liboqs's in pqcd)
// and a changed signature is rejected by both.
//
// Built only when CMake is given a liboqs build with SLH-DSA enabled:
//   -DPQCD_LIBOQS_DIR=/path/to/liboqs-build   (its include/ and lib/liboqs.a)
// and, optionally, the SPHINCS+ team's AVX2 code (bench/peers/build-sphincsplus.sh):
//   -DPQCD_SPHINCSPLUS_DIR=/path/to/its/output  (libspxpeers.a, spx_peers.h)
// SPHINCS+ 3.1 is not byte-compatible with FIPS 205, so its signatures are only checked against
// its own verification; it is timed on the same message with its own keys.
// Run pinned:  build/bench/slhdsa-peers --cpu=1 --rounds=7 [--sets=SLH-DSA-SHA2-128f,...]
//               [--isa=avx2] (pqcd's backend; the start-up choice by default)
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "pqcd/kernels/isa.h"
#include "pqcd/kernels/random.h"
#include "pqcd/kernels/slhdsa.h"
#include "slhdsa/sha2.h"
#include "tsc.h"

extern "C" {
#include <oqs/oqs.h>
}
#ifdef PQCD_HAVE_SPHINCSPLUS
#include "spx_peers.h"
#endif

namespace k = pqcd::kernels;

namespace {

struct Block {
  std::string set, op, impl;
  int calls;
  std::function<bool()> call;
};

std::string OqsName(std::string_view set) {
  // "SLH-DSA-SHA2-128f" -> "SLH_DSA_PURE_SHA2_128F"
  std::string s = "SLH_DSA_PURE_";
  std::string rest(set.substr(8));
  for (char& c : rest) c = c == '-' ? '_' : static_cast<char>(std::toupper(c));
  return s + rest;
}

constexpr int kBatch = 8;

struct SpxFns {
  const char* set;
  int (*keypair)(unsigned char*, unsigned char*, const unsigned char*);
  int (*sign)(uint8_t*, size_t*, const uint8_t*, size_t, const uint8_t*);
  int (*verify)(const uint8_t*, size_t, const uint8_t*, size_t, const uint8_t*);
};
#ifdef PQCD_HAVE_SPHINCSPLUS
#define PQCD_SPX(set, p) \
  { set, p##_keypair, p##_sign, p##_verify }
constexpr SpxFns kSpx[] = {
    PQCD_SPX("SLH-DSA-SHA2-128s", spx_sha2_128s),   PQCD_SPX("SLH-DSA-SHA2-128f", spx_sha2_128f),
    PQCD_SPX("SLH-DSA-SHA2-192s", spx_sha2_192s),   PQCD_SPX("SLH-DSA-SHA2-192f", spx_sha2_192f),
    PQCD_SPX("SLH-DSA-SHA2-256s", spx_sha2_256s),   PQCD_SPX("SLH-DSA-SHA2-256f", spx_sha2_256f),
    PQCD_SPX("SLH-DSA-SHAKE-128s", spx_shake_128s), PQCD_SPX("SLH-DSA-SHAKE-128f", spx_shake_128f),
    PQCD_SPX("SLH-DSA-SHAKE-192s", spx_shake_192s), PQCD_SPX("SLH-DSA-SHAKE-192f", spx_shake_192f),
    PQCD_SPX("SLH-DSA-SHAKE-256s", spx_shake_256s), PQCD_SPX("SLH-DSA-SHAKE-256f", spx_shake_256f),
};
#undef PQCD_SPX
#endif

const SpxFns* SpxOf(std::string_view set) {
#ifdef PQCD_HAVE_SPHINCSPLUS
  for (const SpxFns& f : kSpx) {
    if (set == f.set) return &f;
  }
#else
  (void)set;
#endif
  return nullptr;
}

// The SPHINCS+ team's code for this set, with its own keys, checked against itself.
template <class S>
bool AddSphincsPlus(std::vector<Block>& blocks, std::vector<std::function<void()>>& cleanup,
                    const std::vector<uint8_t>& msg, int sign_calls) {
  const SpxFns* f = SpxOf(S::kName);
  if (f == nullptr) return true;
  struct Keys {
    std::vector<uint8_t> pk = std::vector<uint8_t>(S::kPublicKeyBytes);
    std::vector<uint8_t> sk = std::vector<uint8_t>(S::kPrivateKeyBytes);
    std::vector<uint8_t> sig = std::vector<uint8_t>(S::kSignatureBytes);
  };
  auto* keys = new Keys;
  cleanup.push_back([keys] { delete keys; });
  std::vector<uint8_t> seed(3 * (S::kPublicKeyBytes / 2), 0x42);
  size_t len = 0;
  if (f->keypair(keys->pk.data(), keys->sk.data(), seed.data()) != 0 ||
      f->sign(keys->sig.data(), &len, msg.data(), msg.size(), keys->sk.data()) != 0 ||
      len != S::kSignatureBytes) {
    return false;
  }
  const bool good = f->verify(keys->sig.data(), len, msg.data(), msg.size(), keys->pk.data()) == 0;
  std::vector<uint8_t> bad = keys->sig;
  bad[bad.size() / 3] ^= 1;
  const bool rejects =
      f->verify(bad.data(), bad.size(), msg.data(), msg.size(), keys->pk.data()) != 0;
  std::printf("%s: sphincsplus verifies its own signature %s, changed signature rejected %s\n",
              S::kName.data(), good ? "ok" : "FAILED", rejects ? "ok" : "FAILED");
  if (!good || !rejects) return false;
  blocks.push_back({std::string(S::kName), "sign", "sphincsplus", sign_calls, [keys, f, msg] {
                      size_t l = 0;
                      return f->sign(keys->sig.data(), &l, msg.data(), msg.size(),
                                     keys->sk.data()) == 0;
                    }});
  blocks.push_back({std::string(S::kName), "verify", "sphincsplus", 10, [keys, f, msg] {
                      return f->verify(keys->sig.data(), keys->sig.size(), msg.data(), msg.size(),
                                       keys->pk.data()) == 0;
                    }});
  return true;
}

template <class S>
bool AddSet(std::vector<Block>& blocks, std::vector<std::function<void()>>& cleanup) {
  const std::string set(S::kName);
  OQS_SIG* oqs = OQS_SIG_new(OqsName(set).c_str());
  if (oqs == nullptr) {
    std::fprintf(stderr, "liboqs has no %s (enable it in OQS_MINIMAL_BUILD)\n",
                 OqsName(set).c_str());
    return false;
  }
  cleanup.push_back([oqs] { OQS_SIG_free(oqs); });
  struct Keys {
    std::vector<uint8_t> pk = std::vector<uint8_t>(S::kPublicKeyBytes);
    std::vector<uint8_t> sk = std::vector<uint8_t>(S::kPrivateKeyBytes);
    std::vector<uint8_t> sig = std::vector<uint8_t>(S::kSignatureBytes);
    std::vector<uint8_t> oqs_sig = std::vector<uint8_t>(S::kSignatureBytes);
    std::vector<std::vector<uint8_t>> batch_sigs =
        std::vector<std::vector<uint8_t>>(kBatch, std::vector<uint8_t>(S::kSignatureBytes));
    std::vector<uint8_t> msg = std::vector<uint8_t>(64, 0x5a);
  };
  auto* keys = new Keys;
  cleanup.push_back([keys] { delete keys; });
  if (!S::KeyGen(keys->pk, keys->sk, k::OsRandom()).ok()) return false;
  const k::DsaSignOptions hedged{};
  // Cross-checks: the same FIPS 205 key format in both; each verifies the other's signature.
  if (!S::Sign(keys->sk, keys->msg, hedged, keys->sig, k::OsRandom()).ok()) return false;
  size_t len = 0;
  if (OQS_SIG_sign(oqs, keys->oqs_sig.data(), &len, keys->msg.data(), keys->msg.size(),
                   keys->sk.data()) != OQS_SUCCESS ||
      len != S::kSignatureBytes) {
    return false;
  }
  const bool cross = OQS_SIG_verify(oqs, keys->msg.data(), keys->msg.size(), keys->sig.data(),
                                    keys->sig.size(), keys->pk.data()) == OQS_SUCCESS &&
                     *S::Verify(keys->pk, keys->msg, keys->oqs_sig, hedged);
  std::vector<uint8_t> bad = keys->sig;
  bad[bad.size() / 3] ^= 1;
  const bool rejects = OQS_SIG_verify(oqs, keys->msg.data(), keys->msg.size(), bad.data(),
                                      bad.size(), keys->pk.data()) != OQS_SUCCESS &&
                       !*S::Verify(keys->pk, keys->msg, bad, hedged);
  std::printf("%s: cross-verify %s, changed signature rejected %s\n", set.c_str(),
              cross ? "ok" : "FAILED", rejects ? "ok" : "FAILED");
  if (!cross || !rejects) return false;
  const bool small = set.back() == 's';
  const int sign_calls = small ? 1 : 3;
  blocks.push_back({set, "sign", "pqcd", sign_calls, [keys, hedged] {
                      return S::Sign(keys->sk, keys->msg, hedged, keys->sig, k::OsRandom()).ok();
                    }});
  blocks.push_back({set, "sign", "liboqs", sign_calls, [keys, oqs] {
                      size_t l = 0;
                      return OQS_SIG_sign(oqs, keys->oqs_sig.data(), &l, keys->msg.data(),
                                          keys->msg.size(), keys->sk.data()) == OQS_SUCCESS;
                    }});
  blocks.push_back({set, "sign b8/item", "pqcd", 1, [keys] {
                      std::vector<k::DsaSignItem> items(kBatch);
                      for (int i = 0; i < kBatch; ++i) {
                        items[i].sk = keys->sk;
                        items[i].message = keys->msg;
                        items[i].sig = keys->batch_sigs[i];
                      }
                      S::SignBatch(items, k::OsRandom());
                      return items[0].status.ok();
                    }});
  blocks.push_back({set, "verify", "pqcd", 10,
                    [keys, hedged] { return *S::Verify(keys->pk, keys->msg, keys->sig, hedged); }});
  blocks.push_back({set, "verify", "liboqs", 10, [keys, oqs] {
                      return OQS_SIG_verify(oqs, keys->msg.data(), keys->msg.size(),
                                            keys->sig.data(), keys->sig.size(),
                                            keys->pk.data()) == OQS_SUCCESS;
                    }});
  return AddSphincsPlus<S>(blocks, cleanup, keys->msg, sign_calls);
}

double Median(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : static_cast<double>(v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, cpu = -1;
  std::string sets = "SLH-DSA-SHA2-128f,SLH-DSA-SHAKE-128f,SLH-DSA-SHA2-128s,SLH-DSA-SHAKE-128s";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::atoi(a.c_str() + 9);
    } else if (a.rfind("--cpu=", 0) == 0) {
      cpu = std::atoi(a.c_str() + 6);
    } else if (a.rfind("--sha256=", 0) == 0) {
      const std::string v = a.substr(9);
      namespace s = k::slhdsa;
      if (v != "auto" && v != "portable" && v != "shani" && v != "lanes") {
        std::fprintf(stderr, "slhdsa-peers: --sha256=%s: expected auto, portable, shani or lanes\n",
                     v.c_str());
        return 2;
      }
      s::SetSha256PathForTesting(v == "portable" ? s::Sha256Path::kPortable
                                 : v == "shani"  ? s::Sha256Path::kShaNi
                                 : v == "lanes"  ? s::Sha256Path::kLanes
                                                 : s::Sha256Path::kAuto);
    } else if (a.rfind("--isa=", 0) == 0) {
      const absl::StatusOr<k::Isa> isa = k::ParseIsa(a.substr(6));
      if (!isa.ok() || !k::SetActiveIsa(*isa).ok()) {
        std::fprintf(stderr, "slhdsa-peers: cannot run the %s backend here\n", a.c_str() + 6);
        return 2;
      }
    } else if (a.rfind("--sets=", 0) == 0) {
      sets = a.substr(7);
    } else {
      const std::string isas = k::AllIsaNames("|");  // the kernels' list, not a copy of it
      std::fprintf(stderr,
                   "usage: slhdsa-peers [--cpu=N] [--rounds=R] [--sets=NAME,...|all]\n"
                   "                    [--isa=%s] [--sha256=auto|portable|shani|lanes]\n"
                   "  pqcd's SLH-DSA sign/verify beside liboqs's, median TSC ticks per call\n",
                   isas.c_str());
      return a == "--help" ? 0 : 2;
    }
  }
  if (cpu >= 0) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(cpu, &mask);
    if (sched_setaffinity(0, sizeof(mask), &mask) != 0) std::perror("sched_setaffinity");
  }
  std::vector<std::string> names;
  for (size_t from = 0; from <= sets.size();) {
    const size_t comma = std::min(sets.find(',', from), sets.size());
    names.push_back(sets.substr(from, comma - from));
    from = comma + 1;
  }
  auto wanted = [&](std::string_view name) {
    return sets == "all" || std::find(names.begin(), names.end(), name) != names.end();
  };
  std::vector<Block> blocks;
  std::vector<std::function<void()>> cleanup;
  bool ok = true;
  auto add = [&]<class S>() {
    if (wanted(S::kName)) ok = AddSet<S>(blocks, cleanup) && ok;
  };
  add.template operator()<k::SlhDsaSha2_128s>();
  add.template operator()<k::SlhDsaSha2_128f>();
  add.template operator()<k::SlhDsaSha2_192s>();
  add.template operator()<k::SlhDsaSha2_192f>();
  add.template operator()<k::SlhDsaSha2_256s>();
  add.template operator()<k::SlhDsaSha2_256f>();
  add.template operator()<k::SlhDsaShake128s>();
  add.template operator()<k::SlhDsaShake128f>();
  add.template operator()<k::SlhDsaShake192s>();
  add.template operator()<k::SlhDsaShake192f>();
  add.template operator()<k::SlhDsaShake256s>();
  add.template operator()<k::SlhDsaShake256f>();
  if (!ok || blocks.empty()) {
    std::fprintf(stderr, "slhdsa-peers: setup failed\n");
    return 1;
  }
  const k::slhdsa::Sha256Path path = k::slhdsa::ChosenSha256Path();
  std::printf("pqcd backend: %s, SHA-256 %s; %d rounds\n",
              std::string(k::IsaName(k::ActiveIsa())).c_str(),
              path == k::slhdsa::Sha256Path::kShaNi   ? "sha-ni"
              : path == k::slhdsa::Sha256Path::kLanes ? "lanes"
                                                      : "portable",
              rounds);
  std::map<size_t, std::vector<uint64_t>> ticks;
  std::mt19937 shuffle(12345);
  for (int r = 0; r < rounds; ++r) {
    std::vector<size_t> order(blocks.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), shuffle);
    for (size_t b : order) {
      for (int c = 0; c < blocks[b].calls; ++c) {
        const uint64_t t0 = pqcd::bench::TscStart();
        const bool good = blocks[b].call();
        const uint64_t t1 = pqcd::bench::TscStop();
        if (!good) {
          std::fprintf(stderr, "%s %s %s failed\n", blocks[b].set.c_str(), blocks[b].op.c_str(),
                       blocks[b].impl.c_str());
          return 1;
        }
        ticks[b].push_back(blocks[b].op == "sign b8/item" ? (t1 - t0) / kBatch : t1 - t0);
      }
    }
  }
  std::map<std::string, double> med;
  for (size_t b = 0; b < blocks.size(); ++b) {
    med[blocks[b].set + "|" + blocks[b].op + "|" + blocks[b].impl] = Median(ticks[b]);
  }
  std::printf(
      "\n| parameter set | operation | pqcd ticks | liboqs ticks | sphincsplus avx2 ticks | "
      "pqcd/liboqs | pqcd/sphincsplus |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].impl != "pqcd" || blocks[b].op == "sign b8/item") continue;
    const std::string key = blocks[b].set + "|" + blocks[b].op + "|";
    const double ours = med[key + "pqcd"];
    const double peer = med[key + "liboqs"];
    const auto spx = med.find(key + "sphincsplus");
    if (spx == med.end()) {
      std::printf("| %s | %s | %.0f | %.0f | - | %.2f | - |\n", blocks[b].set.c_str(),
                  blocks[b].op.c_str(), ours, peer, ours / peer);
    } else {
      std::printf("| %s | %s | %.0f | %.0f | %.0f | %.2f | %.2f |\n", blocks[b].set.c_str(),
                  blocks[b].op.c_str(), ours, peer, spx->second, ours / peer, ours / spx->second);
    }
  }
  std::printf(
      "\n| parameter set | pqcd sign, one call | pqcd sign, batch of 8, per item | ratio |\n");
  std::printf("|---|---:|---:|---:|\n");
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].op != "sign b8/item") continue;
    const double one = med[blocks[b].set + "|sign|pqcd"];
    const double batch = med[blocks[b].set + "|sign b8/item|pqcd"];
    std::printf("| %s | %.0f | %.0f | %.2f |\n", blocks[b].set.c_str(), one, batch, batch / one);
  }
  for (auto& f : cleanup) f();
  return 0;
}
