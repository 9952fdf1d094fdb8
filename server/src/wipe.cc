#include "wipe.h"

#include <string.h>  // explicit_bzero

#include <string>

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
  // Walks the descriptor's fields rather than Reflection::ListFields, which would allocate a
  // vector per message on every call: unset string fields read as empty, unset messages are
  // skipped.
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  const Reflection* reflection = message.GetReflection();
  std::string scratch;
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const FieldDescriptor* field = descriptor->field(f);
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
      } else if (reflection->HasField(message, field)) {
        WipeMessage(*reflection->MutableMessage(&message, field));
      }
    }
  }
  WipeString(scratch);  // holds a copy if a field was not stored as a std::string
}

}  // namespace pqcd::server
