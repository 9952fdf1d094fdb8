// The memory backend (no --data-dir, no --key-store): nothing persists; the cache is the store.
#include "key_cache.h"

namespace pqcd::server::internal {
namespace {

class MemoryKeyBackend final : public KeyBackend {
 public:
  bool persistent() const override { return false; }
  KeyStoreHealth health() const override { return KeyStoreHealth{}; }  // "memory", up
  absl::StatusOr<std::string> AddVersion(const KeyRecord&) override { return std::string(); }
  absl::Status RemoveVersions(const std::string&, const std::string&,
                              const std::vector<uint32_t>&) override {
    return absl::OkStatus();
  }
  absl::Status PutKey(const KeyEntry&) override {
    return absl::UnimplementedError("a memory key store cannot be an import target");
  }
};

}  // namespace

std::unique_ptr<KeyBackend> MakeMemoryKeyBackend() {
  return std::make_unique<MemoryKeyBackend>();
}

}  // namespace pqcd::server::internal
