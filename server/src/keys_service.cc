#include "pqcd/server/keys_service.h"

#include <algorithm>
#include <string_view>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "bounds.h"
#include "core_reactor.h"
#include "ops.h"
#include "pqcd/kernels/random.h"
#include "pqcd/server/algorithms.h"
#include "pqcd/server/crypto_service.h"
#include "wipe.h"

namespace pqcd::server {
namespace {

using absl::StrCat;
using kernels::Bytes;
using kernels::MutBytes;

const grpc::Status kDraining(grpc::StatusCode::UNAVAILABLE, "pqcd is draining (shutting down)");

// The room charged for a Keys answer at the call's arrival: one KeyInfo with the largest public
// key and the most labels a key may have (64 of 256 + 1024 bytes, ValidateLabels).
constexpr size_t kKeyAnswerBytes = 96 * 1024;

// One Keys call on a core queue (core_reactor.h). At its arrival it identifies the caller,
// checks the right to manage keys, and runs `body(caller, scope)`, the method's work, returning
// absl::Status: on the worker (in-memory reads), or on the key-management thread (changes:
// fsync'ed writes, key checks, key generation). A request that carries a private key (Import) is
// wiped when gRPC is done with it.
template <class Req, class Resp>
class KeysCall final : public CoreUnaryReactor<Req, Resp> {
 public:
  using Body = absl::Status (*)(ServiceContext*, const Caller&, RequestScope*, const Req*, Resp*);
  using RequestFn = void (KeysServiceBase::*)(grpc::ServerContext*, Req*,
                                              grpc::ServerAsyncResponseWriter<Resp>*,
                                              grpc::CompletionQueue*, grpc::ServerCompletionQueue*,
                                              void*);
  struct Method {
    using Call = KeysCall;
    const char* rpc;
    RequestFn request;
    Body body;
    bool on_aux;   // runs on the key-management thread
    bool secrets;  // the request carries a private key
  };

  static void Post(ServiceContext* ctx, KeysServiceBase* service, CoreQueues* queues, int queue,
                   const Method* method) {
    auto* call = new KeysCall(ctx, service, queues, queue, method);
    (service->*method->request)(&call->context_, &call->request_, &call->responder_, call->cq(),
                                call->cq(), static_cast<CqTag*>(call));
  }

 private:
  using Base = CoreUnaryReactor<Req, Resp>;

  KeysCall(ServiceContext* ctx, KeysServiceBase* service, CoreQueues* queues, int queue,
           const Method* method)
      : Base(queues, queue), ctx_(ctx), service_(service), method_(method) {}

  void Renew() override { Post(ctx_, service_, this->queues(), this->queue(), method_); }

  void OnStart() override {
    scope_.emplace(ctx_, method_->rpc);
    scope_->set_algorithm("none");
    if (ctx_->draining.load()) {
      FinishWith(kDraining);
      return;
    }
    Caller caller = IdentifyCaller(this->context_, ctx_->identity_policy);
    // Charged like a crypto call (bounds.h), with room for an answer of one key; a List's answer
    // is charged once it is made.
    if (absl::Status s =
            bounds_.Admit({ctx_->memory, ctx_->unread}, caller.identity,
                          this->request_.ByteSizeLong(), 2 * kKeyAnswerBytes, method_->rpc);
        !s.ok()) {
      DropRequest();
      FinishWith(ToGrpc(s));
      return;
    }
    // The caller's right is checked before anything is queued.
    if (!caller.may_hold_keys) {
      FinishWith(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, HeldKeysRefusal(caller)));
      return;
    }
    if (!method_->on_aux) {
      Run(caller);
      return;
    }
    // Key management (fsync'ed writes, key checks) has its own bounded queue: a flood of it
    // neither grows memory nor delays crypto or HashStream work.
    if (!ctx_->key_tasks->TryPost([this, caller = std::move(caller)] { Run(caller); })) {
      FinishWith(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                              StrCat("key management is busy: ", ctx_->config->key_queue,
                                     " requests already queued (--key-queue); retry later")));
    }
  }

  void Run(const Caller& caller) {
    absl::Status s = method_->body(ctx_, caller, &*scope_, &this->request_, &this->response_);
    // An answer larger than the room charged at the arrival (a List of many keys) is charged now;
    // a change is done by now, and its answer (one key) fits the room.
    const size_t answer = 2 * this->response_.ByteSizeLong();
    if (s.ok() && answer > 2 * kKeyAnswerBytes) {
      s = bounds_.ChargeMore(answer - 2 * kKeyAnswerBytes);
      if (!s.ok()) this->response_.Clear();
    }
    FinishWith(ToGrpc(s));
  }

  // A refused request goes at once (an imported private key wiped first), not when the call ends.
  void DropRequest() {
    if (method_->secrets) WipeMessage(this->request_);
    Req().Swap(&this->request_);  // the temporary takes the request's memory with it
  }

  // Any thread, once. The answer is watched until the client takes it (--unread-answer-timeout).
  void FinishWith(const grpc::Status& status) {
    code_ = status.error_code();
    bounds_.Watch(&this->context_);
    this->Finish(status);
  }

  void OnDone() override {
    bounds_.Release();
    scope_->Done(this->context_.IsCancelled() ? CancelCode(this->context_) : code_);
    if (method_->secrets) WipeMessage(this->request_);
    delete this;
  }

  ServiceContext* const ctx_;
  KeysServiceBase* const service_;
  const Method* const method_;
  std::optional<RequestScope> scope_;             // from the call's arrival
  grpc::StatusCode code_ = grpc::StatusCode::OK;  // written before the Finish
  ControlCallBounds bounds_;                      // memory charge and unread-answer watch
};

// The public key of a private key given as a seed (key generation) or expanded (the kernels'
// complete consistency check, which recomputes the public key: FIPS 204 Alg. 6 from rho, s1, s2;
// FIPS 203 §7.3 and s, e recovered from dk), through the registry. A given public key must equal
// it. Runs on the key-management thread.
absl::StatusOr<std::vector<uint8_t>> PublicKeyOf(const AlgorithmDescriptor& info, Bytes sk,
                                                 const std::string& given_pk) {
  const kernels::AlgorithmFacts& f = *info.facts;
  std::vector<uint8_t> pk(f.public_key_bytes);
  const Bytes given(reinterpret_cast<const uint8_t*>(given_pk.data()), given_pk.size());
  if (!given.empty()) {
    if (absl::Status s = CheckPublicKeySize(info, given.size(), "public_key"); !s.ok()) return s;
  }
  if (absl::Status s = CheckPrivateKeySize(info, sk.size(), "private_key"); !s.ok()) return s;
  // The registry derives the public key of either form (an expanded ML-DSA key lacks t1, FIPS
  // 204 Alg. 24, and its complete check recomputes it); a given one must match.
  if (absl::Status s = info.public_key_of(sk, MutBytes(pk)); !s.ok()) {
    return absl::InvalidArgumentError(StrCat("private_key: ", s.message()));
  }
  // Public data: a plain comparison, byte for byte (the given key is a std::string of char).
  if (!given.empty() && !std::equal(pk.begin(), pk.end(), given.begin())) {
    return absl::InvalidArgumentError("public_key: does not match private_key");
  }
  return pk;
}

absl::Status GetPublicKeyBody(ServiceContext* ctx, const Caller& caller, RequestScope* scope,
                              const pqc::v1::GetPublicKeyRequest* request,
                              pqc::v1::KeyInfo* response) {
  if (absl::Status s = ValidateKeyId(request->key_id(), "key_id"); !s.ok()) return s;
  auto owner = ManagedOwner(caller, request->owner());
  if (!owner.ok()) return owner.status();
  auto rec = ctx->keys->Get(*owner, request->key_id(), request->version());
  if (!rec.ok()) return rec.status();
  scope->set_algorithm(AlgorithmLabel(rec->algorithm));
  FillKeyInfo(*rec, ctx->keys->Versions(rec->owner, rec->key_id), response);
  if (request->format() != pqc::v1::KEY_FORMAT_RAW) {
    const AlgorithmDescriptor* d = LookupAlgorithm(rec->algorithm);
    if (d == nullptr) return absl::InternalError("held key of an unknown algorithm");
    if (absl::Status s =
            EncodeAnswerKeys(*d, request->format(), response->mutable_public_key(), nullptr, {});
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status ListBody(ServiceContext* ctx, const Caller& caller, RequestScope* /*scope*/,
                      const pqc::v1::ListKeysRequest* request,
                      pqc::v1::ListKeysResponse* response) {
  std::map<std::string, std::string> selector(request->label_selector().begin(),
                                              request->label_selector().end());
  // The caller's own keys; admins may ask for one identity's or, with "*", all.
  std::string owner;
  if (request->owner() == "*") {
    if (!caller.admin) {
      return absl::PermissionDeniedError(
          "owner: only --admin identities list every identity's keys");
    }
  } else {
    auto managed = ManagedOwner(caller, request->owner());
    if (!managed.ok()) return managed.status();
    owner = *std::move(managed);
  }
  if (request->page_size() > 1000) {
    return absl::InvalidArgumentError(
        StrCat("page_size: at most 1000, got ", request->page_size()));
  }
  auto page = ctx->keys->List(request->owner() == "*" ? nullptr : &owner, selector,
                              request->page_size(), request->page_token());
  if (!page.ok()) return page.status();
  for (const KeyRecord& rec : page->keys) {
    FillKeyInfo(rec, ctx->keys->Versions(rec.owner, rec.key_id), response->add_keys());
  }
  response->set_next_page_token(std::move(page->next_page_token));
  return absl::OkStatus();
}

absl::Status DeleteBody(ServiceContext* ctx, const Caller& caller, RequestScope* scope,
                        const pqc::v1::DeleteKeyRequest* request,
                        pqc::v1::DeleteKeyResponse* response) {
  if (absl::Status s = ValidateKeyId(request->key_id(), "key_id"); !s.ok()) return s;
  std::string algorithm;
  auto n = [&]() -> absl::StatusOr<uint32_t> {
    auto owner = ManagedOwner(caller, request->owner());
    if (!owner.ok()) return owner.status();
    // The key's algorithm labels the request metric and the audit line.
    if (auto rec = ctx->keys->Get(*owner, request->key_id(), 0); rec.ok()) {
      algorithm = AlgorithmLabel(rec->algorithm);
      scope->set_algorithm(algorithm);
    }
    return ctx->keys->Delete(*owner, request->key_id(), request->version());
  }();
  ctx->Audit(caller.identity, "delete", request->owner(), request->key_id(), request->version(),
             algorithm, n.status());
  if (!n.ok()) return n.status();
  response->set_deleted_versions(*n);
  return absl::OkStatus();
}

absl::Status ImportBody(ServiceContext* ctx, const Caller& caller, RequestScope* scope,
                        const pqc::v1::ImportKeyRequest* request, pqc::v1::KeyInfo* response) {
  std::string key_id = request->key_id().empty() ? NewKeyId() : request->key_id();
  auto result = [&]() -> absl::StatusOr<KeyRecord> {
    const AlgorithmDescriptor* info = LookupAlgorithm(request->algorithm());
    if (info == nullptr || info->family() == Family::kHash) {
      return absl::InvalidArgumentError(
          StrCat("algorithm: Import needs a KEM or signature algorithm, got ",
                 AlgorithmLabel(request->algorithm())));
    }
    scope->set_algorithm(Name(*info));
    if (absl::Status s = ValidateKeyId(key_id, "key_id"); !s.ok()) return s;
    if (absl::Status s = ValidateLabels(request->labels()); !s.ok()) return s;
    auto owner = ManagedOwner(caller, request->owner());
    if (!owner.ok()) return owner.status();
    // Raw, or PKCS#8 / SubjectPublicKeyInfo in DER or PEM (docs/encodings.md).
    const std::string& given_sk = request->private_key();
    SecretBytes decoded_sk;
    auto sk = ResolvePrivateKey(
        *info, Bytes(reinterpret_cast<const uint8_t*>(given_sk.data()), given_sk.size()),
        "private_key", &decoded_sk);
    if (!sk.ok()) return sk.status();
    std::string given_pk;
    if (!request->public_key().empty()) {
      std::vector<uint8_t> decoded_pk;
      const std::string& pk_field = request->public_key();
      auto raw_pk = ResolvePublicKey(
          *info, Bytes(reinterpret_cast<const uint8_t*>(pk_field.data()), pk_field.size()),
          "public_key", &decoded_pk);
      if (!raw_pk.ok()) return raw_pk.status();
      given_pk.assign(raw_pk->begin(), raw_pk->end());
    }
    auto pk = PublicKeyOf(*info, *sk, given_pk);
    if (!pk.ok()) return pk.status();
    std::map<std::string, std::string> labels(request->labels().begin(), request->labels().end());
    return ctx->keys->Create(*owner, key_id, request->algorithm(), std::move(*pk),
                             SecretBytes(sk->data(), sk->size()), std::move(labels));
  }();
  ctx->Audit(caller.identity, "import", request->owner(), key_id, result.ok() ? result->version : 0,
             AlgorithmLabel(request->algorithm()), result.status());
  if (!result.ok()) return result.status();
  FillKeyInfo(*result, ctx->keys->Versions(result->owner, key_id), response);
  return absl::OkStatus();
}

absl::Status RotateBody(ServiceContext* ctx, const Caller& caller, RequestScope* scope,
                        const pqc::v1::RotateKeyRequest* request, pqc::v1::KeyInfo* response) {
  int algorithm = 0;
  auto result = [&]() -> absl::StatusOr<KeyRecord> {
    if (absl::Status s = ValidateKeyId(request->key_id(), "key_id"); !s.ok()) return s;
    auto owner = ManagedOwner(caller, request->owner());
    if (!owner.ok()) return owner.status();
    auto cur = ctx->keys->Get(*owner, request->key_id(), 0);
    if (!cur.ok()) return cur.status();
    algorithm = cur->algorithm;
    const AlgorithmDescriptor* info = LookupAlgorithm(cur->algorithm);
    if (info == nullptr) return absl::InternalError("held key has an unknown algorithm");
    scope->set_algorithm(Name(*info));
    // No key generation for a key that cannot take another version (AddVersion checks
    // again: a concurrent Rotate may take the room meanwhile).
    if (absl::Status s = ctx->keys->CheckRoomForVersion(cur->owner, request->key_id()); !s.ok()) {
      return s;
    }
    // A new key pair from fresh randomness, through the engine like every key generation;
    // only its seed is stored.
    const kernels::AlgorithmFacts& f = *info->facts;
    std::vector<uint8_t> pk(f.public_key_bytes);
    SecretBytes expanded(f.private_key_bytes);
    SecretBytes seed(f.seed_bytes);
    engine::Job job;
    SetKeyGenJob(*info, {}, MutBytes(pk), MutBytes(expanded.data(), expanded.size()),
                 MutBytes(seed.data(), seed.size()), &job);
    if (absl::Status s = RunJobAndWait(*ctx->engine, job); !s.ok()) return s;
    return ctx->keys->AddVersion(cur->owner, request->key_id(), std::move(pk), std::move(seed));
  }();
  ctx->Audit(caller.identity, "rotate", request->owner(), request->key_id(),
             result.ok() ? result->version : 0, AlgorithmLabel(algorithm), result.status());
  if (!result.ok()) return result.status();
  FillKeyInfo(*result, ctx->keys->Versions(result->owner, request->key_id()), response);
  return absl::OkStatus();
}

namespace v1 = pqc::v1;
using GetPublicKeyCall = KeysCall<v1::GetPublicKeyRequest, v1::KeyInfo>;
using ListCall = KeysCall<v1::ListKeysRequest, v1::ListKeysResponse>;
using DeleteCall = KeysCall<v1::DeleteKeyRequest, v1::DeleteKeyResponse>;
using ImportCall = KeysCall<v1::ImportKeyRequest, v1::KeyInfo>;
using RotateCall = KeysCall<v1::RotateKeyRequest, v1::KeyInfo>;
// Reads answer on the worker; changes run on the key-management thread. Each row has its line in
// kMethods, the list StartCoreServing posts from.
constexpr GetPublicKeyCall::Method kGetPublicKey{
    "Keys.GetPublicKey", &KeysServiceBase::RequestGetPublicKey, GetPublicKeyBody, false, false};
constexpr ListCall::Method kList{"Keys.List", &KeysServiceBase::RequestList, ListBody, false,
                                 false};
constexpr DeleteCall::Method kDelete{"Keys.Delete", &KeysServiceBase::RequestDelete, DeleteBody,
                                     true, false};
constexpr ImportCall::Method kImport{"Keys.Import", &KeysServiceBase::RequestImport, ImportBody,
                                     true, true};
constexpr RotateCall::Method kRotate{"Keys.Rotate", &KeysServiceBase::RequestRotate, RotateBody,
                                     true, false};

// A method as the daemon serves it: the row's name (its metric label, "Keys.<method>") and what
// posts its first call on a queue.
struct KeysMethod {
  const char* rpc;
  void (*post)(ServiceContext* ctx, KeysServiceBase* service, CoreQueues* queues, int queue);
};
template <const auto& kMethod>
void PostKeys(ServiceContext* ctx, KeysServiceBase* service, CoreQueues* queues, int queue) {
  std::remove_cvref_t<decltype(kMethod)>::Call::Post(ctx, service, queues, queue, &kMethod);
}
template <const auto& kMethod>
constexpr KeysMethod Served() {
  return {kMethod.rpc, PostKeys<kMethod>};
}
constexpr KeysMethod kMethods[] = {
    Served<kGetPublicKey>(), Served<kList>(),   Served<kDelete>(),
    Served<kImport>(),       Served<kRotate>(),
};

}  // namespace

void KeysService::StartCoreServing(CoreQueues* queues) {
  for (int q = 0; q < queues->size(); ++q) {
    for (const KeysMethod& method : kMethods) method.post(ctx_, this, queues, q);
  }
}

std::vector<std::string_view> KeysService::ServedMethods() {
  std::vector<std::string_view> names;
  // A row whose label lacks the prefix keeps its whole name, which no method has.
  constexpr std::string_view kPrefix = "Keys.";
  for (const KeysMethod& method : kMethods) {
    std::string_view name = method.rpc;
    if (name.starts_with(kPrefix)) name.remove_prefix(kPrefix.size());
    names.push_back(name);
  }
  return names;
}

absl::Status KeysService::CheckServesEveryMethod() {
  const google::protobuf::ServiceDescriptor* service =
      google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
          pqc::v1::Keys::service_full_name());
  if (service == nullptr) {
    return absl::InternalError(
        StrCat(pqc::v1::Keys::service_full_name(), " is not in the generated descriptors"));
  }
  const std::vector<std::string_view> served = ServedMethods();
  return server::CheckServesEveryMethod(*service, served);
}

}  // namespace pqcd::server
