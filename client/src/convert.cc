#include "convert.h"

#include <utility>

namespace pqcd::client {

absl::Status StatusFromCode(int code, std::string_view message) {
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > 16) code = static_cast<int>(absl::StatusCode::kUnknown);
  return absl::Status(static_cast<absl::StatusCode>(code),
                      absl::string_view(message.data(), message.size()));
}

namespace internal {
namespace {

pqc::v1::Algorithm Alg(Algorithm a) {
  return static_cast<pqc::v1::Algorithm>(static_cast<int>(a));
}
pqc::v1::PreHash Ph(PreHash p) {
  return static_cast<pqc::v1::PreHash>(static_cast<int>(p));
}

template <bool kPrivate, class Req>
void SetKey(const Key& key, Req* out) {
  if (key.ref) {
    out->mutable_key_ref()->set_key_id(key.ref->key_id);
    out->mutable_key_ref()->set_version(key.ref->version);
  } else if constexpr (kPrivate) {
    out->set_private_key(key.bytes);
  } else {
    out->set_public_key(key.bytes);
  }
}

}  // namespace

absl::Status FromGrpc(const grpc::Status& status) {
  return StatusFromCode(static_cast<int>(status.error_code()), status.error_message());
}

void ToProto(const KeyGenOp& op, pqc::v1::KeyGenRequest* out) {
  out->set_algorithm(Alg(op.algorithm));
  out->set_seed(op.seed);
  out->set_hold(op.hold);
  out->set_key_id(op.key_id);
  for (const auto& [k, v] : op.labels) (*out->mutable_labels())[k] = v;
}
void ToProto(const EncapsOp& op, pqc::v1::EncapsRequest* out) {
  out->set_algorithm(Alg(op.algorithm));
  SetKey</*kPrivate=*/false>(op.key, out);
}
void ToProto(const DecapsOp& op, pqc::v1::DecapsRequest* out) {
  out->set_algorithm(Alg(op.algorithm));
  SetKey</*kPrivate=*/true>(op.key, out);
  out->set_ciphertext(op.ciphertext);
}
void ToProto(const SignOp& op, pqc::v1::SignRequest* out) {
  out->set_algorithm(Alg(op.algorithm));
  SetKey</*kPrivate=*/true>(op.key, out);
  out->set_message(op.message);
  out->set_context(op.context);
  out->set_deterministic(op.deterministic);
  out->set_pre_hash(Ph(op.pre_hash));
  out->set_external_mu(op.external_mu);
}
void ToProto(const VerifyOp& op, pqc::v1::VerifyRequest* out) {
  out->set_algorithm(Alg(op.algorithm));
  SetKey</*kPrivate=*/false>(op.key, out);
  out->set_message(op.message);
  out->set_signature(op.signature);
  out->set_context(op.context);
  out->set_pre_hash(Ph(op.pre_hash));
  out->set_external_mu(op.external_mu);
}
void ToProto(const HashOp& op, pqc::v1::HashRequest* out) {
  out->set_algorithm(Alg(op.algorithm));
  out->set_data(op.data);
  out->set_output_length(op.output_length);
}
void ToProto(const Operation& op, pqc::v1::Operation* out) {
  std::visit(
      [out](const auto& o) { ToProto(o, OperationTraits<std::decay_t<decltype(o)>>::Field(out)); },
      op);
}
void ToProto(const ImportKeyOp& op, pqc::v1::ImportKeyRequest* out) {
  out->set_algorithm(Alg(op.algorithm));
  out->set_key_id(op.key_id);
  out->set_private_key(op.private_key);
  out->set_public_key(op.public_key);
  for (const auto& [k, v] : op.labels) (*out->mutable_labels())[k] = v;
  out->set_owner(op.owner);
}

KeyPair FromProto(pqc::v1::KeyGenResponse&& r) {
  KeyPair kp;
  kp.algorithm = static_cast<Algorithm>(r.algorithm());
  kp.public_key = std::move(*r.mutable_public_key());
  kp.private_key = std::move(*r.mutable_private_key());
  kp.seed = std::move(*r.mutable_seed());
  kp.key_id = std::move(*r.mutable_key_id());
  kp.key_version = r.key_version();
  return kp;
}
EncapsResult FromProto(pqc::v1::EncapsResponse&& r) {
  return EncapsResult{std::move(*r.mutable_ciphertext()), std::move(*r.mutable_shared_secret()),
                      r.key_version()};
}
DecapsResult FromProto(pqc::v1::DecapsResponse&& r) {
  return DecapsResult{std::move(*r.mutable_shared_secret())};
}
SignResult FromProto(pqc::v1::SignResponse&& r) {
  return SignResult{std::move(*r.mutable_signature()), r.key_version()};
}
VerifyResult FromProto(pqc::v1::VerifyResponse&& r) {
  return VerifyResult{r.valid()};
}
HashResult FromProto(pqc::v1::HashResponse&& r) {
  return HashResult{std::move(*r.mutable_digest())};
}

KeyInfo FromProto(pqc::v1::KeyInfo&& r) {
  KeyInfo k;
  k.key_id = std::move(*r.mutable_key_id());
  k.version = r.version();
  k.algorithm = static_cast<Algorithm>(r.algorithm());
  k.created = absl::FromUnixMillis(r.created_unix_ms());
  for (const auto& [key, value] : r.labels()) k.labels[key] = value;
  k.owner = std::move(*r.mutable_owner());
  k.public_key = std::move(*r.mutable_public_key());
  k.versions.assign(r.versions().begin(), r.versions().end());
  return k;
}

absl::StatusOr<Result> FromProto(pqc::v1::OperationResult&& r) {
  if (r.code() != 0) return StatusFromCode(r.code(), r.message());
#define PQCD_RESULT_FIELD(Rpc, field, Op, ResultT) \
  if (r.has_##field()) return Result(FromProto(std::move(*r.mutable_##field())));
  PQCD_CLIENT_OPERATIONS(PQCD_RESULT_FIELD)
#undef PQCD_RESULT_FIELD
  return absl::InternalError("the daemon answered OK without a result");
}

}  // namespace internal
}  // namespace pqcd::client
