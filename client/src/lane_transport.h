// The client's shared-memory lane (ClientOptions::lane): operations go to the daemon through
// libpqcd_lane (lane/include/pqcd_lane.h) instead of gRPC when the target is the daemon's Unix
// socket and the daemon offers lanes. Each lane is driven by one thread of its own, which submits
// the operations queued for it, takes their answers and runs their callbacks; a callback that
// submits again (a closed-loop caller) submits straight from that thread.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pqcd/client/client.h"

namespace pqcd::client::internal {

class LaneTransport {
 public:
  // Opens `lanes` lanes (of `slots` slots each; 0: the daemon's default) to the daemon whose gRPC
  // Unix socket is unix_path. An error says why not (the client then keeps to gRPC).
  static absl::StatusOr<std::unique_ptr<LaneTransport>> Open(const std::string& unix_path,
                                                             int lanes, uint32_t slots);
  // Operations still queued or in flight complete with CANCELLED.
  ~LaneTransport();
  LaneTransport(const LaneTransport&) = delete;
  LaneTransport& operator=(const LaneTransport&) = delete;

  // Takes the operation (and done) when a lane can carry it: false (nothing moved) when it does
  // not fit a slot or has what the lane format lacks (labels); it then goes by gRPC. done runs on
  // a lane thread with the daemon's answer, statuses as on gRPC.
  bool Submit(Operation& op, Callback<Result>& done, absl::Duration timeout);

  struct Impl;

 private:
  explicit LaneTransport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pqcd::client::internal
