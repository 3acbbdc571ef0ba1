#include "gateway/config/routing_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "base/parse.hpp"
#include "core/policy.hpp"

namespace warden::gateway {

namespace json = boost::json;
using core::RoutingConfig;

namespace {

// What reading a member did: nothing to return, or what is wrong with its value.
using Read = base::Result<void>;

// One member of a JSON object over a value of type T: how it is written, and how it is read.
template <class T>
struct Member {
  std::string_view name;
  json::value (*write)(const T&);
  Read (*read)(const json::value&, T&, RoutingScope);
  RoutingScope scope = RoutingScope::admin;  // admin: in both scopes; stored: in the stored form only
};

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

Read read_bool(const json::value& v, bool& out, std::string_view name) {
  if (!v.is_bool()) {
    return base::Failure{fmt::format("{} must be true or false", name)};
  }
  out = v.as_bool();
  return {};
}

Read read_duration(const json::value& v, core::Time& out, std::chrono::milliseconds min,
                   std::string_view name, std::string_view example) {
  const auto t = duration_value(v, min);
  if (!t) {
    return base::Failure{
        fmt::format("{} must be a duration such as \"{}\" or a number of seconds", name, example)};
  }
  out = *t;
  return {};
}

Read read_water(const json::value& v, double& out, std::string_view name) {
  if (!v.is_number() || !(v.to_number<double>() > 0) || v.to_number<double>() > 100) {
    return base::Failure{
        fmt::format("admission.{} must be a number above 0 (a fraction of the KV capacity)", name)};
  }
  out = v.to_number<double>();
  return {};
}

const std::array<Member<core::AdmissionConfig>, 5> kAdmission = {{
    {"max_queue", [](const core::AdmissionConfig& a) { return json::value(a.max_queue); },
     [](const json::value& v, core::AdmissionConfig& a, RoutingScope) -> Read {
       const auto n = whole_number(v, 0, 1'000'000);
       if (!n) {
         return base::Failure{"admission.max_queue must be an integer from 0 to 1000000"};
       }
       a.max_queue = static_cast<std::uint32_t>(*n);
       return {};
     }},
    {"max_wait", [](const core::AdmissionConfig& a) { return duration_json(a.max_wait); },
     [](const json::value& v, core::AdmissionConfig& a, RoutingScope) {
       return read_duration(v, a.max_wait, std::chrono::milliseconds(1), "admission.max_wait", "30s");
     }},
    {"high_water", [](const core::AdmissionConfig& a) { return json::value(a.high_water); },
     [](const json::value& v, core::AdmissionConfig& a, RoutingScope) {
       return read_water(v, a.high_water, "high_water");
     },
     RoutingScope::stored},
    {"low_water", [](const core::AdmissionConfig& a) { return json::value(a.low_water); },
     [](const json::value& v, core::AdmissionConfig& a, RoutingScope) {
       return read_water(v, a.low_water, "low_water");
     },
     RoutingScope::stored},
    {"when_waiting", [](const core::AdmissionConfig& a) { return json::value(a.only_when_waiting); },
     [](const json::value& v, core::AdmissionConfig& a, RoutingScope) {
       return read_bool(v, a.only_when_waiting, "admission.when_waiting");
     },
     RoutingScope::stored},
}};

const std::array<Member<core::CostSpill>, 1> kCostSpill = {{
    {"margin", [](const core::CostSpill& c) { return duration_json(c.margin); },
     [](const json::value& v, core::CostSpill& c, RoutingScope) {
       return read_duration(v, c.margin, std::chrono::milliseconds(0), "cost_spill.margin", "2s");
     }},
}};

const std::array<Member<core::TaskAdmission>, 1> kTaskAdmission = {{
    {"max_wait", [](const core::TaskAdmission& t) { return duration_json(t.max_wait); },
     [](const json::value& v, core::TaskAdmission& t, RoutingScope) {
       return read_duration(v, t.max_wait, std::chrono::milliseconds(1), "task_admission.max_wait", "8m");
     }},
}};

template <class T, std::size_t N>
std::string member_names(const std::array<Member<T>, N>& members, RoutingScope scope) {
  std::string out;
  for (const Member<T>& m : members) {
    if (scope == RoutingScope::stored || m.scope == RoutingScope::admin) {
      out += fmt::format("{}{}", out.empty() ? "" : ", ", m.name);
    }
  }
  return out;
}

// Applies the members of object `v` (at `where`) onto `out`, or says what is wrong.
template <class T, std::size_t N>
Read read_members(const json::object& v, T& out, const std::array<Member<T>, N>& members, RoutingScope scope,
                  std::string_view where) {
  for (const auto& [key, value] : v) {
    const Member<T>* member = nullptr;
    for (const Member<T>& m : members) {
      if (m.name == key && (scope == RoutingScope::stored || m.scope == RoutingScope::admin)) {
        member = &m;
      }
    }
    if (!member) {
      return fmt::format("unknown field '{}{}'; expected {}", where, std::string_view(key),
                         member_names(members, scope));
    }
    if (Read read = member->read(value, out, scope); !read) {
      return read;
    }
  }
  if (v.empty()) {
    return fmt::format("{}{{}} changes nothing; expected {}", where, member_names(members, scope));
  }
  return {};
}

// An on/off knob written as a word or as an object with "mode" and more members:
// `admission: "off" | "auto" | {"mode": ..., "max_queue": ...}`, `cost_spill: "off" | "on" | {...}`.
template <class T, std::size_t N>
Read read_switch(const json::value& v, T& out, bool& enabled, std::string_view name, std::string_view on,
                 const std::array<Member<T>, N>& members, RoutingScope scope) {
  const auto mode = [&](const json::value& m) -> Read {
    if (m.is_string() && (m.as_string() == "off" || m.as_string() == on)) {
      enabled = m.as_string() == on;
      return {};
    }
    return base::Failure{fmt::format("{} mode must be \"off\" or \"{}\"", name, on)};
  };
  if (!v.is_object()) {
    return mode(v);
  }
  json::object rest = v.as_object();
  if (const auto* m = rest.if_contains("mode")) {
    if (Read read = mode(*m); !read) {
      return read;
    }
    rest.erase("mode");
    if (rest.empty()) {
      return {};
    }
  }
  return read_members(rest, out, members, scope, fmt::format("{}.", name));
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

// The field list: every knob of core::RoutingConfig, once.
const std::array<Member<RoutingConfig>, 10> kRouting = {{
    {"affinity", [](const RoutingConfig& c) { return json::value(c.affinity); },
     [](const json::value& v, RoutingConfig& c, RoutingScope) {
       return read_bool(v, c.affinity, "affinity");
     }},
    {"spill_threshold", [](const RoutingConfig& c) { return json::value(c.spill_threshold.to_string()); },
     [](const json::value& v, RoutingConfig& c, RoutingScope) -> Read {
       std::optional<core::SpillThreshold> t;
       if (v.is_string()) {
         t = core::SpillThreshold::parse(v.as_string());
       } else if (const auto n = whole_number(v, 1, core::SpillThreshold::max_fixed)) {
         t = core::SpillThreshold{static_cast<std::uint32_t>(*n)};
       }
       if (!t) {
         return base::Failure{"spill_threshold must be \"auto\" or an integer from 1 to 1000000"};
       }
       c.spill_threshold = *t;
       return {};
     }},
    {"rebalance", [](const RoutingConfig& c) { return json::value(c.rebalance); },
     [](const json::value& v, RoutingConfig& c, RoutingScope) {
       return read_bool(v, c.rebalance, "rebalance");
     }},
    {"threads", [](const RoutingConfig& c) { return json::value(c.threads); },
     [](const json::value& v, RoutingConfig& c, RoutingScope) { return read_bool(v, c.threads, "threads"); }},
    {"cost_spill",
     [](const RoutingConfig& c) {
       return json::value(write_switch(c.cost_spill, c.cost_spill.enabled, "on", kCostSpill));
     },
     [](const json::value& v, RoutingConfig& c, RoutingScope scope) {
       return read_switch(v, c.cost_spill, c.cost_spill.enabled, "cost_spill", "on", kCostSpill, scope);
     }},
    {"admission",
     [](const RoutingConfig& c) {
       return json::value(write_switch(c.admission, c.admission.enabled, "auto", kAdmission));
     },
     [](const json::value& v, RoutingConfig& c, RoutingScope scope) {
       return read_switch(v, c.admission, c.admission.enabled, "admission", "auto", kAdmission, scope);
     }},
    {"task_admission",
     [](const RoutingConfig& c) {
       return json::value(write_switch(c.task_admission, c.task_admission.enabled, "auto", kTaskAdmission));
     },
     [](const json::value& v, RoutingConfig& c, RoutingScope scope) {
       return read_switch(v, c.task_admission, c.task_admission.enabled, "task_admission", "auto",
                          kTaskAdmission, scope);
     }},
    {"policy", [](const RoutingConfig& c) { return json::value(c.policy); },
     [](const json::value& v, RoutingConfig& c, RoutingScope) -> Read {
       const auto names = core::policy_names();
       if (!v.is_string() ||
           std::find(names.begin(), names.end(), std::string_view(v.as_string())) == names.end()) {
         return base::Failure{"policy must be the name of a routing policy"};
       }
       c.policy = std::string(v.as_string());
       return {};
     },
     RoutingScope::stored},
    {"max_num_seqs", [](const RoutingConfig& c) { return json::value(c.max_num_seqs); },
     [](const json::value& v, RoutingConfig& c, RoutingScope) -> Read {
       const auto n = whole_number(v, 1, 1'000'000);
       if (!n) {
         return base::Failure{"max_num_seqs must be an integer from 1 to 1000000"};
       }
       c.max_num_seqs = static_cast<std::uint32_t>(*n);
       return {};
     },
     RoutingScope::stored},
    {"vllm_balancer",
     [](const RoutingConfig& c) { return json::value(core::vllm_balancer_model_name(c.vllm_balancer)); },
     [](const json::value& v, RoutingConfig& c, RoutingScope) -> Read {
       const auto model = v.is_string() ? core::parse_vllm_balancer_model(v.as_string()) : std::nullopt;
       if (!model) {
         return base::Failure{"vllm_balancer must be \"current\" or \"legacy\""};
       }
       c.vllm_balancer = *model;
       return {};
     },
     RoutingScope::stored},
}};

}  // namespace

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
    return std::string(
        "the body must be a JSON object such as {\"affinity\": false} or {\"spill_threshold\": 4}");
  }
  if (Read read = read_members(patch.as_object(), config, kRouting, scope, ""); !read) {
    return base::Failure{read.error()};
  }
  if (config.admission.low_water > config.admission.high_water) {
    return std::string("admission.low_water must not exceed admission.high_water");
  }
  return config;
}

base::Result<RoutingConfig> patch_routing(const RoutingConfig& config, std::string_view body,
                                          RoutingScope scope) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  if (ec) {
    return std::string(
        "the body must be a JSON object such as {\"affinity\": false} or {\"spill_threshold\": 4}");
  }
  return patch_routing(config, v, scope);
}

}  // namespace warden::gateway
