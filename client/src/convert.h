// Conversions between the client's plain types and the generated pqc.v1 messages (internal).
#pragma once

#include <grpcpp/support/status.h>

#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqc/v1/crypto.pb.h"
#include "pqc/v1/keys.pb.h"
#include "pqcd/client/client.h"
#include "pqcd/client/types.h"

namespace pqcd::client::internal {

absl::Status FromGrpc(const grpc::Status& status);

// The crypto operations, one row each: the RPC (pqc.v1.Crypto.<Rpc>, its <Rpc>Request and
// <Rpc>Response), the field of Operation and OperationResult that carries it, and the client's
// operation and result types. The conversions' declarations, OperationResult's dispatch, the
// unary calls and Run's dispatch (unary.cc) are written once over this table; what stays per
// operation is its types (types.h), its fields (convert.cc) and its methods (client.h).
#define PQCD_CLIENT_OPERATIONS(X)           \
  X(KeyGen, keygen, KeyGenOp, KeyPair)      \
  X(Encaps, encaps, EncapsOp, EncapsResult) \
  X(Decaps, decaps, DecapsOp, DecapsResult) \
  X(Sign, sign, SignOp, SignResult)         \
  X(Verify, verify, VerifyOp, VerifyResult) \
  X(Hash, hash, HashOp, HashResult)

// OperationTraits<Op>: the row of operation type Op.
template <class Op>
struct OperationTraits;

#define PQCD_OPERATION_ROW(Rpc, field, Op, ResultT)                               \
  void ToProto(const Op& op, pqc::v1::Rpc##Request* out);                         \
  ResultT FromProto(pqc::v1::Rpc##Response&& r);                                  \
  template <>                                                                     \
  struct OperationTraits<Op> {                                                    \
    using Request = pqc::v1::Rpc##Request;                                        \
    /* The field of an Operation message that carries it. */                      \
    static Request* Field(pqc::v1::Operation* p) { return p->mutable_##field(); } \
    static constexpr auto kCall = &Client::Rpc;                                   \
    static constexpr auto kCallAsync = &Client::Rpc##Async;                       \
  };
PQCD_CLIENT_OPERATIONS(PQCD_OPERATION_ROW)
#undef PQCD_OPERATION_ROW

// A row per alternative of Operation and Result: an operation added to types.h without its row
// stops here.
#define PQCD_OPERATION_COUNT(...) +1
static_assert(std::variant_size_v<Operation> == 0 PQCD_CLIENT_OPERATIONS(PQCD_OPERATION_COUNT) &&
                  std::variant_size_v<Result> == std::variant_size_v<Operation>,
              "PQCD_CLIENT_OPERATIONS lacks a row of Operation or Result");
#undef PQCD_OPERATION_COUNT

void ToProto(const Operation& op, pqc::v1::Operation* out);
void ToProto(const ImportKeyOp& op, pqc::v1::ImportKeyRequest* out);

KeyInfo FromProto(pqc::v1::KeyInfo&& r);
absl::StatusOr<Result> FromProto(pqc::v1::OperationResult&& r);

}  // namespace pqcd::client::internal
