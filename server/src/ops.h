// Internal: preparing one crypto operation for the engine (validation, key resolution, job setup)
// and finishing it (response fix-ups, storing a held key). Shared by Crypto's unary RPCs, Batch and
// Stream.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "grpcpp/server_context.h"
#include "keystore/key_store.h"
#include "keystore/secret_bytes.h"
#include "pqc/v1/crypto.pb.h"
#include "pqc/v1/keys.pb.h"
#include "pqcd/engine/engine.h"
#include "pqcd/engine/job.h"
#include "pqcd/server/algorithms.h"
#include "pqcd/server/identity.h"
#include "pqcd/server/service_context.h"

namespace pqcd::server {

// One operation in flight: its engine job, the key material it uses and what to do after it ran.
struct OpState {
  ServiceContext* ctx = nullptr;
  engine::Job job;
  std::shared_ptr<const SecretBytes> held_private;  // keeps a held private key alive
  bool held_prepared = false;                       // held_private is the key's prepared form
  std::vector<uint8_t> held_public;                 // the public key of a held key
  SecretBytes gen_private;                          // held KeyGen: expanded private key (dropped)
  SecretBytes gen_seed;                             // held KeyGen: the seed that is stored
  // Run on the worker after an OK job (cheap response fix-ups).
  absl::AnyInvocable<void()> post;
  // Held KeyGen: stores the key on the aux runner after an OK job.
  struct Store {
    std::string key_id;
    int algorithm = 0;
    std::map<std::string, std::string> labels;
    std::string owner;
    pqc::v1::KeyGenResponse* response = nullptr;
    pqc::v1::KeyFormat key_format = pqc::v1::KEY_FORMAT_RAW;  // of the answer's public key
  };
  std::unique_ptr<Store> store;
  // Called exactly once with the final status. May destroy this OpState.
  absl::AnyInvocable<void(absl::Status)> done;

  // Engine completion -> post / store -> done.
  void Complete(absl::Status status);
  // Sets job.on_complete and the deadline; the job is then ready for Engine::SubmitBurst.
  void Arm(std::chrono::system_clock::time_point deadline);
  // Arm, then Engine::Submit (one job on its own; the fuzz target drives ops this way).
  void Submit(std::chrono::system_clock::time_point deadline);
};

// Key generation is an engine job (the only key-generation path): KeyGen, held KeyGen and
// Keys.Rotate set it up with this. seed empty: fresh randomness (seed_out, if non-empty, gets it).
void SetKeyGenJob(const AlgorithmDescriptor& algorithm, kernels::Bytes seed,
                  kernels::MutBytes public_key, kernels::MutBytes private_key,
                  kernels::MutBytes seed_out, engine::Job* job);
// Submits one job and waits for its completion (key management and start-up only: never on an
// engine worker or a gRPC callback thread).
absl::Status RunJobAndWait(engine::Engine& engine, engine::Job& job);

// The private keys given in one Batch or one packed Stream message: a key that the message carries
// again (the same algorithm and bytes as the operation before it) is prepared once, at its second
// sighting (the registry's prepare_private_key: expansion and checks), and the rest of the run
// of operations uses that form. Lives for the preparation loop of one call or message; the views
// it keeps point into keys that the OpStates prepared so far keep alive.
class GivenKeys {
 public:
  // own_copies: keep a copy of the last key given instead of a view of it, for callers whose
  // request memory is reused or rewritten before the next Find (the lanes: a slot's request
  // message serves its next request, and a GivenKeys lives as long as the lane). The copy is
  // wiped when it is replaced and when the GivenKeys goes.
  explicit GivenKeys(bool own_copies = false) : own_copies_(own_copies) {}
  ~GivenKeys();
  GivenKeys(const GivenKeys&) = delete;
  GivenKeys& operator=(const GivenKeys&) = delete;

  // The prepared form of `key` when it repeats the previous given key, else null (then the key is
  // used as given; also when preparing it failed: each operation reports its own error). keeper:
  // the buffer key points into when it is not the request's (a decoded PKCS#8 key), kept alive
  // for the next comparison.
  std::shared_ptr<const SecretBytes> Find(const AlgorithmDescriptor& algorithm, kernels::Bytes key,
                                          std::shared_ptr<const SecretBytes> keeper);

 private:
  const AlgorithmDescriptor* last_algorithm_ = nullptr;
  kernels::Bytes last_key_;
  std::shared_ptr<const SecretBytes> last_keeper_;
  std::shared_ptr<const SecretBytes> prepared_;
  bool failed_ = false;
  const bool own_copies_;
  std::vector<uint8_t> owned_;  // own_copies_: the last key given
};

// Validate + resolve + set up the job of one request (KeyGen, Encaps, Decaps, Sign, Verify, Hash,
// each with its response type). A non-OK status means the op must not be submitted. Defined in
// ops.cc and instantiated there for each request type, so that a new one changes ops.cc only.
template <class Req, class Resp>
absl::Status Prepare(ServiceContext* ctx, const Caller& caller, const Req& req, Resp* resp,
                     OpState* st);
// Any of the above, for Batch and Stream items. given (Batch, packed Stream): see GivenKeys.
// The engine's tenant of a caller's jobs (Job::tenant): its identity, hashed. Slow jobs are
// admitted and served fairly per tenant (EngineOptions::slow_job).
uint32_t TenantOf(const Caller& caller);

absl::Status PrepareOperation(ServiceContext* ctx, const Caller& caller,
                              const pqc::v1::Operation& op, pqc::v1::OperationResult* result,
                              OpState* st, GivenKeys* given = nullptr);
// An upper bound of the bytes the answer to a request (any type Prepare takes, or a
// pqc::v1::Operation) takes in a response (cheap: no validation). Batch and Stream budget their
// answers with it before anything is allocated or computed, and every call charges it to the
// memory account (bounds.h). Instantiated in ops.cc, as Prepare.
template <class Req>
size_t AnswerBytesBound(const Req& req);
// Writes a non-OK status into an OperationResult (clearing any partial result).
void SetResultStatus(pqc::v1::OperationResult* result, const absl::Status& status);

// The answer to every call that arrives while the daemon drains.
const grpc::Status& DrainingStatus();
// What a client whose call was cancelled saw. The client's deadline fires before the daemon's
// (the daemon counts the timeout from when the call arrived), and its cancellation can arrive
// first: a cancellation within 100 ms of the deadline is taken as the deadline.
grpc::StatusCode CancelCode(const grpc::ServerContextBase& context);

// Key ids: letters, digits, '-', '_', '.', 1..128 characters.
absl::Status ValidateKeyId(const std::string& key_id, const char* field);
std::string NewKeyId();
// The owner whose keys a key-management request addresses: the caller's own (requested empty or
// the caller), or, for admins only, the typed identity named in the request's `owner`.
absl::StatusOr<std::string> ManagedOwner(const Caller& caller, const std::string& requested);
// Labels of a held key (KeyGen, Import): at most 64, keys 1..256 bytes, values up to 1024 bytes.
absl::Status ValidateLabels(const google::protobuf::Map<std::string, std::string>& labels);
// Fills a KeyInfo from a record (and the list of versions).
void FillKeyInfo(const KeyRecord& rec, const std::vector<uint32_t>& versions,
                 pqc::v1::KeyInfo* info);

}  // namespace pqcd::server
