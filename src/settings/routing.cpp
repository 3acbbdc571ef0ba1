#include "settings/routing.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <boost/pfr/core.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <tuple>

#include "base/parse.hpp"
#include "core/policy.hpp"

namespace warden::settings {

namespace json = boost::json;
using core::RoutingConfig;
using Part = SettingError::Part;

namespace {

// What reading a member did: nothing to return, or what is wrong.
using Read = base::Result<void, SettingError>;

// A member being read: the scope, and its whole name for messages ("models[0].routing.admission.max_wait").
struct Reading {
  RoutingScope scope;
  std::string name;
};

SettingError bad(std::string message) {
  return {std::move(message), Part::value};
}

std::string joined(std::string_view where, std::string_view name) {
  return where.empty() ? std::string(name) : fmt::format("{}.{}", where, name);
}

// One member of a JSON object over a value of type T: how it is written, and how it is read.
template <class T>
struct Member {
  std::string_view name;
  json::value (*write)(const T&);
  Read (*read)(const json::value&, T&, const Reading&);
  RoutingScope scope = RoutingScope::admin;  // admin: in every scope; stored: in all but the admin API's
  const char* shape = nullptr;  // how its value is written, for a reader's help ("bool", "\"auto\"|N")
};

bool in_scope(RoutingScope member, RoutingScope reading) {
  return member == RoutingScope::admin || reading != RoutingScope::admin;
}

std::optional<std::int64_t> whole_number(const json::value& v, std::int64_t lo, std::int64_t hi) {
  if (v.is_int64() && v.as_int64() >= lo && v.as_int64() <= hi) {
    return v.as_int64();
  }
  if (v.is_uint64() && v.as_uint64() <= static_cast<std::uint64_t>(hi) &&
      static_cast<std::int64_t>(v.as_uint64()) >= lo) {
    return static_cast<std::int64_t>(v.as_uint64());
  }
  return std::nullopt;
}

// A duration: "30s", "1500ms" (base::parse_duration) or a number of seconds up to a day; at least `min`.
std::optional<core::Time> duration_value(const json::value& v, std::chrono::milliseconds min) {
  std::optional<std::chrono::milliseconds> d;
  if (v.is_string()) {
    d = base::parse_duration(v.as_string());
  } else if (v.is_number() && v.to_number<double>() >= 0 && v.to_number<double>() <= 86'400) {
    d = std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(v.to_number<double>() * 1000)));
  }
  if (!d || *d < min) {
    return std::nullopt;
  }
  return std::chrono::duration_cast<core::Time>(*d);
}

// Written in milliseconds, the precision every reader of a duration keeps.
json::value duration_json(core::Time t) {
  return json::value(fmt::format("{}ms", std::chrono::duration_cast<std::chrono::milliseconds>(t).count()));
}

// The words besides true and false that YAML 1.1 (and so yaml-cpp) reads as a boolean.
std::optional<bool> bool_word(std::string_view w) {
  static constexpr std::array<std::string_view, 6> kYes = {"y", "Y", "yes", "Yes", "YES", "on"};
  static constexpr std::array<std::string_view, 6> kNo = {"n", "N", "no", "No", "NO", "off"};
  const auto in = [w](const auto& words) { return std::find(words.begin(), words.end(), w) != words.end(); };
  if (in(kYes) || w == "On" || w == "ON") {
    return true;
  }
  if (in(kNo) || w == "Off" || w == "OFF") {
    return false;
  }
  return std::nullopt;
}

Read read_bool(const json::value& v, bool& out, const Reading& r) {
  std::optional<bool> b;
  if (v.is_bool()) {
    b = v.as_bool();
  } else if (r.scope == RoutingScope::text && v.is_string()) {
    b = bool_word(v.as_string());
  }
  if (!b) {
    return bad(fmt::format("{} must be true or false", r.name));
  }
  out = *b;
  return {};
}

Read read_duration(const json::value& v, core::Time& out, std::chrono::milliseconds min, const Reading& r,
                   std::string_view example) {
  const auto t = duration_value(v, min);
  if (!t) {
    return bad(fmt::format("{} must be a duration such as \"{}\" or a number of seconds{}", r.name, example,
                           min.count() > 0 ? fmt::format(", at least {}ms", min.count()) : ""));
  }
  out = *t;
  return {};
}

Read read_count(const json::value& v, std::uint32_t& out, std::int64_t lo, const Reading& r) {
  const auto n = whole_number(v, lo, 1'000'000);
  if (!n) {
    return bad(fmt::format("{} must be an integer from {} to 1000000", r.name, lo));
  }
  out = static_cast<std::uint32_t>(*n);
  return {};
}

Read read_water(const json::value& v, double& out, const Reading& r) {
  if (!v.is_number() || !(v.to_number<double>() > 0) || v.to_number<double>() > 100) {
    return bad(
        fmt::format("{} must be a number above 0 and at most 100 (a fraction of the KV capacity)", r.name));
  }
  out = v.to_number<double>();
  return {};
}

// One of the names `parse` reads (`choices` lists them for the error).
template <class T, class Parse>
Read read_name(const json::value& v, T& out, Parse parse, const Reading& r, std::string_view choices) {
  const std::optional<T> value = v.is_string() ? parse(v.as_string()) : std::nullopt;
  if (!value) {
    return bad(fmt::format("{} must be {}", r.name, choices));
  }
  out = *value;
  return {};
}

// "auto" (nullopt) or a count from 1.
Read read_auto_count(const json::value& v, std::optional<std::uint32_t>& out, const Reading& r) {
  if (v.is_string() && v.as_string() == "auto") {
    out.reset();
    return {};
  }
  const auto n = whole_number(v, 1, 1'000'000);
  if (!n) {
    return bad(fmt::format("{} must be \"auto\" or an integer from 1 to 1000000", r.name));
  }
  out = static_cast<std::uint32_t>(*n);
  return {};
}

Read read_auto_duration(const json::value& v, std::optional<core::Time>& out, const Reading& r,
                        std::string_view example) {
  if (v.is_string() && v.as_string() == "auto") {
    out.reset();
    return {};
  }
  const auto t = duration_value(v, std::chrono::milliseconds(1));
  if (!t) {
    return bad(
        fmt::format("{} must be \"auto\", a duration such as \"{}\" or a number of seconds, at least 1ms",
                    r.name, example));
  }
  out = *t;
  return {};
}

const std::array<Member<core::AdmissionConfig>, 7> kAdmission = {{
    {"max_queue", [](const core::AdmissionConfig& a) { return json::value(a.max_queue); },
     [](const json::value& v, core::AdmissionConfig& a, const Reading& r) {
       return read_count(v, a.max_queue, 0, r);
     }},
    {"max_wait", [](const core::AdmissionConfig& a) { return duration_json(a.max_wait); },
     [](const json::value& v, core::AdmissionConfig& a, const Reading& r) {
       return read_duration(v, a.max_wait, std::chrono::milliseconds(1), r, "30s");
     }},
    {"high_water", [](const core::AdmissionConfig& a) { return json::value(a.high_water); },
     [](const json::value& v, core::AdmissionConfig& a, const Reading& r) {
       return read_water(v, a.high_water, r);
     },
     RoutingScope::stored},
    {"low_water", [](const core::AdmissionConfig& a) { return json::value(a.low_water); },
     [](const json::value& v, core::AdmissionConfig& a, const Reading& r) {
       return read_water(v, a.low_water, r);
     },
     RoutingScope::stored},
    {"when_waiting", [](const core::AdmissionConfig& a) { return json::value(a.only_when_waiting); },
     [](const json::value& v, core::AdmissionConfig& a, const Reading& r) {
       return read_bool(v, a.only_when_waiting, r);
     },
     RoutingScope::stored},
    {"hold_task_starts", [](const core::AdmissionConfig& a) { return json::value(a.hold_task_starts); },
     [](const json::value& v, core::AdmissionConfig& a, const Reading& r) {
       return read_bool(v, a.hold_task_starts, r);
     },
     RoutingScope::stored},
    {"tenant_queue",
     [](const core::AdmissionConfig& a) {
       return a.tenant_queue ? json::value(*a.tenant_queue) : json::value("auto");
     },
     [](const json::value& v, core::AdmissionConfig& a, const Reading& r) {
       return read_auto_count(v, a.tenant_queue, r);
     }},
}};

const std::array<Member<core::CostSpill>, 1> kCostSpill = {{
    {"margin", [](const core::CostSpill& c) { return duration_json(c.margin); },
     [](const json::value& v, core::CostSpill& c, const Reading& r) {
       return read_duration(v, c.margin, std::chrono::milliseconds(0), r, "2s");
     }},
}};

const std::array<Member<core::TaskAdmission>, 4> kTaskAdmission = {{
    {"max_wait", [](const core::TaskAdmission& t) { return duration_json(t.max_wait); },
     [](const json::value& v, core::TaskAdmission& t, const Reading& r) {
       return read_duration(v, t.max_wait, std::chrono::milliseconds(1), r, "8m");
     }},
    {"stream_max_wait",
     [](const core::TaskAdmission& t) {
       return t.stream_max_wait ? duration_json(*t.stream_max_wait) : json::value("auto");
     },
     [](const json::value& v, core::TaskAdmission& t, const Reading& r) {
       return read_auto_duration(v, t.stream_max_wait, r, "30m");
     }},
    {"packing", [](const core::TaskAdmission& t) { return json::value(core::task_packing_name(t.packing)); },
     [](const json::value& v, core::TaskAdmission& t, const Reading& r) {
       return read_name(v, t.packing, core::parse_task_packing, r, "mean, growth, remaining or shared");
     },
     RoutingScope::stored, "\"mean\"|\"growth\"|\"remaining\"|\"shared\""},
    {"interactive_room", [](const core::TaskAdmission& t) { return duration_json(t.interactive_room); },
     [](const json::value& v, core::TaskAdmission& t, const Reading& r) {
       return read_duration(v, t.interactive_room, std::chrono::milliseconds(0), r, "2m");
     }},
}};

// A switch's members: its `mode` besides the members of its list.
static_assert(boost::pfr::tuple_size_v<core::AdmissionConfig> == std::tuple_size_v<decltype(kAdmission)> + 1,
              "every field of core::AdmissionConfig has its entry in kAdmission");
static_assert(boost::pfr::tuple_size_v<core::CostSpill> == std::tuple_size_v<decltype(kCostSpill)> + 1,
              "every field of core::CostSpill has its entry in kCostSpill");
static_assert(boost::pfr::tuple_size_v<core::TaskAdmission> ==
                  std::tuple_size_v<decltype(kTaskAdmission)> + 1,
              "every field of core::TaskAdmission has its entry in kTaskAdmission");

template <class T, std::size_t N>
std::string member_names(const std::array<Member<T>, N>& members, RoutingScope scope,
                         std::string_view first) {
  std::string out(first);
  for (const Member<T>& m : members) {
    if (in_scope(m.scope, scope)) {
      out += fmt::format("{}{}", out.empty() ? "" : ", ", m.name);
    }
  }
  return out;
}

// Applies the members of object `v` (named `r.name`; `first` is a member its caller reads, `part` the part
// of a setting's name its keys are) onto `out`, or says what is wrong.
template <class T, std::size_t N>
Read read_members(const json::object& v, T& out, const std::array<Member<T>, N>& members, const Reading& r,
                  std::string_view first, Part part) {
  const std::string_view where = r.name.empty() ? "routing" : std::string_view(r.name);
  for (const auto& [key, value] : v) {
    const auto member = std::find_if(members.begin(), members.end(), [&](const Member<T>& m) {
      return m.name == key && in_scope(m.scope, r.scope);
    });
    if (member == members.end()) {
      return SettingError{fmt::format("unknown key '{}' in {}; expected one of: {}", std::string_view(key),
                                      where, member_names(members, r.scope, first)),
                          part};
    }
    if (Read read = member->read(value, out, {r.scope, joined(r.name, member->name)}); !read) {
      return read;
    }
  }
  if (v.empty()) {
    return bad(fmt::format("{} {{}} changes nothing; expected one of: {}", where,
                           member_names(members, r.scope, first)));
  }
  return {};
}

// An on/off setting written as a word or as an object with "mode" and more members:
// `admission: "off" | "auto" | {"mode": ..., "max_queue": ...}`, `cost_spill: "off" | "on" | {...}`.
template <class T, std::size_t N>
Read read_switch(const json::value& v, T& out, bool& enabled, std::string_view on,
                 const std::array<Member<T>, N>& members, const Reading& r) {
  const auto mode = [&](const json::value& m, const std::string& name) -> Read {
    if (m.is_string() && (m.as_string() == "off" || m.as_string() == on)) {
      enabled = m.as_string() == on;
      return {};
    }
    return bad(fmt::format("{} must be off or {}", name, on));
  };
  if (!v.is_object()) {
    return mode(v, r.name);
  }
  json::object rest = v.as_object();
  if (const auto* m = rest.if_contains("mode")) {
    if (Read read = mode(*m, joined(r.name, "mode")); !read) {
      return read;
    }
    rest.erase("mode");
    if (rest.empty()) {
      return {};
    }
  }
  return read_members(rest, out, members, r, "mode", Part::member);
}

template <class T, std::size_t N>
json::object write_switch(const T& value, bool enabled, std::string_view on,
                          const std::array<Member<T>, N>& members) {
  json::object out;
  out["mode"] = enabled ? on : "off";
  for (const Member<T>& m : members) {
    out[m.name] = m.write(value);
  }
  return out;
}

Read read_spill_threshold(const json::value& v, core::SpillThreshold& out, const Reading& r) {
  std::optional<core::SpillThreshold> t;
  if (v.is_string()) {
    t = core::SpillThreshold::parse(v.as_string());
  } else if (const auto n = whole_number(v, 1, core::SpillThreshold::max_fixed)) {
    t = core::SpillThreshold{static_cast<std::uint32_t>(*n)};
  }
  if (!t) {
    return bad(fmt::format("{} must be \"auto\" or an integer from 1 to {}", r.name,
                           core::SpillThreshold::max_fixed));
  }
  out = *t;
  return {};
}

Read read_policy(const json::value& v, std::string& out, const Reading& r) {
  const auto names = core::policy_names();
  if (!v.is_string()) {
    return bad(fmt::format("{} must be the name of a routing policy; expected one of: {}", r.name,
                           fmt::join(names, ", ")));
  }
  if (std::find(names.begin(), names.end(), std::string_view(v.as_string())) == names.end()) {
    return bad(fmt::format("{} '{}' is not a routing policy; expected one of: {}", r.name,
                           std::string_view(v.as_string()), fmt::join(names, ", ")));
  }
  out = std::string(v.as_string());
  return {};
}

// The table: every setting of core::RoutingConfig, once.
const std::array<Member<RoutingConfig>, 10> kRouting = {{
    {"affinity", [](const RoutingConfig& c) { return json::value(c.affinity); },
     [](const json::value& v, RoutingConfig& c, const Reading& r) { return read_bool(v, c.affinity, r); },
     RoutingScope::admin, "bool"},
    {"spill_threshold",
     [](const RoutingConfig& c) {
       return c.spill_threshold.fixed ? json::value(*c.spill_threshold.fixed) : json::value("auto");
     },
     [](const json::value& v, RoutingConfig& c, const Reading& r) {
       return read_spill_threshold(v, c.spill_threshold, r);
     },
     RoutingScope::admin, "\"auto\"|N"},
    {"rebalance", [](const RoutingConfig& c) { return json::value(c.rebalance); },
     [](const json::value& v, RoutingConfig& c, const Reading& r) { return read_bool(v, c.rebalance, r); },
     RoutingScope::admin, "bool"},
    {"threads", [](const RoutingConfig& c) { return json::value(c.threads); },
     [](const json::value& v, RoutingConfig& c, const Reading& r) { return read_bool(v, c.threads, r); },
     RoutingScope::admin, "bool"},
    {"cost_spill",
     [](const RoutingConfig& c) {
       return json::value(write_switch(c.cost_spill, c.cost_spill.enabled, "on", kCostSpill));
     },
     [](const json::value& v, RoutingConfig& c, const Reading& r) {
       return read_switch(v, c.cost_spill, c.cost_spill.enabled, "on", kCostSpill, r);
     },
     RoutingScope::admin, "\"on\"|\"off\"|{...}"},
    {"admission",
     [](const RoutingConfig& c) {
       return json::value(write_switch(c.admission, c.admission.enabled, "auto", kAdmission));
     },
     [](const json::value& v, RoutingConfig& c, const Reading& r) {
       return read_switch(v, c.admission, c.admission.enabled, "auto", kAdmission, r);
     },
     RoutingScope::admin, "\"off\"|\"auto\"|{...}"},
    {"task_admission",
     [](const RoutingConfig& c) {
       return json::value(write_switch(c.task_admission, c.task_admission.enabled, "auto", kTaskAdmission));
     },
     [](const json::value& v, RoutingConfig& c, const Reading& r) {
       return read_switch(v, c.task_admission, c.task_admission.enabled, "auto", kTaskAdmission, r);
     },
     RoutingScope::admin, "\"off\"|\"auto\"|{...}"},
    {"policy", [](const RoutingConfig& c) { return json::value(c.policy); },
     [](const json::value& v, RoutingConfig& c, const Reading& r) { return read_policy(v, c.policy, r); },
     RoutingScope::stored, "\"NAME\""},
    {"max_num_seqs", [](const RoutingConfig& c) { return json::value(c.max_num_seqs); },
     [](const json::value& v, RoutingConfig& c, const Reading& r) {
       return read_count(v, c.max_num_seqs, 1, r);
     },
     RoutingScope::stored, "N"},
    {"vllm_balancer",
     [](const RoutingConfig& c) { return json::value(core::vllm_balancer_model_name(c.vllm_balancer)); },
     [](const json::value& v, RoutingConfig& c, const Reading& r) {
       return read_name(v, c.vllm_balancer, core::parse_vllm_balancer_model, r, "current or legacy");
     },
     RoutingScope::stored, "\"current\"|\"legacy\""},
}};

// A field of core::RoutingConfig without its entry does not compile: each reader, the stored form and the
// admin card would miss it.
static_assert(boost::pfr::tuple_size_v<RoutingConfig> == std::tuple_size_v<decltype(kRouting)>,
              "every field of core::RoutingConfig has its entry in kRouting");

const char* const kBodyExample =
    "the body must be a JSON object such as {\"affinity\": false} or {\"spill_threshold\": 4}";

// What holds between settings once each is read: low_water does not exceed high_water.
base::Result<void> check_between(const RoutingConfig& config, std::string_view where) {
  if (config.admission.low_water > config.admission.high_water) {
    return base::Failure{fmt::format("{} must not exceed {}", joined(where, "admission.low_water"),
                                     joined(where, "admission.high_water"))};
  }
  return {};
}

}  // namespace

std::string routing_shape(RoutingScope scope) {
  std::string out;
  for (const Member<RoutingConfig>& m : kRouting) {
    if (in_scope(m.scope, scope)) {
      out += fmt::format("{}\"{}\": {}", out.empty() ? "" : ", ", m.name, m.shape);
    }
  }
  return "{" + out + "}";
}

json::object routing_json(const RoutingConfig& config) {
  json::object out;
  for (const Member<RoutingConfig>& m : kRouting) {
    out[m.name] = m.write(config);
  }
  return out;
}

base::Result<RoutingConfig> patch_routing(RoutingConfig config, const json::value& patch,
                                          RoutingScope scope) {
  if (!patch.is_object()) {
    return std::string(kBodyExample);
  }
  if (Read read = read_members(patch.as_object(), config, kRouting, {scope, ""}, "", Part::key); !read) {
    return base::Failure{read.error().message};
  }
  if (auto checked = check_between(config, ""); !checked) {
    return base::Failure{checked.error()};
  }
  return config;
}

base::Result<RoutingConfig> patch_routing(const RoutingConfig& config, std::string_view body,
                                          RoutingScope scope) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (ec) {
    return std::string(kBodyExample);
  }
  return patch_routing(config, v, scope);
}

json::value text_value(std::string_view text) {
  if (text == "true" || text == "True" || text == "TRUE") {
    return true;
  }
  if (text == "false" || text == "False" || text == "FALSE") {
    return false;
  }
  if (const auto n = base::parse_integer<std::int64_t>(text)) {
    return *n;
  }
  double d = 0;
  const char* end = text.data() + text.size();
  if (const auto [ptr, ec] = std::from_chars(text.data(), end, d);
      !text.empty() && ec == std::errc() && ptr == end && std::isfinite(d)) {
    return d;
  }
  return json::string(text);
}

base::Result<void, SettingError> read_setting(RoutingConfig& config, std::string_view name,
                                              const json::value& value, std::string_view where) {
  const std::size_t dot = name.find('.');
  json::object patch;
  if (dot == std::string_view::npos) {
    patch[name] = value;
  } else {
    patch[name.substr(0, dot)] = json::object{{name.substr(dot + 1), value}};
  }
  RoutingConfig next = config;
  if (Read read =
          read_members(patch, next, kRouting, {RoutingScope::text, std::string(where)}, "", Part::key);
      !read) {
    return read;
  }
  config = std::move(next);
  return {};
}

base::Result<void> check_routing(const RoutingConfig& config, std::string_view where) {
  // Every value as its entry reads it: the table's own JSON of `config`, read back.
  RoutingConfig read_back;
  if (Read read = read_members(routing_json(config), read_back, kRouting,
                               {RoutingScope::stored, std::string(where)}, "", Part::key);
      !read) {
    return base::Failure{read.error().message};
  }
  return check_between(config, where);
}

}  // namespace warden::settings
