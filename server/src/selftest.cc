#include "pqcd/server/selftest.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "ops.h"
#include "pqcd/engine/engine.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/hash.h"

namespace pqcd::server {
namespace {

using kernels::Bytes;
using kernels::MutBytes;

std::vector<uint8_t> Hex(std::string_view hex) {
  std::string bytes = absl::HexStringToBytes(absl::string_view(hex.data(), hex.size()));
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

std::vector<uint8_t> Sha3_256(std::initializer_list<Bytes> parts) {
  auto h = kernels::Hasher::Create(kernels::HashAlgorithm::kSha3_256);
  std::vector<uint8_t> out(32);
  if (!h.ok()) return out;
  for (Bytes p : parts) h->Update(p);
  (void)h->Finish(MutBytes(out));
  return out;
}

absl::Status Fail(std::string_view alg_view, std::string_view test_view,
                  const absl::Status& s = {}) {
  std::string alg(alg_view), test(test_view);
  return absl::InternalError(
      absl::StrCat("self-test failed: ", alg, " ", test,
                   s.ok() ? std::string() : absl::StrCat(" (", std::string(s.message()), ")")));
}

// Key generation from the registry's seed, compared with its SHA3-256(public || private).
template <class Item>
absl::Status TestKeyGen(engine::Engine& engine, const kernels::AlgorithmFacts& f,
                        std::vector<uint8_t>& seed, std::vector<uint8_t>& pk,
                        std::vector<uint8_t>& sk) {
  seed = Hex(f.kat_seed_hex);
  pk.resize(f.public_key_bytes);
  sk.resize(f.private_key_bytes);
  engine::Job kg;
  kg.Set<Item>(f.id) = {Bytes(seed), MutBytes(pk), MutBytes(sk), {}, {}};
  if (auto s = RunJobAndWait(engine, kg); !s.ok()) return Fail(f.name, "KeyGen", s);
  if (Sha3_256({Bytes(pk), Bytes(sk)}) != Hex(f.kat_digest_hex)) return Fail(f.name, "KeyGen KAT");
  return absl::OkStatus();
}

absl::Status TestKem(engine::Engine& engine, const kernels::AlgorithmFacts& f) {
  std::vector<uint8_t> seed, ek, dk;
  if (auto s = TestKeyGen<kernels::KemKeyGenItem>(engine, f, seed, ek, dk); !s.ok()) return s;
  std::vector<uint8_t> ct(f.ciphertext_bytes), ss1(f.secret_bytes), ss2(f.secret_bytes),
      ss3(f.secret_bytes);
  engine::Job en;
  en.Set<kernels::KemEncapsItem>(f.id) = {Bytes(ek), {}, MutBytes(ct), MutBytes(ss1), {}};
  if (auto s = RunJobAndWait(engine, en); !s.ok()) return Fail(f.name, "Encaps", s);
  engine::Job de;  // the seed form of the private key
  de.Set<kernels::KemDecapsItem>(f.id) = {Bytes(seed), Bytes(ct), MutBytes(ss2), {}};
  if (auto s = RunJobAndWait(engine, de); !s.ok()) return Fail(f.name, "Decaps", s);
  if (ss1 != ss2) return Fail(f.name, "Encaps/Decaps agreement");
  // The middle byte is in the ML-KEM part of every KEM's ciphertext (a hybrid's curve part is a
  // point at one end, which a changed byte may take off the curve: an error, not a rejection).
  ct[ct.size() / 2] ^= 1;
  engine::Job rej;  // the expanded form
  rej.Set<kernels::KemDecapsItem>(f.id) = {Bytes(dk), Bytes(ct), MutBytes(ss3), {}};
  if (auto s = RunJobAndWait(engine, rej); !s.ok()) return Fail(f.name, "Decaps (tampered)", s);
  if (ss3 == ss1) return Fail(f.name, "implicit rejection");
  kernels::SecureZero(seed.data(), seed.size());
  kernels::SecureZero(dk.data(), dk.size());
  return absl::OkStatus();
}

absl::Status TestDsa(engine::Engine& engine, const kernels::AlgorithmFacts& f) {
  std::vector<uint8_t> xi, pk, sk;
  if (auto s = TestKeyGen<kernels::DsaKeyGenItem>(engine, f, xi, pk, sk); !s.ok()) return s;
  static const uint8_t kMessage[] = "pqcd start-up self-test";
  static const uint8_t kContext[] = "pqcd";
  std::vector<uint8_t> sig(f.signature_bytes);
  engine::Job sg;
  auto& sign = sg.Set<kernels::DsaSignItem>(f.id);
  sign.sk = Bytes(sk);
  sign.message = Bytes(kMessage, sizeof(kMessage) - 1);
  sign.options.context = Bytes(kContext, 4);
  sign.options.deterministic = true;
  sign.sig = MutBytes(sig);
  if (auto s = RunJobAndWait(engine, sg); !s.ok()) return Fail(f.name, "Sign", s);
  for (int tamper = 0; tamper < 2; ++tamper) {
    std::vector<uint8_t> msg(kMessage, kMessage + sizeof(kMessage) - 1);
    if (tamper) msg[0] ^= 1;
    engine::Job vf;
    auto& verify = vf.Set<kernels::DsaVerifyItem>(f.id);
    verify.pk = Bytes(pk);
    verify.message = Bytes(msg);
    verify.sig = Bytes(sig);
    verify.options.context = Bytes(kContext, 4);
    if (auto s = RunJobAndWait(engine, vf); !s.ok()) return Fail(f.name, "Verify", s);
    if (verify.valid == static_cast<bool>(tamper)) {
      return Fail(f.name, tamper ? "Verify accepted a changed message" : "Verify rejected");
    }
  }
  kernels::SecureZero(xi.data(), xi.size());
  kernels::SecureZero(sk.data(), sk.size());
  return absl::OkStatus();
}

absl::Status TestHash(engine::Engine& engine, const kernels::AlgorithmFacts& f) {
  const std::vector<uint8_t> message = Hex(f.kat_seed_hex);
  const std::vector<uint8_t> want = Hex(f.kat_digest_hex);
  std::vector<uint8_t> got(want.size());
  engine::Job job;
  job.Set<engine::HashItem>(f.id) = {Bytes(message), MutBytes(got), {}};
  if (auto s = RunJobAndWait(engine, job); !s.ok()) return Fail(f.name, "hash", s);
  if (got != want) return Fail(f.name, "hash KAT");
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSelfTest(engine::Engine& engine, int* tests_run) {
  int n = 0;
  for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) {
    // SLH-DSA rows that share their code with a row that has a vector (algorithms.h): the kernel
    // tests cover them with the ACVP vectors; an 's'-set signature would add a second to start-up.
    if (f.kat_seed_hex.empty()) continue;
    absl::Status s;
    switch (f.family) {
      case kernels::Family::kKem:
        s = TestKem(engine, f);
        break;
      case kernels::Family::kDsa:
        s = TestDsa(engine, f);
        break;
      case kernels::Family::kHash:
        s = TestHash(engine, f);
        break;
    }
    if (!s.ok()) return s;
    ++n;
  }
  if (tests_run) *tests_run = n;
  return absl::OkStatus();
}

}  // namespace pqcd::server
