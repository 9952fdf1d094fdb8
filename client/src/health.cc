// Health checks (grpc.health.v1) through the generic stub, and waiting for a daemon to serve.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client_impl.h"
#include "pqcd/client/client.h"

namespace pqcd::client {

namespace {

// grpc.health.v1 messages, encoded by hand (two fields) so that no health.proto is linked in.
std::string EncodeHealthRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;
  out.push_back(0x0a);
  size_t n = service.size();
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  out += service;
  return out;
}

absl::StatusOr<HealthStatus> DecodeHealthResponse(absl::string_view in) {
  size_t pos = 0;
  auto varint = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64 && pos < in.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(in[pos++]);
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  };
  int status = 0;
  while (pos < in.size()) {
    uint64_t tag, v;
    if (!varint(&tag)) return absl::DataLossError("bad health response");
    switch (tag & 7) {
      case 0:
        if (!varint(&v)) return absl::DataLossError("bad health response");
        if ((tag >> 3) == 1) status = static_cast<int>(v);
        break;
      case 2:
        if (!varint(&v) || v > in.size() - pos) return absl::DataLossError("bad health response");
        pos += v;
        break;
      case 1:
        pos += 8;
        break;
      case 5:
        pos += 4;
        break;
      default:
        return absl::DataLossError("bad health response");
    }
  }
  switch (status) {
    case 1:
      return HealthStatus::kServing;
    case 2:
      return HealthStatus::kNotServing;
    case 3:
      return HealthStatus::kServiceUnknown;
    default:
      return HealthStatus::kUnknown;
  }
}

}  // namespace

absl::StatusOr<HealthStatus> Client::Health(const std::string& service, const CallOptions& call) {
  const std::string encoded = EncodeHealthRequest(service);
  std::string answer;
  absl::Status s = impl_->Unary(call, [&](Impl::Channel& ch, grpc::ClientContext& ctx) {
    grpc::Slice slice(encoded);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    absl::Notification finished;
    grpc::Status status;
    ch.generic->UnaryCall(&ctx, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                          &response, [&](grpc::Status st) {
                            status = std::move(st);
                            finished.Notify();
                          });
    finished.WaitForNotification();
    if (status.ok()) {
      std::vector<grpc::Slice> slices;
      (void)response.Dump(&slices);
      answer.clear();
      for (const auto& sl : slices) {
        answer.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
      }
    }
    return status;
  });
  if (!s.ok()) return s;
  return DecodeHealthResponse(answer);
}

absl::Status Client::WaitForServing(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last = absl::DeadlineExceededError("the daemon did not become SERVING in time");
  while (absl::Now() < deadline) {
    CallOptions call;
    call.timeout = std::min(absl::Seconds(1), deadline - absl::Now());
    call.wait_for_ready = true;
    auto h = Health("", call);
    if (h.ok() && *h == HealthStatus::kServing) return absl::OkStatus();
    if (!h.ok()) {
      last = h.status();
    } else {
      last = absl::UnavailableError(absl::StrCat("health is ", std::string(HealthStatusName(*h))));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return last;
}

}  // namespace pqcd::client
