// The JSON spelling of a model's routing (core::RoutingConfig), one entry per knob in one field list
// (routing_json.cpp): the admin API's PATCH is read through it, and the routing state database stores the
// whole configuration in it. The shapes follow the config file's `routing:` (docs/config.md).
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string_view>

#include "base/result.hpp"
#include "core/types.hpp"

namespace warden::gateway {

// Who writes the JSON: the admin API may change the knobs an operator tunes at runtime; the stored form
// also carries those the config file and the engines fix (policy, max_num_seqs, vllm_balancer).
enum class RoutingScope { admin, stored };

// Every knob of `config`, in the field list's order.
boost::json::object routing_json(const core::RoutingConfig& config);

// `config` with the members of `patch` applied; members left out keep their value. An unknown member, a
// member outside `scope`, a bad value or an empty patch is an error fit for the client.
base::Result<core::RoutingConfig> patch_routing(core::RoutingConfig config, const boost::json::value& patch,
                                                RoutingScope scope);

// The same from the body's text (PATCH /api/models/{name}/routing).
base::Result<core::RoutingConfig> patch_routing(const core::RoutingConfig& config, std::string_view body,
                                                RoutingScope scope);

}  // namespace warden::gateway
