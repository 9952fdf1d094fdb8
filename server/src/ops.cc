#include "ops.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>

#include "absl/strings/str_cat.h"
#include "audit.h"
#include "keystore/record_codec.h"
#include "pqcd/engine/engine.h"
#include "pqcd/kernels/random.h"
#include "pqcd/server/algorithms.h"

namespace pqcd::server {
namespace {

using absl::InvalidArgumentError;
using absl::StrCat;
using kernels::Bytes;
using kernels::MutBytes;

Bytes View(const std::string& s) {
  return Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
Bytes View(const std::vector<uint8_t>& v) {
  return Bytes(v.data(), v.size());
}
Bytes View(const SecretBytes& s) {
  return Bytes(s.data(), s.size());
}
MutBytes Resize(std::string* s, size_t n) {
  s->resize(n);
  return MutBytes(reinterpret_cast<uint8_t*>(s->data()), n);
}

absl::Status CheckFieldSize(ServiceContext* ctx, const std::string& field, const char* name) {
  if (field.size() > ctx->config->max_field_bytes) {
    return InvalidArgumentError(StrCat(name, ": at most ", ctx->config->max_field_bytes,
                                       " bytes (--max-field-bytes), got ", field.size()));
  }
  return absl::OkStatus();
}

// Resolves a held key for `caller`; checks its algorithm against the request's.
// want_public_key: Encaps and Verify (the private key is enough for Decaps and Sign).
absl::StatusOr<HeldKeyUse> ResolveKey(ServiceContext* ctx, const Caller& caller,
                                      const pqc::v1::KeyRef& ref, int* algorithm, Family family,
                                      const char* rpc, bool want_public_key) {
  if (!caller.may_hold_keys) {
    return absl::PermissionDeniedError("key_ref: " + HeldKeysRefusal(caller));
  }
  if (absl::Status s = ValidateKeyId(ref.key_id(), "key_ref.key_id"); !s.ok()) return s;
  // Owners use their keys; another identity's key only where the daemon grants it
  // (--allow-admin-key-use, admins), and every such use is audited.
  const std::string& owner = ref.owner().empty() ? caller.identity : ref.owner();
  const bool foreign = owner != caller.identity;
  if (foreign && !MayUseKey(caller, owner, ctx->identity_policy)) {
    return absl::PermissionDeniedError(
        caller.admin ? "key_ref.owner: admins manage other identities' keys but use them only when "
                       "pqcd runs with --allow-admin-key-use"
                     : "key_ref.owner: only the owner may use a held key");
  }
  auto rec = ctx->keys->Use(owner, ref.key_id(), ref.version(), want_public_key);
  if (!rec.ok()) {
    if (rec.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(ref.version() == 0 ? StrCat("key_ref: no key '", ref.key_id(), "'")
                                                    : StrCat("key_ref: no key '", ref.key_id(),
                                                             "' version ", ref.version()));
    }
    return rec.status();
  }
  if (*algorithm == pqc::v1::ALGORITHM_UNSPECIFIED) *algorithm = rec->algorithm;
  if (rec->algorithm != *algorithm) {
    return InvalidArgumentError(StrCat("algorithm: key '", ref.key_id(), "' is ",
                                       AlgorithmLabel(rec->algorithm), ", the request says ",
                                       AlgorithmLabel(*algorithm)));
  }
  const AlgorithmDescriptor* d = LookupAlgorithm(*algorithm);
  if (d == nullptr || d->family() != family) {
    return InvalidArgumentError(StrCat("key_ref: key '", ref.key_id(), "' (",
                                       AlgorithmLabel(rec->algorithm), ") cannot be used for ",
                                       rpc));
  }
  if ((foreign || ctx->identity_policy.audit_key_use) && ctx->key_use != nullptr) {
    ctx->key_use->Record(caller.identity, owner, ref.key_id(), rec->version, rpc);
  }
  return rec;
}

}  // namespace

void OpState::Complete(absl::Status status) {
  if (status.ok() && post) post();
  if (status.ok() && store) {
    // Stored on the bounded key-management queue (--key-queue); refused when it is full.
    const bool queued = ctx->key_tasks->TryPost([this] {
      Store& s = *store;
      // A caller that has given up (deadline passed, call cancelled) would be told the call
      // failed: nothing is stored for it (the key-management queue can be slow to reach this).
      if (job.cancelled() || engine::Job::Clock::now() >= job.deadline) {
        auto d = std::move(done);
        d(absl::DeadlineExceededError(
            "the call's deadline passed (or it was cancelled) before the key could be stored; "
            "nothing was stored"));
        return;
      }
      auto rec = ctx->keys->Create(
          s.owner, s.key_id, s.algorithm,
          std::vector<uint8_t>(s.response->public_key().begin(), s.response->public_key().end()),
          std::move(gen_seed), s.labels);
      ctx->Audit(s.owner, "create", s.owner, s.key_id, rec.ok() ? rec->version : 0,
                 AlgorithmLabel(s.algorithm), rec.status());
      absl::Status result = rec.status();
      if (rec.ok()) {
        s.response->set_key_id(rec->key_id);
        s.response->set_key_version(rec->version);
        s.response->clear_private_key();
        s.response->clear_seed();
        if (s.key_format != pqc::v1::KEY_FORMAT_RAW) {
          if (const AlgorithmDescriptor* d = LookupAlgorithm(s.algorithm); d != nullptr) {
            EncodeAnswerKeys(*d, s.key_format, s.response->mutable_public_key(), nullptr, {})
                .IgnoreError();  // checked before the job
          }
        }
      }
      auto d = std::move(done);
      d(result);
    });
    if (!queued) {
      auto d = std::move(done);
      d(absl::ResourceExhaustedError(
          StrCat("key management is busy: ", ctx->config->key_queue,
                 " requests already queued (--key-queue); the key was not stored, retry later")));
    }
    return;
  }
  auto d = std::move(done);
  d(status);
}

void OpState::Arm(std::chrono::system_clock::time_point deadline) {
  job.deadline = engine::SteadyDeadline(deadline);
  job.on_complete = [this](engine::Job&, absl::Status status) { Complete(std::move(status)); };
}

void OpState::Submit(std::chrono::system_clock::time_point deadline) {
  Arm(deadline);
  ctx->engine->Submit(&job);
}

const grpc::Status& DrainingStatus() {
  static const grpc::Status s(grpc::StatusCode::UNAVAILABLE, "pqcd is draining (shutting down)");
  return s;
}

grpc::StatusCode CancelCode(const grpc::ServerContextBase& context) {
  return context.deadline() <= std::chrono::system_clock::now() + std::chrono::milliseconds(100)
             ? grpc::StatusCode::DEADLINE_EXCEEDED
             : grpc::StatusCode::CANCELLED;
}

absl::Status ValidateKeyId(const std::string& key_id, const char* field) {
  // The store's own rule (internal::IsValidKeyId), checked here before any work (key generation
  // included) so that the store never refuses an id after it; the message names the field.
  if (internal::IsValidKeyId(key_id)) return absl::OkStatus();
  if (key_id.empty() || key_id.size() > internal::kMaxKeyIdLength) {
    return InvalidArgumentError(
        StrCat(field, ": 1 to ", internal::kMaxKeyIdLength, " characters, got ", key_id.size()));
  }
  if (key_id[0] == '.') return InvalidArgumentError(StrCat(field, ": must not start with '.'"));
  return InvalidArgumentError(StrCat(field, ": only letters, digits, '-', '_' and '.'"));
}

std::string NewKeyId() {
  uint8_t r[12];
  if (!kernels::OsRandom().Generate(MutBytes(r, sizeof(r))).ok()) {
    static std::atomic<uint64_t> counter{0};
    return StrCat("k-", std::chrono::system_clock::now().time_since_epoch().count(), "-",
                  counter++);
  }
  std::string id = "k-";
  char hex[3];
  for (uint8_t b : r) {
    std::snprintf(hex, sizeof(hex), "%02x", b);
    id += hex;
  }
  return id;
}

void FillKeyInfo(const KeyRecord& rec, const std::vector<uint32_t>& versions,
                 pqc::v1::KeyInfo* info) {
  info->set_key_id(rec.key_id);
  info->set_version(rec.version);
  info->set_algorithm(static_cast<pqc::v1::Algorithm>(rec.algorithm));
  info->set_created_unix_ms(rec.created_unix_ms);
  for (const auto& [k, v] : rec.labels) (*info->mutable_labels())[k] = v;
  info->set_owner(rec.owner);
  info->set_public_key(std::string(rec.public_key.begin(), rec.public_key.end()));
  for (uint32_t v : versions) info->add_versions(v);
}

void SetResultStatus(pqc::v1::OperationResult* result, const absl::Status& status) {
  result->set_code(static_cast<int32_t>(status.code()));
  result->set_message(std::string(status.message()));
  if (!status.ok()) result->clear_result();
}

absl::StatusOr<std::string> ManagedOwner(const Caller& caller, const std::string& requested) {
  if (requested.empty() || requested == caller.identity) return caller.identity;
  if (!caller.admin) {
    return absl::PermissionDeniedError(
        "owner: only --admin identities manage other identities' keys (leave owner empty for your "
        "own)");
  }
  // Keys held by anonymous callers (--allow-insecure-tcp) are managed by naming "anonymous".
  if (requested == "anonymous") return requested;
  if (absl::Status s = ValidateTypedIdentity(requested); !s.ok()) {
    return InvalidArgumentError(StrCat("owner: ", s.message()));
  }
  return requested;
}

absl::Status ValidateLabels(const google::protobuf::Map<std::string, std::string>& labels) {
  if (labels.size() > 64) {
    return InvalidArgumentError(StrCat("labels: at most 64 per key, got ", labels.size()));
  }
  for (const auto& [k, v] : labels) {
    if (k.empty() || k.size() > 256 || v.size() > 1024) {
      return InvalidArgumentError("labels: keys 1..256 bytes, values up to 1024 bytes");
    }
  }
  return absl::OkStatus();
}

void SetKeyGenJob(const AlgorithmDescriptor& algorithm, Bytes seed, MutBytes public_key,
                  MutBytes private_key, MutBytes seed_out, engine::Job* job) {
  // The two families' key-generation items have the same shape.
  if (algorithm.family() == Family::kKem) {
    job->Set<kernels::KemKeyGenItem>(algorithm.id()) = {
        seed, public_key, private_key, seed_out, {}};
  } else {
    job->Set<kernels::DsaKeyGenItem>(algorithm.id()) = {
        seed, public_key, private_key, seed_out, {}};
  }
}

absl::Status RunJobAndWait(engine::Engine& engine, engine::Job& job) {
  std::promise<absl::Status> done;
  std::future<absl::Status> result = done.get_future();
  job.on_complete = [&done](engine::Job&, absl::Status status) { done.set_value(status); };
  engine.Submit(&job);
  return result.get();
}

namespace {

// One PrepareRequest and one AnswerBound per request type: Prepare, AnswerBytesBound (ops.h: their
// instantiations at the end of this file) and PrepareOperation pick theirs by overload.
// given: see GivenKeys (only Decaps and Sign take keys that a Batch or Stream may repeat).

absl::Status PrepareRequest(ServiceContext* ctx, const Caller& caller,
                            const pqc::v1::KeyGenRequest& req, pqc::v1::KeyGenResponse* resp,
                            OpState* st, GivenKeys* /*given*/) {
  st->ctx = ctx;
  const AlgorithmDescriptor* info = LookupAlgorithm(req.algorithm());
  if (info == nullptr || info->family() == Family::kHash) {
    return InvalidArgumentError(StrCat("algorithm: KeyGen needs a KEM or signature algorithm, got ",
                                       AlgorithmLabel(req.algorithm())));
  }
  if (absl::Status s = CheckSeedSize(*info, req.seed().size(), "seed"); !s.ok()) return s;
  const kernels::AlgorithmFacts& f = *info->facts;
  if (!req.hold() && (!req.key_id().empty() || !req.labels().empty())) {
    return InvalidArgumentError("key_id/labels: only with hold = true");
  }
  const pqc::v1::KeyFormat key_format = req.key_format();
  if (key_format != pqc::v1::KEY_FORMAT_RAW) {
    // Validated before the job runs: the re-encoding after it cannot fail.
    std::string probe(f.public_key_bytes, '\0');
    if (absl::Status s = EncodeAnswerKeys(*info, key_format, &probe, nullptr, {}); !s.ok()) {
      return InvalidArgumentError(StrCat("key_format: ", s.message()));
    }
  }
  resp->set_algorithm(req.algorithm());
  const Bytes seed = View(req.seed());
  const MutBytes public_key = Resize(resp->mutable_public_key(), f.public_key_bytes);
  MutBytes private_key, seed_out;
  if (req.hold()) {
    if (!caller.may_hold_keys) {
      return absl::PermissionDeniedError("hold: " + HeldKeysRefusal(caller));
    }
    std::string key_id = req.key_id().empty() ? NewKeyId() : req.key_id();
    if (absl::Status s = ValidateKeyId(key_id, "key_id"); !s.ok()) return s;
    if (!ctx->keys->Versions(caller.identity, key_id).empty()) {
      return absl::AlreadyExistsError(StrCat("key_id: '", key_id, "' already exists"));
    }
    if (absl::Status s = ValidateLabels(req.labels()); !s.ok()) return s;
    st->gen_private = SecretBytes(f.private_key_bytes);
    private_key = MutBytes(st->gen_private.data(), st->gen_private.size());
    if (req.seed().empty()) {
      st->gen_seed = SecretBytes(f.seed_bytes);
      seed_out = MutBytes(st->gen_seed.data(), st->gen_seed.size());
    } else {
      st->gen_seed = SecretBytes(seed.data(), seed.size());
    }
    st->store = std::make_unique<OpState::Store>();
    st->store->key_id = key_id;
    st->store->algorithm = req.algorithm();
    st->store->labels.insert(req.labels().begin(), req.labels().end());
    st->store->owner = caller.identity;
    st->store->response = resp;
    st->store->key_format = key_format;
  } else {
    private_key = Resize(resp->mutable_private_key(), f.private_key_bytes);
    if (req.seed().empty()) {
      seed_out = Resize(resp->mutable_seed(), f.seed_bytes);
    } else {
      resp->set_seed(req.seed());
    }
  }
  SetKeyGenJob(*info, seed, public_key, private_key, seed_out, &st->job);
  if (key_format != pqc::v1::KEY_FORMAT_RAW && !req.hold()) {
    // SubjectPublicKeyInfo and PKCS#8 in the seed form (docs/encodings.md); the seed stays raw.
    st->post = [info, key_format, resp] {
      EncodeAnswerKeys(*info, key_format, resp->mutable_public_key(), resp->mutable_private_key(),
                       View(resp->seed()))
          .IgnoreError();  // sizes and format were checked before the job
    };
  }
  return absl::OkStatus();
}

// The key a request names: the held key behind key_ref (its public or private half kept alive in
// st until the job completes) or the bytes given in the request after their length check.
// *version gets the held key's version.
// The key of a job; for a private key, st->held_prepared says whether it is a prepared form.
struct JobKey {
  const AlgorithmDescriptor* algorithm;
  Bytes key;
};
template <bool kPrivate, class Req>
absl::StatusOr<JobKey> ResolveJobKey(ServiceContext* ctx, const Caller& caller, const Req& req,
                                     Family family, const char* rpc, OpState* st,
                                     uint32_t* version = nullptr, GivenKeys* given = nullptr) {
  int algorithm = req.algorithm();
  if (req.has_key_ref()) {
    auto rec = ResolveKey(ctx, caller, req.key_ref(), &algorithm, family, rpc, !kPrivate);
    if (!rec.ok()) return rec.status();
    if (version != nullptr) *version = rec->version;
    if constexpr (kPrivate) {
      // The prepared form when the store has one: no expansion or check per use.
      st->held_private = rec->prepared != nullptr ? rec->prepared : rec->private_key;
      st->held_prepared = rec->prepared != nullptr;
    } else {
      st->held_public = std::move(rec->public_key);
    }
  }
  auto info = RequireFamily(algorithm, family, rpc);
  if (!info.ok()) return info.status();
  if constexpr (kPrivate) {
    if (req.has_key_ref()) return JobKey{*info, View(*st->held_private)};
    // Raw (a size check), or PKCS#8 DER/PEM decoded into a buffer the OpState keeps alive.
    SecretBytes decoded;
    auto key = ResolvePrivateKey(**info, View(req.private_key()), "private_key", &decoded);
    if (!key.ok()) return key.status();
    Bytes view = *key;
    if (!decoded.empty()) {
      auto held = std::make_shared<SecretBytes>(std::move(decoded));
      st->held_private = held;
      view = View(*held);
    }
    if (given != nullptr) {
      if (auto prepared = given->Find(**info, view, st->held_private)) {
        st->held_private = std::move(prepared);
        st->held_prepared = true;
        return JobKey{*info, View(*st->held_private)};
      }
    }
    return JobKey{*info, view};
  } else {
    if (req.has_key_ref()) return JobKey{*info, View(st->held_public)};
    // Raw (a size check), or a SubjectPublicKeyInfo DER/PEM decoded into st->held_public.
    auto key = ResolvePublicKey(**info, View(req.public_key()), "public_key", &st->held_public);
    if (!key.ok()) return key.status();
    return JobKey{*info, *key};
  }
}

}  // namespace

GivenKeys::~GivenKeys() {
  if (!owned_.empty()) explicit_bzero(owned_.data(), owned_.size());
}

std::shared_ptr<const SecretBytes> GivenKeys::Find(const AlgorithmDescriptor& algorithm, Bytes key,
                                                   std::shared_ptr<const SecretBytes> keeper) {
  if (last_algorithm_ != &algorithm || !kernels::SameSecretBytes(last_key_, key)) {
    last_algorithm_ = &algorithm;
    if (own_copies_) {
      if (!owned_.empty()) explicit_bzero(owned_.data(), owned_.size());
      owned_.assign(key.begin(), key.end());
      last_key_ = Bytes(owned_.data(), owned_.size());
    } else {
      last_key_ = key;
      last_keeper_ = std::move(keeper);
    }
    prepared_.reset();
    failed_ = false;
    return nullptr;
  }
  if (prepared_ == nullptr && !failed_) {
    auto p = PreparePrivateKey(algorithm, key);
    if (p.ok() && !p->empty()) {
      prepared_ = std::make_shared<const SecretBytes>(std::move(*p));
    } else {
      failed_ = true;  // each operation reports its own error, as without this
    }
  }
  return prepared_;
}

namespace {

absl::Status PrepareRequest(ServiceContext* ctx, const Caller& caller,
                            const pqc::v1::EncapsRequest& req, pqc::v1::EncapsResponse* resp,
                            OpState* st, GivenKeys* /*given*/) {
  st->ctx = ctx;
  uint32_t version = 0;
  auto k = ResolveJobKey<false>(ctx, caller, req, Family::kKem, "Encaps", st, &version);
  if (!k.ok()) return k.status();
  if (req.has_key_ref()) resp->set_key_version(version);
  const kernels::AlgorithmFacts& f = *k->algorithm->facts;
  auto& item = st->job.Set<kernels::KemEncapsItem>(f.id);
  item.ek = k->key;
  item.ct = Resize(resp->mutable_ciphertext(), f.ciphertext_bytes);
  item.ss = Resize(resp->mutable_shared_secret(), f.secret_bytes);
  return absl::OkStatus();
}

absl::Status PrepareRequest(ServiceContext* ctx, const Caller& caller,
                            const pqc::v1::DecapsRequest& req, pqc::v1::DecapsResponse* resp,
                            OpState* st, GivenKeys* given) {
  st->ctx = ctx;
  auto k = ResolveJobKey<true>(ctx, caller, req, Family::kKem, "Decaps", st, nullptr, given);
  if (!k.ok()) return k.status();
  if (absl::Status s = CheckCiphertextSize(*k->algorithm, req.ciphertext().size(), "ciphertext");
      !s.ok()) {
    return s;
  }
  const kernels::AlgorithmFacts& f = *k->algorithm->facts;
  auto& item = st->job.Set<kernels::KemDecapsItem>(f.id);
  item.dk = k->key;
  item.prepared = st->held_prepared;
  item.ct = View(req.ciphertext());
  item.ss = Resize(resp->mutable_shared_secret(), f.secret_bytes);
  return absl::OkStatus();
}

absl::Status SetDsaMessageOptions(ServiceContext* ctx, const kernels::AlgorithmFacts& f,
                                  const std::string& message, const std::string& context,
                                  int pre_hash, bool external_mu, Bytes* message_view,
                                  kernels::DsaMessageOptions* options) {
  if (absl::Status s = CheckFieldSize(ctx, message, "message"); !s.ok()) return s;
  // The limits are the registry row's (algorithms.h), not the server's.
  if (external_mu && f.external_mu_bytes == 0) {
    return InvalidArgumentError(StrCat("external_mu: ", std::string(f.name), " has none"));
  }
  if (context.size() > f.max_context_bytes) {
    return InvalidArgumentError(
        StrCat("context: at most ", f.max_context_bytes, " bytes, got ", context.size()));
  }
  auto ph = ToKernelPreHash(pre_hash);
  if (!ph) return InvalidArgumentError(StrCat("pre_hash: unknown value ", pre_hash));
  if (external_mu) {
    if (message.size() != f.external_mu_bytes) {
      return InvalidArgumentError(StrCat("message: expected ", f.external_mu_bytes,
                                         " bytes (mu) with external_mu, got ", message.size()));
    }
    if (*ph != kernels::PreHash::kNone || !context.empty()) {
      return InvalidArgumentError("external_mu: cannot be combined with pre_hash or context");
    }
  }
  *message_view = View(message);
  options->context = View(context);
  options->prehash = *ph;
  options->external_mu = external_mu;
  return absl::OkStatus();
}

absl::Status PrepareRequest(ServiceContext* ctx, const Caller& caller,
                            const pqc::v1::SignRequest& req, pqc::v1::SignResponse* resp,
                            OpState* st, GivenKeys* given) {
  st->ctx = ctx;
  uint32_t version = 0;
  auto k = ResolveJobKey<true>(ctx, caller, req, Family::kDsa, "Sign", st, &version, given);
  if (!k.ok()) return k.status();
  if (req.has_key_ref()) resp->set_key_version(version);
  const kernels::AlgorithmFacts& f = *k->algorithm->facts;
  auto& item = st->job.Set<kernels::DsaSignItem>(f.id);
  item.sk = k->key;
  item.prepared = st->held_prepared;
  if (absl::Status s = SetDsaMessageOptions(ctx, f, req.message(), req.context(), req.pre_hash(),
                                            req.external_mu(), &item.message, &item.options);
      !s.ok()) {
    return s;
  }
  item.options.deterministic = req.deterministic();
  item.sig = Resize(resp->mutable_signature(), f.signature_bytes);
  return absl::OkStatus();
}

absl::Status PrepareRequest(ServiceContext* ctx, const Caller& caller,
                            const pqc::v1::VerifyRequest& req, pqc::v1::VerifyResponse* resp,
                            OpState* st, GivenKeys* /*given*/) {
  st->ctx = ctx;
  auto k = ResolveJobKey<false>(ctx, caller, req, Family::kDsa, "Verify", st);
  if (!k.ok()) return k.status();
  auto& item = st->job.Set<kernels::DsaVerifyItem>(k->algorithm->id());
  item.pk = k->key;
  if (absl::Status s =
          SetDsaMessageOptions(ctx, *k->algorithm->facts, req.message(), req.context(),
                               req.pre_hash(), req.external_mu(), &item.message, &item.options);
      !s.ok()) {
    return s;
  }
  // A signature of the wrong length does not verify: a normal answer, not an error.
  if (absl::Status s = CheckFieldSize(ctx, req.signature(), "signature"); !s.ok()) return s;
  item.sig = View(req.signature());
  st->post = [st, resp] { resp->set_valid(st->job.item<kernels::DsaVerifyItem>().valid); };
  return absl::OkStatus();
}

absl::Status PrepareRequest(ServiceContext* ctx, const Caller& /*caller*/,
                            const pqc::v1::HashRequest& req, pqc::v1::HashResponse* resp,
                            OpState* st, GivenKeys* /*given*/) {
  st->ctx = ctx;
  auto info = RequireFamily(req.algorithm(), Family::kHash, "Hash");
  if (!info.ok()) return info.status();
  if (absl::Status s = CheckFieldSize(ctx, req.data(), "data"); !s.ok()) return s;
  auto out_len = HashOutputLength(**info, req.output_length(), ctx->config->max_output_bytes);
  if (!out_len.ok()) return out_len.status();
  auto& item = st->job.Set<engine::HashItem>((*info)->id());
  item.message = View(req.data());
  item.digest = Resize(resp->mutable_digest(), *out_len);
  return absl::OkStatus();
}

constexpr size_t LargestSignature() {
  size_t n = 0;
  for (const kernels::AlgorithmFacts& f : kernels::kAlgorithms) n = std::max(n, f.signature_bytes);
  return n;
}
// The largest fixed-size answer of an operation whose algorithm is not known yet.
constexpr size_t kLargestSignature = LargestSignature();

// Per-field framing (tags, lengths, the result's status) is covered by the constant.
constexpr size_t kAnswerOverhead = 64;
// Held keys (algorithm left unspecified), Verify, invalid operations: a key-sized bound.
constexpr size_t kDefaultAnswerBound = kAnswerOverhead + kLargestSignature;

size_t AnswerBound(const pqc::v1::KeyGenRequest& r) {
  const kernels::AlgorithmFacts* f = kernels::FindByApiValue(r.algorithm());
  if (f == nullptr || f->family == Family::kHash) return kDefaultAnswerBound;
  return kAnswerOverhead + f->public_key_bytes + f->private_key_bytes + f->seed_bytes +
         (r.hold() ? 128 : 0);
}
size_t AnswerBound(const pqc::v1::EncapsRequest& r) {
  const kernels::AlgorithmFacts* f = kernels::FindByApiValue(r.algorithm());
  if (f == nullptr || f->family != Family::kKem) return kDefaultAnswerBound;
  return kAnswerOverhead + f->ciphertext_bytes + f->secret_bytes;
}
size_t AnswerBound(const pqc::v1::DecapsRequest& r) {
  const kernels::AlgorithmFacts* f = kernels::FindByApiValue(r.algorithm());
  if (f == nullptr || f->family != Family::kKem) return kDefaultAnswerBound;
  return kAnswerOverhead + f->secret_bytes;
}
size_t AnswerBound(const pqc::v1::SignRequest& r) {
  const kernels::AlgorithmFacts* f = kernels::FindByApiValue(r.algorithm());
  if (f == nullptr || f->family != Family::kDsa) return kDefaultAnswerBound;
  return kAnswerOverhead + f->signature_bytes;
}
size_t AnswerBound(const pqc::v1::VerifyRequest&) {
  return kDefaultAnswerBound;
}
size_t AnswerBound(const pqc::v1::HashRequest& r) {
  const kernels::AlgorithmFacts* f = kernels::FindByApiValue(r.algorithm());
  if (f == nullptr || f->family != Family::kHash) return kDefaultAnswerBound;
  return kAnswerOverhead + (f->xof && r.output_length() != 0 ? r.output_length() : f->digest_bytes);
}

size_t AnswerBound(const pqc::v1::Operation& op) {
  switch (op.op_case()) {
    case pqc::v1::Operation::kKeygen:
      return AnswerBound(op.keygen());
    case pqc::v1::Operation::kEncaps:
      return AnswerBound(op.encaps());
    case pqc::v1::Operation::kDecaps:
      return AnswerBound(op.decaps());
    case pqc::v1::Operation::kSign:
      return AnswerBound(op.sign());
    case pqc::v1::Operation::kVerify:
      return AnswerBound(op.verify());
    case pqc::v1::Operation::kHash:
      return AnswerBound(op.hash());
    default:
      return kDefaultAnswerBound;
  }
}

}  // namespace

uint32_t TenantOf(const Caller& caller) {
  const size_t h = std::hash<std::string>{}(caller.identity);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

absl::Status PrepareOperation(ServiceContext* ctx, const Caller& caller,
                              const pqc::v1::Operation& op, pqc::v1::OperationResult* result,
                              OpState* st, GivenKeys* given) {
  st->ctx = ctx;
  st->job.tenant = TenantOf(caller);
  switch (op.op_case()) {
    case pqc::v1::Operation::kKeygen:
      return PrepareRequest(ctx, caller, op.keygen(), result->mutable_keygen(), st, given);
    case pqc::v1::Operation::kEncaps:
      return PrepareRequest(ctx, caller, op.encaps(), result->mutable_encaps(), st, given);
    case pqc::v1::Operation::kDecaps:
      return PrepareRequest(ctx, caller, op.decaps(), result->mutable_decaps(), st, given);
    case pqc::v1::Operation::kSign:
      return PrepareRequest(ctx, caller, op.sign(), result->mutable_sign(), st, given);
    case pqc::v1::Operation::kVerify:
      return PrepareRequest(ctx, caller, op.verify(), result->mutable_verify(), st, given);
    case pqc::v1::Operation::kHash:
      return PrepareRequest(ctx, caller, op.hash(), result->mutable_hash(), st, given);
    default:
      return InvalidArgumentError("op: the operation is empty (set keygen, encaps, ...)");
  }
}

// ops.h's templates, defined once for every request type and instantiated below for each: a new
// request type adds its PrepareRequest and AnswerBound above and its instantiations here (a type
// without them does not link).
template <class Req, class Resp>
absl::Status Prepare(ServiceContext* ctx, const Caller& caller, const Req& req, Resp* resp,
                     OpState* st) {
  st->job.tenant = TenantOf(caller);
  return PrepareRequest(ctx, caller, req, resp, st, nullptr);
}

template <class Req>
size_t AnswerBytesBound(const Req& req) {
  return AnswerBound(req);
}

namespace v1 = pqc::v1;
template absl::Status Prepare(ServiceContext*, const Caller&, const v1::KeyGenRequest&,
                              v1::KeyGenResponse*, OpState*);
template absl::Status Prepare(ServiceContext*, const Caller&, const v1::EncapsRequest&,
                              v1::EncapsResponse*, OpState*);
template absl::Status Prepare(ServiceContext*, const Caller&, const v1::DecapsRequest&,
                              v1::DecapsResponse*, OpState*);
template absl::Status Prepare(ServiceContext*, const Caller&, const v1::SignRequest&,
                              v1::SignResponse*, OpState*);
template absl::Status Prepare(ServiceContext*, const Caller&, const v1::VerifyRequest&,
                              v1::VerifyResponse*, OpState*);
template absl::Status Prepare(ServiceContext*, const Caller&, const v1::HashRequest&,
                              v1::HashResponse*, OpState*);
template size_t AnswerBytesBound(const v1::KeyGenRequest&);
template size_t AnswerBytesBound(const v1::EncapsRequest&);
template size_t AnswerBytesBound(const v1::DecapsRequest&);
template size_t AnswerBytesBound(const v1::SignRequest&);
template size_t AnswerBytesBound(const v1::VerifyRequest&);
template size_t AnswerBytesBound(const v1::HashRequest&);
template size_t AnswerBytesBound(const v1::Operation&);

}  // namespace pqcd::server
