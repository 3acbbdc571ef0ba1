#include "protocol/error.hpp"

#include <string>

namespace warden::protocol {

namespace {

class ProtocolCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "warden.protocol"; }
  std::string message(int ev) const override { return to_string(static_cast<Errc>(ev)); }
};

}  // namespace

const boost::system::error_category& protocol_category() noexcept {
  static const ProtocolCategory category;
  return category;
}

const char* to_string(Errc e) noexcept {
  switch (e) {
    case Errc::ok:
      return "ok";
    case Errc::malformed_json:
      return "malformed_json";
    case Errc::body_not_object:
      return "body_not_object";
    case Errc::missing_model:
      return "missing_model";
    case Errc::model_not_string:
      return "model_not_string";
    case Errc::too_deep:
      return "too_deep";
    case Errc::sse_event_too_large:
      return "sse_event_too_large";
    case Errc::prom_too_many_series:
      return "prom_too_many_series";
    case Errc::not_json_object:
      return "not_json_object";
    case Errc::no_usage:
      return "no_usage";
  }
  return "unknown";
}

}  // namespace warden::protocol
