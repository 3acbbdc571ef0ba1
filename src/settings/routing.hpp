// The table of a model's routing settings (core::RoutingConfig): one entry per setting, in
// routing.cpp, with its name, its JSON value and how that value is read. Every reader goes
// through it, so they accept the same keys with the same messages: the config file's `routing:`
// (config.cpp, each YAML value converted by text_value), the admin API's PATCH, the routing state database
// (which stores the whole configuration in it), the admin API's model card, and simulate's `--routing`.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>

#include "base/result.hpp"
#include "core/types.hpp"

namespace warden::settings {

// Who writes the settings: the admin API may change the ones an operator tunes at runtime; the stored form
// carries every one (those the config file and the engines fix too: policy, max_num_seqs, vllm_balancer);
// text is every one as the config file and the command line write them, where a boolean may also be
// spelled as YAML reads one (yes, no, on, off).
enum class RoutingScope { admin, stored, text };

// Every setting of `config`, in the table's order: booleans, numbers, words ("auto", a policy's name),
// durations in milliseconds ("2000ms"), and the switches as {"mode": word, member: value...}.
boost::json::object routing_json(const core::RoutingConfig& config);

// The settings a writer in `scope` may send, each with how its value is written: {"affinity": bool, ...}.
std::string routing_shape(RoutingScope scope);

// `config` with the members of `patch` applied; members left out keep their value. An unknown member, a
// member outside `scope`, a bad value or an empty patch is an error fit for the client.
base::Result<core::RoutingConfig> patch_routing(core::RoutingConfig config, const boost::json::value& patch,
                                                RoutingScope scope);

// The same from the body's text (PATCH /api/models/{name}/routing).
base::Result<core::RoutingConfig> patch_routing(const core::RoutingConfig& config, std::string_view body,
                                                RoutingScope scope);

// A value written as text (a scalar of the config file, a flag's value) as the table reads it: true and
// false a boolean, an integer or a finite decimal number a number, anything else the string.
boost::json::value text_value(std::string_view text);

// Why one setting was not read: the message, and which part of the setting's name is wrong (none: its
// value is).
struct SettingError {
  enum class Part { value, key, member };
  std::string message;
  Part part = Part::value;
};

// One setting of the text scope read onto `config`: `name` is a key of the table ("affinity") or a key and
// a member of it ("admission.max_wait", "admission.mode"). Messages name the setting after `where` (e.g.
// "models[0].routing").
base::Result<void, SettingError> read_setting(core::RoutingConfig& config, std::string_view name,
                                              const boost::json::value& value, std::string_view where);

// What holds of a whole configuration, however it was made (a file, flags, a struct filled in code): each
// value is one its entry reads (the water marks above 0 and at most 100, a known policy, ...), and what
// holds between settings: low_water does not exceed high_water. The one spelling of these rules.
base::Result<void> check_routing(const core::RoutingConfig& config, std::string_view where);

}  // namespace warden::settings
