// Conversions between the client's plain types and the generated pqc.v1 messages (internal).
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>
#include <type_traits>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqc/v1/crypto.pb.h"
#include "pqc/v1/keys.pb.h"
#include "pqcd/client/client.h"
#include "pqcd/client/types.h"

namespace pqcd::client::internal {

absl::Status FromGrpc(const grpc::Status& status);

// OperationTraits<Op>: operation type Op's row of PQCD_CLIENT_OPERATIONS (pqcd/client/types.h),
// which the conversions' declarations, OperationResult's dispatch (convert.cc), the unary calls
// and Run's dispatch (unary.cc) are written over.
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

// The index of T among the alternatives of a variant (their count when it is none of them).
template <class T, class... Ts>
constexpr size_t IndexOf(const std::variant<Ts...>* /*unused*/) {
  size_t i = 0;
  const bool found = ((std::is_same_v<T, Ts> || (++i, false)) || ...);
  return found ? i : sizeof...(Ts);
}
// Row i of the table is alternative i of Operation and of Result (the lanes' Decode relies on the
// order): an operation added to one and not the other, or out of order, stops the build here.
constexpr bool RowsAreTheVariants() {
  size_t i = 0;
  bool ok = true;
#define PQCD_OPERATION_CHECK(Rpc, field, Op, ResultT)                    \
  ok = ok && IndexOf<Op>(static_cast<const Operation*>(nullptr)) == i && \
       IndexOf<ResultT>(static_cast<const Result*>(nullptr)) == i;       \
  ++i;
  PQCD_CLIENT_OPERATIONS(PQCD_OPERATION_CHECK)
#undef PQCD_OPERATION_CHECK
  return ok && i == std::variant_size_v<Operation> && i == std::variant_size_v<Result>;
}
static_assert(RowsAreTheVariants(),
              "PQCD_CLIENT_OPERATIONS and the Operation / Result variants differ");

void ToProto(const Operation& op, pqc::v1::Operation* out);
void ToProto(const ImportKeyOp& op, pqc::v1::ImportKeyRequest* out);

KeyInfo FromProto(pqc::v1::KeyInfo&& r);
absl::StatusOr<Result> FromProto(pqc::v1::OperationResult&& r);

}  // namespace pqcd::client::internal
