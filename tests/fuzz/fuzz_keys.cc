// libFuzzer target: the standard key decoders of pqcd_encoding (SubjectPublicKeyInfo, PKCS#8,
// PEM) with arbitrary bytes. It must never crash, hang or trip ASan/UBSan, and what it accepts
// must round-trip: strict DER has one encoding, so an accepted DER input re-encodes to itself.
//
// Input layout: byte 0 selects the mode (low 2 bits) and an algorithm (bits 2..4, modulo the six
// ML-KEM / ML-DSA rows); the rest is the payload.
//   0  DecodePublicKey (DER or PEM)
//   1  DecodePrivateKey (DER or PEM)
//   2  PublicKeyToRaw / PrivateKeyToRaw for the selected algorithm (raw, DER or PEM)
//   3  PemDecode("PUBLIC KEY" or "PRIVATE KEY", bit 5)
//
// Seeds: `fuzz_keys -write_seeds=DIR` writes valid inputs of every mode for the six algorithms
// and exits; run_fuzz.sh uses it together with tests/fuzz/corpus_keys/ when that exists.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "pqcd/encoding/key_encoding.h"

namespace {

using namespace pqcd::encoding;

constexpr AlgorithmId kAlgs[] = {AlgorithmId::kMlKem512,  AlgorithmId::kMlKem768,
                                 AlgorithmId::kMlKem1024, AlgorithmId::kMlDsa44,
                                 AlgorithmId::kMlDsa65,   AlgorithmId::kMlDsa87};

void Check(bool ok) {
  if (!ok) std::abort();
}

bool IsDer(ByteView p) {
  return !p.empty() && p[0] == 0x30;
}

void FuzzPublic(ByteView p) {
  absl::StatusOr<PublicKey> k = DecodePublicKey(p);
  if (!k.ok()) return;
  Check(k->key.size() == pqcd::kernels::Facts(k->algorithm).public_key_bytes);
  absl::StatusOr<std::vector<uint8_t>> der = EncodeSpkiDer(k->algorithm, k->key);
  Check(der.ok());
  if (IsDer(p)) Check(*der == std::vector<uint8_t>(p.begin(), p.end()));
  absl::StatusOr<PublicKey> again = DecodeSpkiDer(*der);
  Check(again.ok() && again->algorithm == k->algorithm && again->key == k->key);
}

void FuzzPrivate(ByteView p) {
  absl::StatusOr<PrivateKey> k = DecodePrivateKey(p);
  if (!k.ok()) return;
  Check(!k->seed.empty() || !k->expanded.empty());
  absl::StatusOr<SecretBuffer> der =
      EncodePkcs8Der(k->algorithm, k->seed.view(), k->expanded.view());
  Check(der.ok());
  if (IsDer(p)) {
    Check(der->size() == p.size() && std::memcmp(der->data(), p.data(), p.size()) == 0);
  }
  absl::StatusOr<PrivateKey> again = DecodePkcs8Der(der->view());
  Check(again.ok() && again->algorithm == k->algorithm && again->seed.size() == k->seed.size() &&
        again->expanded.size() == k->expanded.size());
}

void FuzzToRaw(AlgorithmId id, ByteView p) {
  absl::StatusOr<std::vector<uint8_t>> pk = PublicKeyToRaw(id, p);
  if (pk.ok()) Check(pk->size() == pqcd::kernels::Facts(id).public_key_bytes);
  absl::StatusOr<PrivateKey> sk = PrivateKeyToRaw(id, p);
  if (sk.ok()) {
    Check(sk->algorithm == id);
    Check(sk->seed.empty() || sk->seed.size() == pqcd::kernels::Facts(id).seed_bytes);
    Check(sk->expanded.empty() ||
          sk->expanded.size() == pqcd::kernels::Facts(id).private_key_bytes);
  }
}

void FuzzPem(bool private_label, ByteView p) {
  const std::string_view label = private_label ? "PRIVATE KEY" : "PUBLIC KEY";
  absl::StatusOr<SecretBuffer> der = PemDecode(label, p);
  if (!der.ok()) return;
  const std::string pem = PemEncode(label, der->view());
  absl::StatusOr<SecretBuffer> again =
      PemDecode(label, ByteView(reinterpret_cast<const uint8_t*>(pem.data()), pem.size()));
  Check(again.ok() && again->size() == der->size() &&
        std::memcmp(again->data(), der->data(), der->size()) == 0);
}

int WriteSeeds(const char* dir) {
  bool ok = true;
  int n = 0;
  auto write = [&](uint8_t sel, ByteView payload) {
    std::ofstream out(std::string(dir) + "/seed-" + std::to_string(n++), std::ios::binary);
    out.put(static_cast<char>(sel));
    out.write(reinterpret_cast<const char*>(payload.data()),
              static_cast<std::streamsize>(payload.size()));
    ok = ok && out.good();
  };
  for (uint8_t a = 0; a < 6; ++a) {
    const AlgorithmId id = kAlgs[a];
    const pqcd::kernels::AlgorithmFacts& f = pqcd::kernels::Facts(id);
    const std::vector<uint8_t> pk(f.public_key_bytes, static_cast<uint8_t>(0x11 + a));
    const std::vector<uint8_t> seed(f.seed_bytes, static_cast<uint8_t>(0x22 + a));
    const std::vector<uint8_t> sk(f.private_key_bytes, static_cast<uint8_t>(0x33 + a));
    const uint8_t alg_bits = static_cast<uint8_t>(a << 2);
    for (KeyFormat fmt : {KeyFormat::kDer, KeyFormat::kPem}) {
      auto pub = EncodePublicKey(id, pk, fmt);
      ok = ok && pub.ok();
      if (!pub.ok()) continue;
      write(0, *pub);
      write(2 | alg_bits, *pub);
      for (int form = 0; form < 3; ++form) {
        auto priv = EncodePrivateKey(id, form == 1 ? ByteView() : ByteView(seed),
                                     form == 0 ? ByteView() : ByteView(sk), fmt);
        ok = ok && priv.ok();
        if (!priv.ok()) continue;
        write(1, priv->view());
        write(2 | alg_bits, priv->view());
        if (fmt == KeyFormat::kPem) write(3 | 0x20, priv->view());
      }
      if (fmt == KeyFormat::kPem) write(3, *pub);
    }
    write(2 | alg_bits, pk);
    write(2 | alg_bits, seed);
  }
  return ok ? 0 : 1;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    const char* a = (*argv)[i];
    if (std::strncmp(a, "-write_seeds=", 13) == 0) std::exit(WriteSeeds(a + 13));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t sel = data[0];
  const ByteView p(data + 1, size - 1);
  switch (sel & 3) {
    case 0:
      FuzzPublic(p);
      break;
    case 1:
      FuzzPrivate(p);
      break;
    case 2:
      FuzzToRaw(kAlgs[((sel >> 2) & 7) % 6], p);
      break;
    case 3:
      FuzzPem((sel & 0x20) != 0, p);
      break;
  }
  return 0;
}
