// grpc.reflection ServerReflection, v1 and v1alpha, on the core queues (reflection_async.h).
//
// A call is a CoreBidiReactor (core_reactor.h): its tags come back on the queue it arrived on and
// run on that queue's worker. A client that cancels makes the Read or Write in flight fail, which
// ends the call the same way as a client that is done.
#include "reflection_async.h"

#include <set>
#include <utility>

#include "core_queues.h"
#include "core_reactor.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"

namespace pqcd::server {
namespace {

using google::protobuf::DescriptorPool;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;

// `file` first, then every file it imports, directly or not, each once.
std::vector<const FileDescriptor*> WithDependencies(const FileDescriptor* file) {
  std::vector<const FileDescriptor*> files{file};
  std::set<const FileDescriptor*> seen{file};
  for (size_t i = 0; i < files.size(); ++i) {
    for (int d = 0; d < files[i]->dependency_count(); ++d) {
      const FileDescriptor* dep = files[i]->dependency(d);
      if (seen.insert(dep).second) files.push_back(dep);
    }
  }
  return files;
}

template <class Response>
void SetError(Response* response, grpc::StatusCode code, const std::string& message) {
  auto* error = response->mutable_error_response();
  error->set_error_code(static_cast<int32_t>(code));
  error->set_error_message(message);
}

template <class Response>
void SetFile(Response* response, const FileDescriptor* file) {
  auto* files = response->mutable_file_descriptor_response();
  for (const FileDescriptor* f : WithDependencies(file)) {
    google::protobuf::FileDescriptorProto proto;
    f->CopyTo(&proto);
    proto.SerializeToString(files->add_file_descriptor_proto());
  }
}

}  // namespace

// ---- One ServerReflectionInfo stream -----------------------------------------------------------

// One Read or one Write at a time: each request is answered before the next is read.
template <class Version>
class ReflectionService<Version>::Call final
    : public CoreBidiReactor<typename Version::Request, typename Version::Response> {
  using Base = CoreBidiReactor<typename Version::Request, typename Version::Response>;

 public:
  static void Post(ReflectionService* service, int queue) {
    auto* call = new Call(service, queue);
    grpc::ServerCompletionQueue* cq = call->cq();
    service->RequestServerReflectionInfo(&call->context_, &call->stream_, cq, cq,
                                         static_cast<CqTag*>(call));
  }

 private:
  Call(ReflectionService* service, int queue) : Base(service->queues_, queue), service_(service) {}

  void Renew() override { Post(service_, this->queue()); }
  void OnStart() override {
    caller_ = service_->identity_ == nullptr
                  ? std::string(kAnonymous)
                  : IdentifyCaller(this->context_, *service_->identity_).identity;
    Read();
  }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the client's writes are done (or the call was cancelled)
      End(grpc::Status::OK);
      return;
    }
    // Each request and its answer are charged to the caller until the answer is taken, and the
    // answer is watched meanwhile (bounds.h); a request too large, or past the caller's share,
    // ends the stream.
    absl::Status s = bounds_.Admit(service_->bounds_, caller_, request_.ByteSizeLong(), 0,
                                   "ServerReflectionInfo");
    if (!s.ok()) {
      typename Version::Request().Swap(&request_);  // freed now, not when the stream ends
      End(grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message())));
      return;
    }
    response_.Clear();
    service_->Answer(request_, &response_);
    if (s = bounds_.ChargeMore(2 * response_.ByteSizeLong()); !s.ok()) {
      response_.Clear();
      End(grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message())));
      return;
    }
    bounds_.Watch(&this->context_);
    this->StartWrite(&response_);
  }
  void OnWriteDone(bool ok) override {
    bounds_.Release();
    if (!ok) {
      End(grpc::Status(grpc::StatusCode::CANCELLED, "the stream is broken"));
      return;
    }
    Read();
  }
  void OnDone() override {
    bounds_.Release();
    delete this;
  }

  void End(const grpc::Status& status) {
    bounds_.Watch(&this->context_);
    this->Finish(status);
  }

  void Read() {
    request_.Clear();
    this->StartRead(&request_);
  }

  ReflectionService* const service_;
  std::string caller_;
  ControlCallBounds bounds_;
  typename Version::Request request_;
  typename Version::Response response_;
};

// ---- ReflectionService -------------------------------------------------------------------------

template <class Version>
ReflectionService<Version>::ReflectionService(std::vector<std::string> services)
    : services_(std::move(services)) {}

template <class Version>
ReflectionService<Version>::~ReflectionService() = default;

template <class Version>
void ReflectionService<Version>::Start(CoreQueues* queues, CallBounds bounds,
                                       const IdentityPolicy* identity) {
  queues_ = queues;
  bounds_ = bounds;
  identity_ = identity;
  for (int q = 0; q < queues->size(); ++q) Call::Post(this, q);
}

template <class Version>
void ReflectionService<Version>::Answer(const typename Version::Request& request,
                                        typename Version::Response* response) const {
  using Request = typename Version::Request;
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  response->set_valid_host(request.host());
  *response->mutable_original_request() = request;
  switch (request.message_request_case()) {
    case Request::kListServices: {
      auto* list = response->mutable_list_services_response();
      for (const std::string& name : services_) list->add_service()->set_name(name);
      return;
    }
    case Request::kFileByFilename: {
      const FileDescriptor* file = pool->FindFileByName(request.file_by_filename());
      if (file == nullptr) {
        SetError(response, grpc::StatusCode::NOT_FOUND,
                 "file not found: " + request.file_by_filename());
        return;
      }
      SetFile(response, file);
      return;
    }
    case Request::kFileContainingSymbol: {
      const FileDescriptor* file = pool->FindFileContainingSymbol(request.file_containing_symbol());
      if (file == nullptr) {
        SetError(response, grpc::StatusCode::NOT_FOUND,
                 "symbol not found: " + request.file_containing_symbol());
        return;
      }
      SetFile(response, file);
      return;
    }
    case Request::kFileContainingExtension: {
      const auto& ext = request.file_containing_extension();
      const auto* type = pool->FindMessageTypeByName(ext.containing_type());
      if (type == nullptr) {
        SetError(response, grpc::StatusCode::NOT_FOUND, "type not found: " + ext.containing_type());
        return;
      }
      const FieldDescriptor* field = pool->FindExtensionByNumber(type, ext.extension_number());
      if (field == nullptr) {
        SetError(response, grpc::StatusCode::NOT_FOUND,
                 "extension " + std::to_string(ext.extension_number()) + " of " +
                     ext.containing_type() + " not found");
        return;
      }
      SetFile(response, field->file());
      return;
    }
    case Request::kAllExtensionNumbersOfType: {
      const auto* type = pool->FindMessageTypeByName(request.all_extension_numbers_of_type());
      if (type == nullptr) {
        SetError(response, grpc::StatusCode::NOT_FOUND,
                 "type not found: " + request.all_extension_numbers_of_type());
        return;
      }
      std::vector<const FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      auto* numbers = response->mutable_all_extension_numbers_response();
      numbers->set_base_type_name(type->full_name());
      for (const FieldDescriptor* field : extensions)
        numbers->add_extension_number(field->number());
      return;
    }
    case Request::MESSAGE_REQUEST_NOT_SET:
      break;
  }
  SetError(response, grpc::StatusCode::UNIMPLEMENTED,
           "the request asks for nothing this server knows");
}

template class ReflectionService<reflection_internal::V1>;
template class ReflectionService<reflection_internal::V1Alpha>;

}  // namespace pqcd::server
