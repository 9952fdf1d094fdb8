#include "stream_wire.h"

#include <string.h>

#include <string>
#include <utility>

namespace pqcd::client::internal {
namespace {

void Wipe(std::string* s) {
  if (!s->empty()) explicit_bzero(s->data(), s->size());
}

}  // namespace

void AppendOperation(pqc::v1::StreamRequest* msg, uint64_t id, pqc::v1::Operation* op) {
  if (!msg->has_operation() && msg->items_size() == 0) {
    msg->set_id(id);
    msg->mutable_operation()->Swap(op);
    return;
  }
  if (msg->has_operation()) {
    // Second operation: the first one moves into items[0] and the single form's fields go.
    pqc::v1::StreamItem* first = msg->add_items();
    first->set_id(msg->id());
    first->mutable_operation()->Swap(msg->mutable_operation());
    msg->clear_operation();
    msg->set_id(0);
  }
  pqc::v1::StreamItem* item = msg->add_items();
  item->set_id(id);
  item->mutable_operation()->Swap(op);
}

void WipeSecrets(pqc::v1::KeyGenRequest* req) {
  Wipe(req->mutable_seed());
}

void WipeSecrets(pqc::v1::DecapsRequest* req) {
  if (req->has_private_key()) Wipe(req->mutable_private_key());
}

void WipeSecrets(pqc::v1::SignRequest* req) {
  if (req->has_private_key()) Wipe(req->mutable_private_key());
}

void WipeSecrets(pqc::v1::BatchRequest* req) {
  for (auto& op : *req->mutable_operations()) WipeOperation(&op);
}

void WipeSecrets(pqc::v1::ImportKeyRequest* req) {
  Wipe(req->mutable_private_key());
}

void WipeOperation(pqc::v1::Operation* op) {
  switch (op->op_case()) {
    case pqc::v1::Operation::kKeygen:
      WipeSecrets(op->mutable_keygen());
      break;
    case pqc::v1::Operation::kDecaps:
      WipeSecrets(op->mutable_decaps());
      break;
    case pqc::v1::Operation::kSign:
      WipeSecrets(op->mutable_sign());
      break;
    default:
      break;  // Encaps, Verify and Hash carry no secret of the caller's
  }
}

void WipeRequest(pqc::v1::StreamRequest* msg) {
  if (msg->has_operation()) WipeOperation(msg->mutable_operation());
  for (auto& item : *msg->mutable_items()) WipeOperation(item.mutable_operation());
}

void WipeResult(pqc::v1::OperationResult* result) {
  switch (result->result_case()) {
    case pqc::v1::OperationResult::kKeygen:
      Wipe(result->mutable_keygen()->mutable_private_key());
      Wipe(result->mutable_keygen()->mutable_seed());
      break;
    case pqc::v1::OperationResult::kEncaps:
      Wipe(result->mutable_encaps()->mutable_shared_secret());
      break;
    case pqc::v1::OperationResult::kDecaps:
      Wipe(result->mutable_decaps()->mutable_shared_secret());
      break;
    default:
      break;
  }
}

void WipeResponse(pqc::v1::StreamResponse* resp) {
  if (resp->has_result()) WipeResult(resp->mutable_result());
  for (auto& r : *resp->mutable_results()) WipeResult(r.mutable_result());
}

void PackSupport::Sending(const pqc::v1::StreamRequest& msg) {
  if (state_ == State::kUnknown && msg.items_size() > 0) kept_.push_back(msg);
}

bool PackSupport::Inspect(const pqc::v1::StreamResponse& resp, pqc::v1::StreamRequest* rejected) {
  if (state_ == State::kYes) return false;
  if (resp.results_size() > 0) {
    state_ = State::kYes;
    for (auto& m : kept_) WipeRequest(&m);
    kept_.clear();
    return false;
  }
  // The client never uses id 0, so an id-0 error answers a message the daemon could not read as
  // an operation: a packed one, read by a daemon without packing. Once one was rejected, the other
  // packed messages already written are rejected too, each in turn.
  if (resp.id() != 0 || resp.result().code() == 0 || kept_.empty()) return false;
  state_ = State::kNo;
  rejected->Swap(&kept_.front());
  kept_.pop_front();
  return true;
}

PackSupport::~PackSupport() {
  for (auto& m : kept_) WipeRequest(&m);
}

}  // namespace pqcd::client::internal
