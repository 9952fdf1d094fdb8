#include "wipe.h"

#include <string.h>  // explicit_bzero

#include <string>
#include <vector>

namespace pqcd::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The reflection API hands out string fields as const references to the message's own storage
// (for the default std::string representation); the message itself is not const, so writing its
// characters in place is well defined and keeps the sizes.
void WipeString(const std::string& s) {
  if (!s.empty()) explicit_bzero(const_cast<char*>(s.data()), s.size());
}

}  // namespace

void WipeMessage(Message& message) {
  const Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  std::string scratch;
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      if (field->is_repeated()) {
        const int n = reflection->FieldSize(message, field);
        for (int i = 0; i < n; ++i) {
          WipeString(reflection->GetRepeatedStringReference(message, field, i, &scratch));
        }
      } else {
        WipeString(reflection->GetStringReference(message, field, &scratch));
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        const int n = reflection->FieldSize(message, field);
        for (int i = 0; i < n; ++i) {
          WipeMessage(*reflection->MutableRepeatedMessage(&message, field, i));
        }
      } else {
        WipeMessage(*reflection->MutableMessage(&message, field));
      }
    }
  }
  WipeString(scratch);  // holds a copy if a field was not stored as a std::string
}

void WipingUnaryReactor::OnDone() {
  // The request is const to the handler, but gRPC allocated it as a mutable message.
  if (request_ != nullptr) WipeMessage(const_cast<Message&>(*request_));
  if (response_ != nullptr) WipeMessage(*response_);
  delete this;
}

}  // namespace pqcd::server
