// Key management (pqc.v1.Keys), sync and async; List answers in pages, fetched one after another.
#include <grpcpp/grpcpp.h>

#include "client_impl.h"
#include "pqcd/client/client.h"

namespace pqcd::client {

using internal::FromProto;
using internal::ToProto;

namespace {

constexpr uint32_t kListPageSize = 1000;  // the daemon's largest page

// The first page's request.
pqc::v1::ListKeysRequest ListRequest(const std::map<std::string, std::string>& label_selector,
                                     const Owner& owner = Owner::Caller()) {
  pqc::v1::ListKeysRequest req;
  req.set_owner(owner.identity());
  for (const auto& [k, v] : label_selector) (*req.mutable_label_selector())[k] = v;
  req.set_page_size(kListPageSize);
  return req;
}

pqc::v1::GetPublicKeyRequest GetPublicKeyRequest(std::string key_id, uint32_t version,
                                                 const Owner& owner = Owner::Caller()) {
  pqc::v1::GetPublicKeyRequest req;
  req.set_owner(owner.identity());
  req.set_key_id(std::move(key_id));
  req.set_version(version);
  return req;
}

pqc::v1::DeleteKeyRequest DeleteKeyRequest(std::string key_id, uint32_t version,
                                           const Owner& owner = Owner::Caller()) {
  pqc::v1::DeleteKeyRequest req;
  req.set_owner(owner.identity());
  req.set_key_id(std::move(key_id));
  req.set_version(version);
  return req;
}

pqc::v1::RotateKeyRequest RotateKeyRequest(std::string key_id,
                                           const Owner& owner = Owner::Caller()) {
  pqc::v1::RotateKeyRequest req;
  req.set_owner(owner.identity());
  req.set_key_id(std::move(key_id));
  return req;
}

}  // namespace

// ---- Sync -------------------------------------------------------------------------------------
absl::StatusOr<KeyInfo> Client::GetPublicKey(const std::string& key_id, uint32_t version,
                                             const CallOptions& call) {
  return GetPublicKey(Owner::Caller(), key_id, version, call);
}

absl::StatusOr<KeyInfo> Client::GetPublicKey(const Owner& owner, const std::string& key_id,
                                             uint32_t version, const CallOptions& call) {
  pqc::v1::KeyInfo resp;
  absl::Status s = impl_->Rpc(&pqc::v1::Keys::Stub::GetPublicKey,
                              GetPublicKeyRequest(key_id, version, owner), &resp, call);
  if (!s.ok()) return s;
  return FromProto(std::move(resp));
}

absl::StatusOr<std::vector<KeyInfo>> Client::ListKeys(
    const std::map<std::string, std::string>& label_selector, const CallOptions& call) {
  return ListKeys(Owner::Caller(), label_selector, call);
}

absl::StatusOr<std::vector<KeyInfo>> Client::ListKeys(
    const Owner& owner, const std::map<std::string, std::string>& label_selector,
    const CallOptions& call) {
  pqc::v1::ListKeysRequest req = ListRequest(label_selector, owner);
  std::vector<KeyInfo> out;
  // The daemon answers in pages; each page is its own call (with its own deadline and retries).
  do {
    pqc::v1::ListKeysResponse resp;
    absl::Status s = impl_->Rpc(&pqc::v1::Keys::Stub::List, req, &resp, call);
    if (!s.ok()) return s;
    for (auto& k : *resp.mutable_keys()) out.push_back(FromProto(std::move(k)));
    req.set_page_token(std::move(*resp.mutable_next_page_token()));
  } while (!req.page_token().empty());
  return out;
}

absl::StatusOr<uint32_t> Client::DeleteKey(const std::string& key_id, uint32_t version,
                                           const CallOptions& call) {
  return DeleteKey(Owner::Caller(), key_id, version, call);
}

absl::StatusOr<uint32_t> Client::DeleteKey(const Owner& owner, const std::string& key_id,
                                           uint32_t version, const CallOptions& call) {
  pqc::v1::DeleteKeyResponse resp;
  absl::Status s = impl_->Rpc(&pqc::v1::Keys::Stub::Delete,
                              DeleteKeyRequest(key_id, version, owner), &resp, call);
  if (!s.ok()) return s;
  return resp.deleted_versions();
}

absl::StatusOr<KeyInfo> Client::ImportKey(const ImportKeyOp& op, const CallOptions& call) {
  pqc::v1::ImportKeyRequest req;
  ToProto(op, &req);
  pqc::v1::KeyInfo resp;
  absl::Status s = impl_->Rpc(&pqc::v1::Keys::Stub::Import, req, &resp, call);
  internal::WipeSecrets(&req);
  if (!s.ok()) return s;
  return FromProto(std::move(resp));
}

absl::StatusOr<KeyInfo> Client::RotateKey(const std::string& key_id, const CallOptions& call) {
  return RotateKey(Owner::Caller(), key_id, call);
}

absl::StatusOr<KeyInfo> Client::RotateKey(const Owner& owner, const std::string& key_id,
                                          const CallOptions& call) {
  pqc::v1::KeyInfo resp;
  absl::Status s =
      impl_->Rpc(&pqc::v1::Keys::Stub::Rotate, RotateKeyRequest(key_id, owner), &resp, call);
  if (!s.ok()) return s;
  return FromProto(std::move(resp));
}

// ---- Async ------------------------------------------------------------------------------------
void Client::GetPublicKeyAsync(std::string key_id, uint32_t version, Callback<KeyInfo> done,
                               const CallOptions& call) {
  impl_->UnaryAsync(&pqc::v1::Keys::Stub::async::GetPublicKey,
                    GetPublicKeyRequest(std::move(key_id), version),
                    internal::FromProtoDone(std::move(done)), call);
}

// One page of an asynchronous List; the next page is requested from this page's completion.
void Client::ListKeysPageAsync(pqc::v1::ListKeysRequest req,
                               std::shared_ptr<std::vector<KeyInfo>> out,
                               Callback<std::vector<KeyInfo>> done, const CallOptions& call) {
  impl_->UnaryAsync(
      &pqc::v1::Keys::Stub::async::List, req,
      [this, req, out, done = std::move(done), call](absl::Status s,
                                                     pqc::v1::ListKeysResponse& r) mutable {
        if (!s.ok()) return done(std::move(s));
        for (auto& k : *r.mutable_keys()) out->push_back(FromProto(std::move(k)));
        if (r.next_page_token().empty()) return done(std::move(*out));
        req.set_page_token(std::move(*r.mutable_next_page_token()));
        ListKeysPageAsync(std::move(req), std::move(out), std::move(done), call);
      },
      call);
}

void Client::ListKeysAsync(std::map<std::string, std::string> label_selector,
                           Callback<std::vector<KeyInfo>> done, const CallOptions& call) {
  ListKeysPageAsync(ListRequest(label_selector), std::make_shared<std::vector<KeyInfo>>(),
                    std::move(done), call);
}

void Client::DeleteKeyAsync(std::string key_id, uint32_t version, Callback<uint32_t> done,
                            const CallOptions& call) {
  impl_->UnaryAsync(
      &pqc::v1::Keys::Stub::async::Delete, DeleteKeyRequest(std::move(key_id), version),
      [done = std::move(done)](absl::Status s, pqc::v1::DeleteKeyResponse& r) mutable {
        if (!s.ok()) return done(std::move(s));
        done(r.deleted_versions());
      },
      call);
}

void Client::ImportKeyAsync(ImportKeyOp op, Callback<KeyInfo> done, const CallOptions& call) {
  pqc::v1::ImportKeyRequest req;
  ToProto(op, &req);
  impl_->UnaryAsync(&pqc::v1::Keys::Stub::async::Import, std::move(req),
                    internal::FromProtoDone(std::move(done)), call);
}

void Client::RotateKeyAsync(std::string key_id, Callback<KeyInfo> done, const CallOptions& call) {
  impl_->UnaryAsync(&pqc::v1::Keys::Stub::async::Rotate, RotateKeyRequest(std::move(key_id)),
                    internal::FromProtoDone(std::move(done)), call);
}

}  // namespace pqcd::client
