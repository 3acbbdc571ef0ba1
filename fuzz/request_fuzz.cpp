// Request inspection and rewrite over every API: inspect_request agrees with a Boost.JSON DOM parse
// (valid iff Boost.JSON accepts; model and stream as the DOM says), and a rewrite of a valid body is valid
// JSON that differs only in the edited members. Input: one byte of flags, one header (length byte, value),
// then the body.

#include "fuzz/fuzz_support.hpp"
#include "protocol/request.hpp"
#include "protocol/rewrite.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace {

namespace json = boost::json;
using namespace warden::protocol;

constexpr std::array<std::string_view, 6> kHeaders = {"X-Warden-Session", "X-Claude-Code-Session-Id",
                                                      "session-id",       "session_id",
                                                      "X-Warden-Replica", "X-data-parallel-rank"};
// New model names, one needing escapes.
constexpr std::array<std::string_view, 3> kModels = {"served", "a\"b\\c\n\xc3\xa9", ""};

// DOM equality where NaN equals NaN (Boost.JSON 1.81 reads some huge exponents of zero, e.g. 0e400, as NaN).
bool same(const json::value& a, const json::value& b) {
  if (a.is_double() && b.is_double() && std::isnan(a.get_double()) && std::isnan(b.get_double())) {
    return true;
  }
  if (a.is_array() && b.is_array()) {
    const json::array& x = a.get_array();
    const json::array& y = b.get_array();
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), same);
  }
  if (a.is_object() && b.is_object()) {
    if (a.get_object().size() != b.get_object().size()) {
      return false;
    }
    for (const auto& kv : a.get_object()) {
      const json::value* other = b.get_object().if_contains(kv.key());
      if (other == nullptr || !same(kv.value(), *other)) {
        return false;
      }
    }
    return true;
  }
  return a == b;
}

void check_rewrite(ApiKind api, std::string_view body, const RequestInfo& info, const json::object& before,
                   const RewriteOptions& options, const json::parse_options& opt) {
  const RewriteResult rw = rewrite_request(api, body, info.layout, options);
  const std::string out = rw.joined(body);
  FUZZ_CHECK(rw.changed || out == body);
  FUZZ_CHECK(!rw.changed || rw.size == out.size());
  // The overload that scans for itself gives the same bytes.
  const auto again = rewrite_request(api, body, options);
  FUZZ_CHECK(again && again->joined(body) == out);

  boost::system::error_code ec;
  const json::value after = json::parse(out, ec, {}, opt);
  FUZZ_CHECK(!ec && after.is_object());
  json::object got = after.get_object();
  json::object expected = before;
  if (options.model) {
    expected["model"] = *options.model;
  }
  const bool forced = options.force_include_usage && info.stream &&
                      (api == ApiKind::openai_chat || api == ApiKind::openai_completions);
  if (forced) {
    const json::value* so = got.if_contains("stream_options");
    FUZZ_CHECK(so != nullptr && so->is_object());
    const json::value* iu = so->get_object().if_contains("include_usage");
    FUZZ_CHECK(iu != nullptr && *iu == true);
    got.erase("stream_options");
    expected.erase("stream_options");
  }
  FUZZ_CHECK(same(got, expected));
}

// What vLLM's lax parser reads as true, from the DOM (protocol::lax_true reads the value's text).
bool read_as_true(const json::value* v) {
  if (v == nullptr) {
    return false;
  }
  if (v->is_bool()) {
    return v->get_bool();
  }
  boost::system::error_code ec;
  if (v->is_number()) {
    const double d = v->to_number<double>(ec);
    return !ec && d == 1.0;
  }
  if (!v->is_string()) {
    return false;
  }
  std::string text(v->get_string());
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text == "1" || text == "on" || text == "t" || text == "true" || text == "y" || text == "yes";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  warden::fuzz::Input in(data, size);
  const std::uint8_t flags = in.byte();
  const auto api = static_cast<ApiKind>(flags % 5);
  const std::string_view header_value = in.take(in.byte() % 64);
  const std::array<HeaderField, 1> fields = {
      HeaderField{kHeaders[(flags >> 3) % kHeaders.size()], header_value}};
  const std::string_view body = in.rest();

  InspectOptions options;
  options.max_depth = (flags & 0x80) != 0 ? 8 : InspectOptions{}.max_depth;
  const auto r = inspect_request(api, HeaderLookup{fields}, body, options);

  boost::system::error_code ec;
  json::parse_options opt;
  opt.max_depth = options.max_depth;
  const json::value dom = json::parse(body, ec, {}, opt);
  if (ec || !dom.is_object()) {
    FUZZ_CHECK(!r);
    // (That overload validates with the default depth.)
    FUZZ_CHECK(options.max_depth != InspectOptions{}.max_depth ||
               !rewrite_request(api, body, RewriteOptions{"m", true}));
    return 0;
  }
  const json::object& o = dom.get_object();
  const json::value* model = o.if_contains("model");
  if (model == nullptr || !model->is_string() || model->get_string().empty()) {
    FUZZ_CHECK(!r);
    FUZZ_CHECK(r.error() ==
               (model != nullptr && !model->is_string() ? Errc::model_not_string : Errc::missing_model));
    return 0;
  }
  FUZZ_CHECK(r);
  FUZZ_CHECK(r->model == model->get_string());
  const json::value* stream = o.if_contains("stream");
  FUZZ_CHECK(r->stream == read_as_true(stream));
  FUZZ_CHECK((r->session_source == SessionSource::none) == r->session_key.empty());
  FUZZ_CHECK(r->session_key.size() <= 256);
  FUZZ_CHECK(r->pin.state != PinState::valid || r->pin.replica >= 0);

  RewriteOptions rewrite;
  const std::uint8_t m = (flags >> 5) & 3;
  if (m < kModels.size()) {
    rewrite.model = kModels[m];
  }
  rewrite.force_include_usage = (flags & 0x04) != 0;
  check_rewrite(api, body, *r, o, rewrite, opt);
  return 0;
}
