// KeyStore's private state: the cache, the backend it was opened over, and the limits it
// enforces. Shared by key_store.cc and the files that implement the rest of KeyStore (paging.cc,
// import.cc, kek_rotation.cc). Internal to pqcd_keystore.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "key_cache.h"
#include "keystore/key_backend.h"
#include "keystore/key_store.h"

namespace pqcd::server {

struct KeyStore::Impl {
  explicit Impl(const KeyStoreOptions& options);
  ~Impl();  // stops the backend, then wipes the cache

  internal::KeyCache cache;
  std::unique_ptr<KeyBackend> backend;  // declared after the cache: it goes first

  const uint32_t max_keys_per_owner;
  const uint32_t max_versions_per_key;
  const size_t max_locked_bytes_per_owner;
  const size_t max_plain_bytes_per_owner;
  std::atomic<uint64_t> memlock_refusals{0};
  mutable std::atomic<uint64_t> quota_refusals{0};  // counted by const checks too

  // One change: holds write_mu from construction; Begin starts the backend's change, which is
  // rolled back at destruction unless committed.
  class Change {
   public:
    explicit Change(Impl& impl) : backend_(*impl.backend), lock_(impl.cache.write_mu) {}
    ~Change() {
      if (begun_ && !committed_) backend_.AbortChange();
    }
    absl::Status Begin() {
      absl::Status st = backend_.BeginChange();
      begun_ = st.ok();
      return st;
    }
    absl::Status Commit() {
      absl::Status st = backend_.CommitChange();
      committed_ = st.ok();
      return st;
    }

   private:
    KeyBackend& backend_;
    std::unique_lock<std::mutex> lock_;
    bool begun_ = false;
    bool committed_ = false;
  };

  // Whether e may take one more version (max_versions_per_key, version numbers left); a refusal
  // by the limit is counted. mu held by the caller.
  absl::Status RoomForVersion(const internal::KeyEntry& e) const;
  // Whether owner's versions have room for `rec` (not yet held): the locked bytes of its private
  // key and prepared form against max_locked_bytes_per_owner, and its ordinary bytes (public key,
  // labels, names) against max_plain_bytes_per_owner. The sums are taken over that owner's keys
  // only. A refusal is counted. Takes mu shared.
  absl::Status RoomForVersionBytes(const std::string& owner, const KeyRecord& rec) const;
  // The end of Create and AddVersion (the change begun): gives rec (all but its
  // key) private_key, refused unless it is locked in memory, its creation time and its prepared
  // form; checks owner's room for it (RoomForVersionBytes); has the backend make it durable,
  // commits the change and adds rec to the cache.
  absl::Status AddNewVersion(KeyRecord& rec, SecretBytes private_key, Change& change);
  // The record of owner/key_id, version 0 = newest (mu held shared or exclusively by the caller):
  // NOT_FOUND, or the backend's refusal to serve (UNAVAILABLE while a PostgreSQL store is past
  // its staleness limit).
  absl::StatusOr<const KeyRecord*> FindForUse(const std::string& owner, const std::string& key_id,
                                              uint32_t version) const;
};

}  // namespace pqcd::server
