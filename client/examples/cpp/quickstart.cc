// Calling pqcd from C++ through the client library (pqcd_client): an ML-KEM-768 key exchange, an
// ML-DSA-65 signature with a context string, and a SHA3-256 hash.
//
//   build/client/examples/cpp/pqc-quickstart [TARGET]      (default 127.0.0.1:50051; unix:PATH
//   works)
//
// Exit status 0 when every step succeeded and the two shared secrets matched.
#include <cstdio>
#include <cstring>
#include <string>

#include "pqcd/client/client.h"

namespace pc = pqcd::client;

namespace {

std::string Hex(const std::string& bytes, size_t max = 16) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < max; ++i) {
    out += kDigits[static_cast<unsigned char>(bytes[i]) >> 4];
    out += kDigits[static_cast<unsigned char>(bytes[i]) & 15];
  }
  return bytes.size() > max ? out + "..." : out;
}

int Fail(const char* step, const absl::Status& status) {
  std::fprintf(stderr, "%s failed: %s\n", step, status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    const bool help =
        argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0);
    std::fprintf(help ? stdout : stderr,
                 "usage: %s [TARGET]\n"
                 "An ML-KEM-768 key exchange, an ML-DSA-65 signature and a SHA3-256 hash through "
                 "pqcd.\nTARGET: host:port or unix:PATH (default 127.0.0.1:50051).\n"
                 "Exit status 0 when every step succeeded and the two shared secrets matched.\n",
                 argv[0]);
    return help ? 0 : 2;
  }
  pc::ClientOptions options;
  if (argc > 1) options.targets = {argv[1]};
  auto client = pc::Client::Create(options);
  if (!client.ok()) return Fail("connect", client.status());

  // Key exchange: the receiver generates a key pair, the sender encapsulates to its public key,
  // the receiver decapsulates; both end with the same 32-byte secret.
  pc::KeyGenOp kem_gen;
  kem_gen.algorithm = pc::Algorithm::kMlKem768;
  auto kem = (*client)->KeyGen(kem_gen);
  if (!kem.ok()) return Fail("ML-KEM-768 keygen", kem.status());

  pc::EncapsOp encaps;
  encaps.algorithm = pc::Algorithm::kMlKem768;
  encaps.key = pc::Key::Raw(kem->public_key);
  auto sent = (*client)->Encaps(encaps);
  if (!sent.ok()) return Fail("ML-KEM-768 encaps", sent.status());

  pc::DecapsOp decaps;
  decaps.algorithm = pc::Algorithm::kMlKem768;
  decaps.key = pc::Key::Raw(kem->seed);  // the 64-byte seed form of the private key
  decaps.ciphertext = sent->ciphertext;
  auto received = (*client)->Decaps(decaps);
  if (!received.ok()) return Fail("ML-KEM-768 decaps", received.status());
  const bool same = received->shared_secret == sent->shared_secret;
  std::printf("ML-KEM-768: ciphertext %zu bytes, shared secret %s (%s)\n", sent->ciphertext.size(),
              Hex(sent->shared_secret).c_str(), same ? "both sides agree" : "MISMATCH");

  // Signature with a context string; a failed verification is an answer (valid = false).
  pc::KeyGenOp dsa_gen;
  dsa_gen.algorithm = pc::Algorithm::kMlDsa65;
  auto dsa = (*client)->KeyGen(dsa_gen);
  if (!dsa.ok()) return Fail("ML-DSA-65 keygen", dsa.status());

  pc::SignOp sign;
  sign.algorithm = pc::Algorithm::kMlDsa65;
  sign.key = pc::Key::Raw(dsa->seed);
  sign.message = "transfer 100 to account 42";
  sign.context = "payments-v1";
  auto sig = (*client)->Sign(sign);
  if (!sig.ok()) return Fail("ML-DSA-65 sign", sig.status());

  pc::VerifyOp verify;
  verify.algorithm = pc::Algorithm::kMlDsa65;
  verify.key = pc::Key::Raw(dsa->public_key);
  verify.message = sign.message;
  verify.signature = sig->signature;
  verify.context = sign.context;
  auto ok = (*client)->Verify(verify);
  if (!ok.ok()) return Fail("ML-DSA-65 verify", ok.status());
  verify.message += "0";
  auto tampered = (*client)->Verify(verify);
  if (!tampered.ok()) return Fail("ML-DSA-65 verify", tampered.status());
  std::printf("ML-DSA-65: signature %zu bytes, verifies: %s, tampered message verifies: %s\n",
              sig->signature.size(), ok->valid ? "yes" : "no", tampered->valid ? "yes" : "no");

  pc::HashOp hash;
  hash.algorithm = pc::Algorithm::kSha3_256;
  hash.data = "abc";
  auto digest = (*client)->Hash(hash);
  if (!digest.ok()) return Fail("SHA3-256", digest.status());
  std::printf("SHA3-256(\"abc\") = %s\n", Hex(digest->digest, 32).c_str());

  return same && ok->valid && !tampered->valid ? 0 : 1;
}
