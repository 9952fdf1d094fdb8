// pqc-load's operation mix: parsing --op, the fixtures, one request's operation, the answer check.
#include "load_mix.h"

#include <unistd.h>

#include <random>
#include <sstream>

#include "load_backends.h"
#include "pqcd/kernels/algorithms.h"

namespace pqcd::load {

using namespace pqcd::client;  // NOLINT

namespace {
constexpr const char* kKindNames[] = {"keygen", "encaps", "decaps", "sign", "verify", "hash"};
}  // namespace

absl::StatusOr<std::vector<MixEntry>> ParseMix(const std::string& spec) {
  std::vector<MixEntry> mix;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.empty()) continue;
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError("op '" + item + "' is not ALG:OP[=WEIGHT]");
    }
    std::string alg_name = item.substr(0, colon), rest = item.substr(colon + 1);
    double weight = 1;
    if (const size_t eq = rest.find('='); eq != std::string::npos) {
      try {
        weight = std::stod(rest.substr(eq + 1));
      } catch (...) {
        return absl::InvalidArgumentError("bad weight in '" + item + "'");
      }
      rest = rest.substr(0, eq);
    }
    auto alg = ParseAlgorithm(alg_name);
    if (!alg) return absl::InvalidArgumentError("unknown algorithm '" + alg_name + "'");
    int kind = -1;
    for (int k = 0; k < 6; ++k) {
      if (rest == kKindNames[k]) kind = k;
    }
    if (kind < 0) return absl::InvalidArgumentError("unknown operation '" + rest + "'");
    const Kind kd = static_cast<Kind>(kind);
    const bool ok =
        IsKem(*alg)   ? (kd == Kind::kKeyGen || kd == Kind::kEncaps || kd == Kind::kDecaps)
        : IsDsa(*alg) ? (kd == Kind::kKeyGen || kd == Kind::kSign || kd == Kind::kVerify)
                      : kd == Kind::kHash;
    if (!ok) return absl::InvalidArgumentError("'" + rest + "' does not apply to " + alg_name);
    if (!(weight > 0)) return absl::InvalidArgumentError("weight must be > 0 in '" + item + "'");
    mix.push_back({*alg, kd, weight, std::string(AlgorithmName(*alg)) + ":" + rest});
  }
  if (mix.empty()) return absl::InvalidArgumentError("empty operation mix");
  return mix;
}

absl::StatusOr<std::vector<Fixture>> MakeFixtures(Backend& backend,
                                                  const std::vector<MixEntry>& mix, size_t payload,
                                                  const std::string& private_key) {
  std::vector<Fixture> out;
  std::mt19937_64 rng(2024);
  auto random_bytes = [&](size_t n) {
    std::string s(n, '\0');
    for (auto& ch : s) ch = static_cast<char>(rng());
    return s;
  };
  for (const MixEntry& e : mix) {
    Fixture f;
    f.message = random_bytes(payload);
    if (IsKem(e.algorithm) || IsDsa(e.algorithm)) {
      KeyGenOp kg;
      kg.algorithm = e.algorithm;
      // The seed form's size is the registry row's (64 ML-KEM, 32 ML-DSA, 96 X25519MLKEM768...).
      kg.seed =
          random_bytes(pqcd::kernels::FindByApiValue(static_cast<int>(e.algorithm))->seed_bytes);
      auto kp = backend.RunSync(kg);
      if (!kp.ok())
        return absl::Status(kp.status().code(),
                            "fixture keygen: " + std::string(kp.status().message()));
      f.public_key = std::get<KeyPair>(*kp).public_key;
      f.private_key = private_key == "expanded" ? std::get<KeyPair>(*kp).private_key : kg.seed;
      if (private_key == "held" && (e.kind == Kind::kDecaps || e.kind == Kind::kSign)) {
        f.held_id = "pqc-load-" + std::to_string(getpid()) + "-" + std::to_string(out.size());
        if (absl::Status s = backend.Hold(e.algorithm, f.held_id, kg.seed); !s.ok()) {
          return absl::Status(s.code(),
                              "holding the key " + f.held_id + ": " + std::string(s.message()));
        }
      }
    }
    if (IsKem(e.algorithm)) {
      auto en = backend.RunSync(EncapsOp{e.algorithm, Key::Raw(f.public_key)});
      if (!en.ok())
        return absl::Status(en.status().code(),
                            "fixture encaps: " + std::string(en.status().message()));
      f.ciphertext = std::get<EncapsResult>(*en).ciphertext;
      f.shared_secret = std::get<EncapsResult>(*en).shared_secret;
    } else if (IsDsa(e.algorithm)) {
      SignOp s;
      s.algorithm = e.algorithm;
      s.key = Key::Raw(f.private_key);
      s.message = f.message;
      auto sg = backend.RunSync(s);
      if (!sg.ok())
        return absl::Status(sg.status().code(),
                            "fixture sign: " + std::string(sg.status().message()));
      f.signature = std::get<SignResult>(*sg).signature;
    }
    out.push_back(std::move(f));
  }
  return out;
}

Operation MakeOp(const MixEntry& e, const Fixture& f) {
  switch (e.kind) {
    case Kind::kKeyGen:
      return KeyGenOp{e.algorithm, {}, false, {}, {}};
    case Kind::kEncaps:
      return EncapsOp{e.algorithm, Key::Raw(f.public_key)};
    case Kind::kDecaps:
      return DecapsOp{e.algorithm,
                      f.held_id.empty() ? Key::Raw(f.private_key) : Key::Held(f.held_id),
                      f.ciphertext};
    case Kind::kSign: {
      SignOp s;
      s.algorithm = e.algorithm;
      s.key = f.held_id.empty() ? Key::Raw(f.private_key) : Key::Held(f.held_id);
      s.message = f.message;
      return s;
    }
    case Kind::kVerify: {
      VerifyOp v;
      v.algorithm = e.algorithm;
      v.key = Key::Raw(f.public_key);
      v.message = f.message;
      v.signature = f.signature;
      return v;
    }
    case Kind::kHash:
      break;
  }
  return HashOp{e.algorithm, f.message, 0};
}

std::string CodeName(int c) {
  if (c == kVerifyFailed) return "VERIFY_FAILED";
  if (c == kMismatch) return "MISMATCH";
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(c));
}

// Checks one operation's result; returns the error slot (0 = fine).
int Classify(const absl::StatusOr<Result>& r, const MixEntry& e, const Fixture& f) {
  if (!r.ok()) return static_cast<int>(r.status().code());
  if (e.kind == Kind::kVerify && !std::get<VerifyResult>(*r).valid) return kVerifyFailed;
  if (e.kind == Kind::kDecaps && std::get<DecapsResult>(*r).shared_secret != f.shared_secret) {
    return kMismatch;
  }
  return 0;
}

}  // namespace pqcd::load
