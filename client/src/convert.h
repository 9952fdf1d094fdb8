// Conversions between the client's plain types and the generated pqc.v1 messages (internal).
#pragma once

#include <grpcpp/support/status.h>

#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqc/v1/crypto.pb.h"
#include "pqc/v1/keys.pb.h"
#include "pqcd/client/types.h"

namespace pqcd::client::internal {

absl::Status FromGrpc(const grpc::Status& status);

// The field of an Operation message that carries an operation of kind Op.
template <class Op>
auto* OperationField(pqc::v1::Operation* p) {
  if constexpr (std::is_same_v<Op, KeyGenOp>) {
    return p->mutable_keygen();
  } else if constexpr (std::is_same_v<Op, EncapsOp>) {
    return p->mutable_encaps();
  } else if constexpr (std::is_same_v<Op, DecapsOp>) {
    return p->mutable_decaps();
  } else if constexpr (std::is_same_v<Op, SignOp>) {
    return p->mutable_sign();
  } else if constexpr (std::is_same_v<Op, VerifyOp>) {
    return p->mutable_verify();
  } else {
    static_assert(std::is_same_v<Op, HashOp>);
    return p->mutable_hash();
  }
}

void ToProto(const KeyGenOp& op, pqc::v1::KeyGenRequest* out);
void ToProto(const EncapsOp& op, pqc::v1::EncapsRequest* out);
void ToProto(const DecapsOp& op, pqc::v1::DecapsRequest* out);
void ToProto(const SignOp& op, pqc::v1::SignRequest* out);
void ToProto(const VerifyOp& op, pqc::v1::VerifyRequest* out);
void ToProto(const HashOp& op, pqc::v1::HashRequest* out);
void ToProto(const Operation& op, pqc::v1::Operation* out);
void ToProto(const ImportKeyOp& op, pqc::v1::ImportKeyRequest* out);

KeyPair FromProto(pqc::v1::KeyGenResponse&& r);
EncapsResult FromProto(pqc::v1::EncapsResponse&& r);
DecapsResult FromProto(pqc::v1::DecapsResponse&& r);
SignResult FromProto(pqc::v1::SignResponse&& r);
VerifyResult FromProto(pqc::v1::VerifyResponse&& r);
HashResult FromProto(pqc::v1::HashResponse&& r);
KeyInfo FromProto(pqc::v1::KeyInfo&& r);
absl::StatusOr<Result> FromProto(pqc::v1::OperationResult&& r);

}  // namespace pqcd::client::internal
