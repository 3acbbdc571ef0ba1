// JSON shapes of launched engines for the admin API (docs/api.md, docs/engines.md): the status block
// merged into a model's object, and the logs answer. Pure over the Supervisor's state.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <vector>

#include "supervisor/supervisor.hpp"

namespace warden::supervisor {

// {"status", "status_reason", "log_tail": [...], "engines": [{...}, ...]} for the engines of one model;
// the status is the worst of theirs, the reason and log tail those of the first engine in that state.
boost::json::object launch_status_json(const Supervisor& sup, const std::vector<Supervisor::EngineId>& ids,
                                       const std::vector<std::vector<int>>& replicas, std::size_t tail_lines);

// GET /api/models/{name}/logs: {"model", "engines": [{"name", "pid", "state", "lines": [{t, stream,
// text}]}]}.
boost::json::object logs_json(const Supervisor& sup, std::string_view model,
                              const std::vector<Supervisor::EngineId>& ids, std::size_t lines);

}  // namespace warden::supervisor
