// pqc-load's operation mix (--op ALG:OP[=WEIGHT],...): its entries, the fixtures each entry's
// requests carry (keys, ciphertexts and signatures made once, before the run), the operation of
// one request, and the check of its answer.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pqcd/client/types.h"

namespace pqcd::load {

class Backend;

enum class Kind { kKeyGen, kEncaps, kDecaps, kSign, kVerify, kHash };

struct MixEntry {
  client::Algorithm algorithm;
  Kind kind;
  double weight;
  std::string label;  // "ML-KEM-768:decaps"
};

absl::StatusOr<std::vector<MixEntry>> ParseMix(const std::string& spec);

// ---- Fixtures: keys, ciphertexts and signatures made once, before the run -----------------------
struct Fixture {
  std::string public_key, private_key, ciphertext, shared_secret, message, signature;
  std::string held_id;  // --private-key held: the key the daemon holds (key_ref)
};

// One fixture per mix entry, made through `backend`. private_key: the form decaps and sign
// requests carry (--private-key: expanded, seed or held).
absl::StatusOr<std::vector<Fixture>> MakeFixtures(Backend& backend,
                                                  const std::vector<MixEntry>& mix, size_t payload,
                                                  const std::string& private_key);

// The operation of one request of entry `e`.
client::Operation MakeOp(const MixEntry& e, const Fixture& f);

// ---- Error slots --------------------------------------------------------------------------------
// The gRPC status codes 0..16 (absl's, which are the same numbers), then two of pqc-load's own.
constexpr int kVerifyFailed = 17;  // a signature of our own that did not verify
constexpr int kMismatch = 18;      // an answer that disagrees with the fixture
constexpr int kCodes = 19;
std::string CodeName(int c);

// Checks one operation's result; returns the error slot (0 = fine).
int Classify(const absl::StatusOr<client::Result>& r, const MixEntry& e, const Fixture& f);

}  // namespace pqcd::load
