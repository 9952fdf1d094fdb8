// pqc-load's gRPC backend: the daemon through the client library.
#include <future>
#include <iostream>

#include "load_backends.h"

namespace pqcd::load {

using namespace pqcd::client;  // NOLINT
using nlohmann::json;

absl::StatusOr<Result> Backend::RunSync(Operation op) {
  std::promise<absl::StatusOr<Result>> p;
  Run(std::move(op), [&](absl::StatusOr<Result> r) { p.set_value(std::move(r)); });
  return p.get_future().get();
}

namespace {

class GrpcBackend final : public Backend {
 public:
  explicit GrpcBackend(std::unique_ptr<Client> c) : client_(std::move(c)) {}
  void Run(Operation op, Callback<Result> done) override {
    client_->RunAsync(std::move(op), std::move(done));
  }
  void RunBatch(std::vector<Operation> ops, Callback<BatchResults> done) override {
    client_->BatchAsync(std::move(ops), std::move(done));
  }
  bool SupportsStream() const override { return true; }
  absl::StatusOr<std::unique_ptr<Stream>> OpenStream(size_t inflight, size_t pack) override {
    StreamOptions o;
    o.max_inflight = inflight;
    if (pack > 0) o.max_pack = pack;
    return client_->OpenStream(o);
  }
  std::optional<StreamStats> BatchingStats() const override {
    if (!client_->options().batching.enabled) return std::nullopt;
    return client_->batching_stats();
  }
  absl::Status Hold(Algorithm algorithm, const std::string& key_id,
                    const std::string& private_key) override {
    ImportKeyOp op;
    op.algorithm = algorithm;
    op.key_id = key_id;
    op.private_key = private_key;
    return client_->ImportKey(op).status();
  }
  void Release(const std::string& key_id) override {
    if (auto d = client_->DeleteKey(key_id); !d.ok()) {
      std::cerr << "pqc-load: deleting the held key " << key_id << ": " << d.status() << '\n';
    }
  }

 private:
  std::unique_ptr<Client> client_;
};

}  // namespace

std::unique_ptr<Backend> MakeGrpcBackend(std::unique_ptr<Client> client) {
  return std::make_unique<GrpcBackend>(std::move(client));
}

}  // namespace pqcd::load
