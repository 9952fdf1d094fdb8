#include "pqcd/server/selftest.h"

#include <future>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "pqcd/engine/engine.h"
#include "pqcd/kernels/hash.h"
#include "pqcd/kernels/mldsa.h"
#include "pqcd/kernels/mlkem.h"

namespace pqcd::server {
namespace {

using kernels::Bytes;
using kernels::MutBytes;

std::vector<uint8_t> Hex(std::string_view hex) {
  std::string bytes = absl::HexStringToBytes(absl::string_view(hex.data(), hex.size()));
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

// Submits one job and waits for it.
absl::Status RunJob(engine::Engine& engine, engine::Job& job) {
  std::promise<absl::Status> done;
  auto future = done.get_future();
  job.on_complete = [&done](engine::Job&, absl::Status status) { done.set_value(status); };
  engine.Submit(&job);
  return future.get();
}

std::vector<uint8_t> Sha3_256(std::initializer_list<Bytes> parts) {
  auto h = kernels::Hasher::Create(kernels::HashAlgorithm::kSha3_256);
  std::vector<uint8_t> out(32);
  if (!h.ok()) return out;
  for (Bytes p : parts) h->Update(p);
  (void)h->Finish(MutBytes(out));
  return out;
}

struct HashKat {
  kernels::HashAlgorithm alg;
  const char* digest_of_abc;
};
// Published digests of "abc" (FIPS 180-4 / FIPS 202 examples, GB/T 32905-2016 example 1).
const HashKat kHashKats[] = {
    {kernels::HashAlgorithm::kSha3_224, "e642824c3f8cf24ad09234ee7d3c766fc9a3a5168d0c94ad73b46fdf"},
    {kernels::HashAlgorithm::kSha3_256,
     "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"},
    {kernels::HashAlgorithm::kSha3_384,
     "ec01498288516fc926459f58e2c6ad8df9b473cb0fc08c2596da7cf0e49be4b298d88cea927ac7f539f1edf228"
     "376d25"},
    {kernels::HashAlgorithm::kSha3_512,
     "b751850b1a57168a5693cd924b6b096e08f621827444f70d884f5d0240d2712e10e116e9192af3c91a7ec57647e3"
     "934057340b4cf408d5a56592f8274eec53f0"},
    {kernels::HashAlgorithm::kShake128,
     "5881092dd818bf5cf8a3ddb793fbcba74097d5c526a6d35f97b83351940f2cc8"},
    {kernels::HashAlgorithm::kShake256,
     "483366601360a8771c6863080cc4114d8db44530f8f1e1ee4f94ea37e78b5739d5a15bef186a5386c75744c052"
     "7e1faa9f8726e462a12a4feb06bd8801e751e4"},
    {kernels::HashAlgorithm::kSm3,
     "66c7f0f462eeedd9d1f2d46bdc10e4e24167c4875cf2f7a2297da02b8f4ba8e0"},
    {kernels::HashAlgorithm::kSha2_224, "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7"},
    {kernels::HashAlgorithm::kSha2_256,
     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
    {kernels::HashAlgorithm::kSha2_384,
     "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c8"
     "25a7"},
    {kernels::HashAlgorithm::kSha2_512,
     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3fe"
     "ebbd454d4423643ce80e2a9ac94fa54ca49f"},
    {kernels::HashAlgorithm::kSha2_512_224,
     "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa"},
    {kernels::HashAlgorithm::kSha2_512_256,
     "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23"},
};

// KeyGen seeds: the first ACVP ML-KEM-keyGen / ML-DSA-keyGen case of each parameter set
// (ACVP-Server v1.1.0.43); expected: SHA3-256 of the expected public key || private key.
struct KemKat {
  kernels::KemAlgorithm alg;
  const char* d;
  const char* z;
  const char* digest;
};
const KemKat kKemKats[] = {
    {kernels::KemAlgorithm::kMlKem512,
     "47B893474672BA92E4B12EE44FB32953AF8E8503B5FB471D1614FB8A021A660A",
     "1F8CB39E9E30BC458A0DC5408884B1187FB217018DF760FA57317703B844A0A9",
     "87bbb2263246b58f54839db8bd73e1356db3bf9d0e639fe676747290bd76e0f6"},
    {kernels::KemAlgorithm::kMlKem768,
     "E582B7D75E6C80B05AE392A1FC9F7153B12390FD99930368CC67A768BAEBC8A0",
     "1CDACB8740C0B87C4A379575F187B367CBFA3B300BF591B109F79816E9CBE8F0",
     "ed7108e524c6ccbdb5e4b856351c64691c33c7078f1385b080b64f4507442d70"},
    {kernels::KemAlgorithm::kMlKem1024,
     "F3A706FAF090C03DB506863AB0B20BD8A1627956318E88C67EB875E8E7266009",
     "35D2BC43DD1CC879F765BF2A0C5E297889DDE910E57E2BB0EAE417B90AB7A275",
     "5d2887aec8ea023cec74805e20cf5dac04a9a2a610025f6b1e88642523ff9a5e"},
};
struct DsaKat {
  kernels::DsaAlgorithm alg;
  const char* xi;
  const char* digest;
};
const DsaKat kDsaKats[] = {
    {kernels::DsaAlgorithm::kMlDsa44,
     "7194B13C95231010AFD2C909992BD2003BA6F437C3886BDBE3F6B867A14BA161",
     "4ee0b7984f2abe107bc1460cef1e7e538af697583bbeb76bd2659646c653ddb8"},
    {kernels::DsaAlgorithm::kMlDsa65,
     "A991FD42B071D49C48AE3E75C647459E0DAAD1E1BA356A04801912D3294BCFF8",
     "6d3c24fabceb657da3936711f675c1770bf0871cb623482b33e463fc92fd9058"},
    {kernels::DsaAlgorithm::kMlDsa87,
     "A16F5B0796703E2D1A0140A35CBF36EFABE70E752BA59B6A9A0E9C4B05302F73",
     "f28942119ee717e4ddbf8b9acfce35c7c7d7cb875596a58af15e7f654add8ac1"},
};

absl::Status Fail(std::string_view alg_view, std::string_view test_view,
                  const absl::Status& s = {}) {
  std::string alg(alg_view), test(test_view);
  return absl::InternalError(
      absl::StrCat("self-test failed: ", alg, " ", test,
                   s.ok() ? std::string() : absl::StrCat(" (", std::string(s.message()), ")")));
}

absl::Status TestKem(engine::Engine& engine, const KemKat& kat) {
  const auto& info = kernels::GetKemInfo(kat.alg);
  std::vector<uint8_t> seed = Hex(kat.d), z = Hex(kat.z);
  seed.insert(seed.end(), z.begin(), z.end());
  std::vector<uint8_t> ek(info.ek_bytes), dk(info.dk_bytes);
  engine::Job kg;
  kg.SetKem(engine::Operation::kKemKeyGen, kat.alg);
  kg.seed = Bytes(seed);
  kg.public_key = MutBytes(ek);
  kg.private_key = MutBytes(dk);
  if (auto s = RunJob(engine, kg); !s.ok()) return Fail(info.name, "KeyGen", s);
  if (Sha3_256({Bytes(ek), Bytes(dk)}) != Hex(kat.digest)) return Fail(info.name, "KeyGen KAT");

  std::vector<uint8_t> ct(info.ct_bytes), ss1(32), ss2(32), ss3(32);
  engine::Job en;
  en.SetKem(engine::Operation::kKemEncaps, kat.alg);
  en.key = Bytes(ek);
  en.output = MutBytes(ct);
  en.shared_secret = MutBytes(ss1);
  if (auto s = RunJob(engine, en); !s.ok()) return Fail(info.name, "Encaps", s);
  engine::Job de;
  de.SetKem(engine::Operation::kKemDecaps, kat.alg);
  de.key = Bytes(seed);  // the seed form of the private key
  de.ciphertext = Bytes(ct);
  de.shared_secret = MutBytes(ss2);
  if (auto s = RunJob(engine, de); !s.ok()) return Fail(info.name, "Decaps", s);
  if (ss1 != ss2) return Fail(info.name, "Encaps/Decaps agreement");
  ct[0] ^= 1;
  engine::Job rej;
  rej.SetKem(engine::Operation::kKemDecaps, kat.alg);
  rej.key = Bytes(dk);  // the expanded form
  rej.ciphertext = Bytes(ct);
  rej.shared_secret = MutBytes(ss3);
  if (auto s = RunJob(engine, rej); !s.ok()) return Fail(info.name, "Decaps (tampered)", s);
  if (ss3 == ss1) return Fail(info.name, "implicit rejection");
  kernels::SecureZero(seed.data(), seed.size());
  kernels::SecureZero(dk.data(), dk.size());
  return absl::OkStatus();
}

absl::Status TestDsa(engine::Engine& engine, const DsaKat& kat) {
  const auto& info = kernels::GetDsaInfo(kat.alg);
  std::vector<uint8_t> xi = Hex(kat.xi);
  std::vector<uint8_t> pk(info.pk_bytes), sk(info.sk_bytes);
  engine::Job kg;
  kg.SetDsa(engine::Operation::kDsaKeyGen, kat.alg);
  kg.seed = Bytes(xi);
  kg.public_key = MutBytes(pk);
  kg.private_key = MutBytes(sk);
  if (auto s = RunJob(engine, kg); !s.ok()) return Fail(info.name, "KeyGen", s);
  if (Sha3_256({Bytes(pk), Bytes(sk)}) != Hex(kat.digest)) return Fail(info.name, "KeyGen KAT");

  static const uint8_t kMessage[] = "pqcd start-up self-test";
  static const uint8_t kContext[] = "pqcd";
  std::vector<uint8_t> sig(info.sig_bytes);
  engine::Job sg;
  sg.SetDsa(engine::Operation::kDsaSign, kat.alg);
  sg.key = Bytes(sk);
  sg.message = Bytes(kMessage, sizeof(kMessage) - 1);
  sg.options.context = Bytes(kContext, 4);
  sg.options.deterministic = true;
  sg.output = MutBytes(sig);
  if (auto s = RunJob(engine, sg); !s.ok()) return Fail(info.name, "Sign", s);
  for (int tamper = 0; tamper < 2; ++tamper) {
    std::vector<uint8_t> msg(kMessage, kMessage + sizeof(kMessage) - 1);
    if (tamper) msg[0] ^= 1;
    engine::Job vf;
    vf.SetDsa(engine::Operation::kDsaVerify, kat.alg);
    vf.key = Bytes(pk);
    vf.message = Bytes(msg);
    vf.ciphertext = Bytes(sig);
    vf.options.context = Bytes(kContext, 4);
    if (auto s = RunJob(engine, vf); !s.ok()) return Fail(info.name, "Verify", s);
    if (vf.verified == static_cast<bool>(tamper)) {
      return Fail(info.name, tamper ? "Verify accepted a changed message" : "Verify rejected");
    }
  }
  kernels::SecureZero(sk.data(), sk.size());
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSelfTest(engine::Engine& engine, int* tests_run) {
  int n = 0;
  static const uint8_t kAbc[] = {'a', 'b', 'c'};
  for (const HashKat& kat : kHashKats) {
    std::vector<uint8_t> want = Hex(kat.digest_of_abc);
    std::vector<uint8_t> got(want.size());
    engine::Job job;
    job.SetHash(kat.alg);
    job.message = Bytes(kAbc, 3);
    job.output = MutBytes(got);
    job.options.xof_bytes = kernels::HashIsXof(kat.alg) ? got.size() : 0;
    if (auto s = RunJob(engine, job); !s.ok()) return Fail(kernels::HashName(kat.alg), "hash", s);
    if (got != want) return Fail(kernels::HashName(kat.alg), "hash KAT");
    ++n;
  }
  for (const KemKat& kat : kKemKats) {
    if (auto s = TestKem(engine, kat); !s.ok()) return s;
    ++n;
  }
  for (const DsaKat& kat : kDsaKats) {
    if (auto s = TestDsa(engine, kat); !s.ok()) return s;
    ++n;
  }
  if (tests_run) *tests_run = n;
  return absl::OkStatus();
}

}  // namespace pqcd::server
