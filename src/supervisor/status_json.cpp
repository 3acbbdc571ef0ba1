#include "supervisor/status_json.hpp"

#include <boost/json/array.hpp>

namespace warden::supervisor {

namespace json = boost::json;

namespace {

json::array text_lines(const std::vector<LogLine>& lines) {
  json::array out;
  for (const auto& l : lines) {
    out.push_back(json::string(l.text));
  }
  return out;
}

json::value optional_text(const std::string& s) {
  return s.empty() ? json::value(nullptr) : json::value(s);
}

}  // namespace

json::object launch_status_json(const Supervisor& sup, const std::vector<Supervisor::EngineId>& ids,
                                const std::vector<std::vector<int>>& replicas, std::size_t tail_lines) {
  std::vector<EngineState> states;
  json::array engines;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const EngineStatus s = sup.status(ids[i]);
    states.push_back(s.state);
    json::object e;
    e["name"] = sup.spec(ids[i]).name;
    json::array reps;
    if (i < replicas.size()) {
      for (int r : replicas[i]) {
        reps.push_back(r);
      }
    }
    e["replicas"] = std::move(reps);
    e["state"] = to_string(s.state);
    e["reason"] = optional_text(s.reason);
    e["pid"] = s.pid > 0 ? json::value(s.pid) : json::value(nullptr);
    e["restarts"] = s.restarts;
    e["since_unix_ms"] = s.since_unix_ms;
    e["last_exit"] = optional_text(s.last_exit);
    e["command"] = s.command;
    e["log_tail"] = text_lines(sup.logs(ids[i], tail_lines));
    engines.push_back(std::move(e));
  }
  json::object out;
  const EngineState worst = worst_state(states);
  out["status"] = to_string(worst);
  out["status_reason"] = nullptr;
  out["log_tail"] = json::array();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (states[i] == worst) {
      const EngineStatus s = sup.status(ids[i]);
      out["status_reason"] = optional_text(s.reason);
      out["log_tail"] = text_lines(sup.logs(ids[i], tail_lines));
      break;
    }
  }
  out["engines"] = std::move(engines);
  return out;
}

json::object logs_json(const Supervisor& sup, std::string_view model,
                       const std::vector<Supervisor::EngineId>& ids, std::size_t lines) {
  json::array engines;
  for (auto id : ids) {
    const EngineStatus s = sup.status(id);
    json::object e;
    e["name"] = sup.spec(id).name;
    e["state"] = to_string(s.state);
    e["pid"] = s.pid > 0 ? json::value(s.pid) : json::value(nullptr);
    json::array ls;
    for (const auto& l : sup.logs(id, lines)) {
      ls.push_back(json::object{{"t_ms", l.unix_ms}, {"stream", to_string(l.stream)}, {"text", l.text}});
    }
    e["lines"] = std::move(ls);
    engines.push_back(std::move(e));
  }
  json::object out;
  out["model"] = model;
  out["engines"] = std::move(engines);
  return out;
}

}  // namespace warden::supervisor
