// Conversions between the client's plain types and the generated pqc.v1 messages (internal).
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqc/v1/crypto.pb.h"
#include "pqc/v1/keys.pb.h"
#include "pqcd/client/types.h"

namespace pqcd::client::internal {

absl::Status FromGrpc(const grpc::Status& status);

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
