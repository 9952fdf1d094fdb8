// pqc-load's backends: where its requests go. The daemon through the client library (styles
// unary, batch, stream, auto and lane: the Client's options pick the transport), or the engine
// in-process (--in-process, load_backend_engine.cc, in builds with the engine).
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pqcd/client/client.h"

namespace pqcd::load {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual void Run(client::Operation op, client::Callback<client::Result> done) = 0;
  virtual void RunBatch(std::vector<client::Operation> ops,
                        client::Callback<client::BatchResults> done) = 0;
  virtual bool SupportsStream() const { return false; }
  virtual absl::StatusOr<std::unique_ptr<client::Stream>> OpenStream(size_t /*inflight*/,
                                                                     size_t /*pack*/) {
    return absl::UnimplementedError("no streams");
  }
  // Messages of the batching client's shared streams (style auto), when there are any.
  virtual std::optional<client::StreamStats> BatchingStats() const { return std::nullopt; }
  // --private-key held: makes private_key (either form) a key the backend holds as key_id, and
  // lets it go again after the run.
  virtual absl::Status Hold(client::Algorithm algorithm, const std::string& key_id,
                            const std::string& private_key) = 0;
  virtual void Release(const std::string& key_id) = 0;
  // The backend's own keys of the report.
  virtual nlohmann::json Extra() { return nlohmann::json::object(); }

  absl::StatusOr<client::Result> RunSync(client::Operation op);
};

// The daemon through `client`.
std::unique_ptr<Backend> MakeGrpcBackend(std::unique_ptr<client::Client> client);

#ifdef PQCD_LOAD_WITH_ENGINE
inline constexpr bool kHaveEngineBackend = true;
// The engine in-process with `workers` workers (0: all cores).
absl::StatusOr<std::unique_ptr<Backend>> MakeEngineBackend(int workers);
#else
inline constexpr bool kHaveEngineBackend = false;
#endif

}  // namespace pqcd::load
