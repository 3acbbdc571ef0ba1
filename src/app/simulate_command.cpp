// `lm-warden simulate`: the what-if run (src/whatif) behind a command line; docs/simulator.md.
#include <fmt/core.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app/agentic_options.hpp"
#include "app/cli.hpp"
#include "app/placement_overrides.hpp"
#include "app/routing_options.hpp"
#include "base/parse.hpp"
#include "base/result.hpp"
#include "engine/presets.hpp"
#include "report/groups.hpp"
#include "report/report.hpp"
#include "report/svg.hpp"
#include "whatif/calibration.hpp"
#include "whatif/driver.hpp"

namespace warden::app {

namespace {

struct SimulateOptions {
  std::string preset = "a4000-qwen3-4b";
  std::string preset_file;
  std::uint32_t replicas = 4;
  std::string levels = "4,8,16,24,32";
  std::string duration = "3m";
  std::string policies;
  std::string compare;
  std::uint64_t seed = 1;
  bool warm_start = false;
  bool kv_events = false;
  std::uint32_t wardens = 1;
  std::string restart;  // "R@DURATION"
  bool carry_over = false;
  std::string scrape_interval = "1s";
  std::string client_rtt = "0";
  std::string think_time = "0";
  std::string think_jitter = "0";
  std::string timeline = "0";
  double resident_gaps = 2.0;
  std::string min_resident = "3s";
  std::uint32_t vllm_api_servers = 0;
  std::string tenants;
  double direct_share = 0;
  std::string direct_rule = "vllm-lb";
  bool fair_shares = true;
  bool classes = true;
  bool keep_alive = true;
  std::string out;
  std::string svg;
  std::string timeline_svg;
  bool vs_reference = false;
  bool placement_overrides = false;
  std::string workload = "claude-code";
  // Unset: the workload preset's.
  std::optional<std::size_t> system_tokens, first_tokens, turn_tokens, turns, max_output;
  AgenticFlags agentic;
  RoutingFlags routing;                              // the settings of core::RoutingConfig given
  std::map<std::string, std::string> engine_params;  // flag name -> value, only those given
};

std::vector<std::string> split(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string_view piece =
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (!piece.empty()) {
      out.emplace_back(piece);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    start = comma + 1;
  }
  return out;
}

int fail(const std::string& message) {
  fmt::print(stderr, "lm-warden simulate: {}\n", message);
  return 2;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  return static_cast<bool>(f);
}

// The engine: a preset, optionally replaced by a preset file, then single parameters on top.
// reply_median / reply_sigma describe the workload's replies here: they set `replies` (default off).
base::Result<engine::EngineConfig> engine_from(const SimulateOptions& o, engine::ReplyLength& replies) {
  auto preset = engine::find_preset(o.preset);
  if (!preset) {
    return base::Failure{
        fmt::format("unknown preset '{}' (known: {})", o.preset, fmt::join(engine::preset_names(), ", "))};
  }
  engine::EngineConfig config = std::move(*preset);
  if (!o.preset_file.empty()) {
    std::ifstream f(o.preset_file, std::ios::binary);
    if (!f) {
      return base::Failure{"cannot read preset file " + o.preset_file};
    }
    std::stringstream text;
    text << f.rdbuf();
    auto parsed = engine::parse_preset_yaml(text.str(), config);
    if (!parsed) {
      return base::Failure{parsed.error().message};
    }
    config = std::move(*parsed);
  }
  engine::EngineConfig reply_holder;  // only its `reply` is read
  for (const auto& [key, value] : o.engine_params) {
    engine::EngineConfig& target = key.starts_with("reply_") ? reply_holder : config;
    if (auto ok = engine::set_param(target, key, value); !ok) {
      return base::Failure{ok.error().message};
    }
  }
  replies = reply_holder.reply;
  return config;
}

// The knobs of policy `admission` that are the what-if driver's own (the routing's are RoutingFlags').
base::Result<void> admission_from(const SimulateOptions& o, whatif::SimulationConfig& c) {
  const auto min_resident = base::parse_seconds(o.min_resident);
  if (!min_resident) {
    return std::string("--min-resident is a duration: 3s, 500ms");
  }
  c.admission_gap_factor = o.resident_gaps;
  c.admission_min_window = *min_resident;
  return apply_routing_options(o.routing, c.routing);
}

// Levels and durations from their command-line spelling.
base::Result<void> timing_from(const SimulateOptions& o, whatif::SimulationConfig& c) {
  c.levels.clear();
  for (const auto& piece : split(o.levels)) {
    const auto level = base::parse_integer<int>(piece);
    if (!level) {
      return "--levels needs comma-separated session counts, got '" + o.levels + "'";
    }
    c.levels.push_back(*level);
  }
  const auto duration = base::parse_seconds(o.duration);
  const auto scrape = base::parse_seconds(o.scrape_interval);
  const auto rtt = base::parse_seconds(o.client_rtt);
  const auto think = base::parse_seconds(o.think_time);
  const auto jitter = base::parse_seconds(o.think_jitter);
  const auto timeline = base::parse_seconds(o.timeline);
  if (!duration || !scrape || !rtt || !think || !jitter || !timeline) {
    return std::string("durations are numbers with an optional unit: 180, 180s, 3m, 100ms");
  }
  c.duration = *duration;
  c.scrape_interval = *scrape;
  c.client_rtt = *rtt;
  c.think_jitter = *jitter;
  c.timeline = *timeline;
  if (!o.timeline_svg.empty() && !(c.timeline > 0)) {
    return std::string("--timeline-svg needs --timeline (the interval of the timeline)");
  }
  c.workload.think_time = *think;
  return admission_from(o, c);
}

// Interactive sessions, tenants, and the warden's keeping held streams alive.
base::Result<void> clients_from(const SimulateOptions& o, whatif::SimulationConfig& c) {
  auto tenants = parse_tenant_shares(o.tenants);
  if (!tenants) {
    return base::Failure{tenants.error()};
  }
  c.tenants = *tenants;
  c.direct.share = o.direct_share;
  c.direct.rule = o.direct_rule == "hash" ? whatif::SimulationConfig::DirectRule::hash
                                          : whatif::SimulationConfig::DirectRule::vllm_lb;
  c.fair_shares = o.fair_shares;
  c.classes = o.classes;
  c.keep_alive = o.keep_alive;
  return {};
}

// --compare A,B is the reference method: A over every level, then B on warm engines.
base::Result<void> policies_from(const SimulateOptions& o, whatif::SimulationConfig& c) {
  const std::vector<std::string> compare = split(o.compare);
  if (!o.compare.empty()) {
    if (compare.size() != 2) {
      return std::string("--compare needs two policies: A,B (e.g. vllm-lb,affinity)");
    }
    c.policies = compare;
    c.warm_start = true;
  } else if (!o.policies.empty()) {
    c.policies = split(o.policies);
  } else {
    c.policies = {"affinity"};
  }
  if (o.vs_reference && compare.empty()) {
    return std::string("--vs-reference needs --compare OFF,ON (e.g. vllm-lb,affinity)");
  }
  return {};
}

// --restart-replica R@DURATION.
base::Result<whatif::SimulationConfig::Restart> parse_restart(std::string_view text) {
  const auto at = text.find('@');
  const auto replica = base::parse_integer<std::uint32_t>(text.substr(0, at));
  const auto after = at == std::string_view::npos ? std::nullopt : base::parse_seconds(text.substr(at + 1));
  if (!replica || !after || *after < 0) {
    return base::Failure{fmt::format("--restart-replica {}: expected R@DURATION, e.g. 0@30m", text)};
  }
  return whatif::SimulationConfig::Restart{*replica, *after};
}

base::Result<whatif::SimulationConfig> simulation_from(const SimulateOptions& o) {
  whatif::SimulationConfig c;
  auto engine = engine_from(o, c.replies);
  if (!engine) {
    return base::Failure{engine.error()};
  }
  c.engine = std::move(*engine);
  c.replicas = o.replicas;
  c.vllm_api_servers = o.vllm_api_servers;
  c.seed = o.seed;
  c.warm_start = o.warm_start;
  c.kv_events = o.kv_events;
  c.wardens = o.wardens;
  if (!o.restart.empty()) {
    auto restart = parse_restart(o.restart);
    if (!restart) {
      return base::Failure{restart.error()};
    }
    c.restart = *restart;
  }
  c.carry_over = o.carry_over;
  auto preset = workload::preset(o.workload);
  if (!preset) {
    return base::Failure{preset.error()};
  }
  c.workload = *preset;
  c.workload.seed = o.seed;
  c.workload.system_tokens = o.system_tokens.value_or(c.workload.system_tokens);
  c.workload.first_tokens = o.first_tokens.value_or(c.workload.first_tokens);
  c.workload.turn_tokens = o.turn_tokens.value_or(c.workload.turn_tokens);
  c.workload.turns = o.turns.value_or(c.workload.turns);
  c.workload.max_output = o.max_output.value_or(c.workload.max_output);
  // Agents compact their history as it nears the window of the model they talk to.
  c.workload.agentic.context_window = c.engine.max_model_len;
  if (auto ok = apply_agentic_options(o.agentic, c.workload.agentic); !ok) {
    return base::Failure{ok.error()};
  }
  if (auto ok = timing_from(o, c); !ok) {
    return base::Failure{ok.error()};
  }
  if (auto ok = clients_from(o, c); !ok) {
    return base::Failure{ok.error()};
  }
  if (auto ok = policies_from(o, c); !ok) {
    return base::Failure{ok.error()};
  }
  if (auto ok = whatif::validate(c); !ok) {
    return base::Failure{ok.error()};
  }
  return c;
}

// Per level of the policies that hold requests (affinity's task admission included): how many requests
// were held, how long, and any refused; and the size of a task the Router measured.
void print_admission(const whatif::Outcome& outcome) {
  for (const whatif::LevelStats& l : outcome.levels) {
    if (l.held == 0 && l.refused == 0 && l.task_tokens <= 0) {
      continue;
    }
    const double mean = l.held > 0 ? l.held_seconds / static_cast<double>(l.held) : 0.0;
    fmt::print(
        "{} {:>3} sessions: held {} of {} requests (mean wait {:.1f} s, queue peak {}), refused {}; task "
        "size {:.0f} tokens\n",
        l.policy, l.sessions, l.held, l.requests, mean, l.max_held, l.refused, l.task_tokens);
  }
}

// One group's figures in a level (whatif::GroupStats): tasks/h, tasks/h per agent, and the task starts'
// waits at the warden.
report::GroupRow figures_of(const whatif::LevelStats& l, const whatif::GroupStats& g) {
  report::GroupRow row = report::group_row(report::AgentGroup{g.name, g.agents}, g.tasks, l.end - l.begin,
                                           g.start_waits, g.start_ttfbs);
  row.hits = report::hit_percent(g.cached_tokens, g.prompt_tokens);
  return row;
}

// Per level with groups (interactive sessions, tenants, the other client's agents): each group's tasks/h, per
// agent, its prefix hits, and how long its task starts waited at the warden.
void print_groups(const whatif::Outcome& outcome) {
  report::Grid grid = report::group_grid_header();
  for (const whatif::LevelStats& l : outcome.levels) {
    std::vector<report::GroupRow> rows;
    for (const whatif::GroupStats& g : l.groups) {
      rows.push_back(figures_of(l, g));
    }
    report::append_group_grid(grid, l.policy, l.sessions, rows);
  }
  if (grid.size() > 1) {
    fmt::print(
        "\nBy class of work, tenant and client (task starts sent in the window: their wait held at the "
        "warden, "
        "their TTFB):\n\n{}",
        report::grid_terminal(grid));
  }
}

boost::json::array groups_json(const whatif::Outcome& outcome) {
  boost::json::array out;
  for (const whatif::LevelStats& l : outcome.levels) {
    for (const whatif::GroupStats& g : l.groups) {
      out.push_back(report::group_json(l.policy, l.sessions, figures_of(l, g)));
    }
  }
  return out;
}

// Policy `ceiling` (every request after a task's first one finds its prefix cached): each other policy's
// tasks/h as a share of it, level by level.
void print_ceiling(const std::vector<report::Row>& rows) {
  const auto is_ceiling = [](const report::Row& r) {
    const whatif::SimulatePolicy* p = whatif::find_policy(r.policy);
    return p != nullptr && p->settings.ceiling;
  };
  for (const report::Row& c : rows) {
    if (!is_ceiling(c) || !c.tasks_per_hour || *c.tasks_per_hour <= 0) {
      continue;
    }
    fmt::print("ceiling {:>3} agents: {:.0f} tasks/h;", c.sessions, *c.tasks_per_hour);
    for (const report::Row& r : rows) {
      if (!is_ceiling(r) && r.sessions == c.sessions && r.tasks_per_hour) {
        fmt::print(" {} {:.0f} ({:.0f} %)", r.policy, *r.tasks_per_hour,
                   100.0 * *r.tasks_per_hour / *c.tasks_per_hour);
      }
    }
    fmt::print("\n");
  }
}

void print_outcome(const SimulateOptions& o, const whatif::SimulationConfig& c,
                   const std::vector<report::Row>& rows) {
  fmt::print(
      "lm-warden simulate: {} x {} replicas (num_gpu_blocks {}, max_num_seqs {}), levels {} x {}s, "
      "think {}s, client rtt {}s, seed {}\n\n",
      c.engine.preset, c.replicas, engine::resolve_cache(c.engine).num_gpu_blocks, c.engine.max_num_seqs,
      fmt::join(c.levels, ","), c.duration, c.workload.think_time, c.client_rtt, c.seed);
  const std::vector<std::string> compare = split(o.compare);
  if (compare.size() == 2) {
    fmt::print("{}", report::comparison_terminal(rows, compare[0], compare[1]));
  } else {
    fmt::print("{}", report::to_terminal(rows));
  }
  if (o.vs_reference) {
    fmt::print("\nAgainst the reference table ({} = off, {} = on):\n\n{}\n", compare[0], compare[1],
               whatif::side_by_side_markdown(rows, compare[0], compare[1]));
    fmt::print("{}",
               whatif::calibration_summary(whatif::check_against_reference(rows, compare[0], compare[1])));
  }
}

std::vector<report::TimelinePoint> timeline_of(const whatif::Outcome& outcome) {
  std::vector<report::TimelinePoint> points;
  for (const whatif::LevelStats& l : outcome.levels) {
    points.insert(points.end(), l.timeline.begin(), l.timeline.end());
  }
  return points;
}

report::Report report_of(const whatif::SimulationConfig& c, const whatif::Outcome& outcome) {
  report::Report rep;
  rep.rows = outcome.rows;
  rep.meta["tool"] = "lm-warden simulate";
  rep.meta["preset"] = c.engine.preset;
  rep.meta["engine"] = engine::to_yaml(whatif::engine_config(c));
  rep.meta["replicas"] = c.replicas;
  rep.meta["duration_s"] = c.duration;
  rep.meta["seed"] = c.seed;
  rep.meta["workload"] = c.workload.agentic.enabled ? "agentic" : "claude-code";
  rep.meta["think_time_s"] = c.workload.think_time;
  rep.meta["client_rtt_s"] = c.client_rtt;
  rep.meta["scrape_interval_s"] = c.scrape_interval;
  rep.meta["warm_start"] = c.warm_start;
  if (c.kv_events) {
    rep.meta["kv_events"] = true;
  }
  if (c.wardens > 1) {
    rep.meta["wardens"] = c.wardens;
  }
  if (c.direct.share > 0) {
    rep.meta["direct_share"] = c.direct.share;
    rep.meta["direct_rule"] =
        c.direct.rule == whatif::SimulationConfig::DirectRule::hash ? "hash" : "vllm-lb";
  }
  rep.meta["carry_over"] = c.carry_over;
  boost::json::array policies;
  for (const auto& p : c.policies) {
    policies.emplace_back(p);
  }
  rep.meta["policies"] = std::move(policies);
  rep.meta["model_seconds"] = outcome.model_seconds;
  if (boost::json::array groups = groups_json(outcome); !groups.empty()) {
    rep.meta["groups"] = std::move(groups);
    rep.meta["interactive"] = c.workload.agentic.interactive;
    rep.meta["fair_shares"] = c.fair_shares;
    rep.meta["classes"] = c.classes;
  }
  if (!c.keep_alive) {
    rep.meta["keep_alive"] = false;
  }
  rep.timeline = timeline_of(outcome);
  return rep;
}

std::string timeline_title(const whatif::SimulationConfig& c) {
  return fmt::format("Prefix hits and tasks over each level: {} x {}, seed {}", c.replicas, c.engine.preset,
                     c.seed);
}

base::Result<void> write_outputs(const SimulateOptions& o, const whatif::SimulationConfig& c,
                                 const whatif::Outcome& outcome) {
  if (!o.out.empty()) {
    const auto text = report::render_for_path(o.out, report_of(c, outcome));
    if (!text) {
      return std::string("--out needs a .json, .csv or .md file name");
    }
    if (!write_file(o.out, *text)) {
      return "cannot write " + o.out;
    }
  }
  if (!o.svg.empty() && !write_file(o.svg, report::ttfb_svg(outcome.rows))) {
    return "cannot write " + o.svg;
  }
  if (!o.timeline_svg.empty() &&
      !write_file(o.timeline_svg, report::timeline_svg(timeline_of(outcome), timeline_title(c)))) {
    return "cannot write " + o.timeline_svg;
  }
  return {};
}

int run_simulate(const SimulateOptions& o) {
  const auto c = simulation_from(o);
  if (!c) {
    return fail(c.error());
  }
  PlacementOverrides overrides;
  whatif::Hooks hooks;
  if (o.placement_overrides) {
    hooks.on_decision = [&](const whatif::DecisionTrace& t) { overrides.observe(t); };
  }
  const auto outcome = whatif::simulate(*c, hooks);
  if (!outcome) {
    return fail(outcome.error());
  }
  print_outcome(o, *c, outcome->rows);
  print_admission(*outcome);
  print_groups(*outcome);
  if (const auto points = timeline_of(*outcome); !points.empty()) {
    fmt::print("\nTimeline (every {}s of each level's window):\n\n{}", c->timeline,
               report::timeline_terminal(points));
  }
  print_ceiling(outcome->rows);
  fmt::print("{}", overrides.summary());
  if (auto ok = write_outputs(o, *c, *outcome); !ok) {
    return fail(ok.error());
  }
  return 0;
}

// The what-if driver's own knobs of the policies (the routing's are add_routing_options').
void add_policy_options(CLI::App& cmd, SimulateOptions& o) {
  cmd.add_option(
         "--resident-gaps", o.resident_gaps,
         "Policy admission: a conversation stays resident this many typical turn gaps after its last turn")
      ->capture_default_str();
  cmd.add_option("--min-resident", o.min_resident, "Policy admission: ... but at least this long")
      ->capture_default_str();
}

// An on/off flag over `value` (its default the value's).
void add_switch(CLI::App& cmd, const std::string& name, bool& value, const std::string& help,
                const std::string& group) {
  cmd.add_option_function<std::string>(
         name,
         [&value, name](const std::string& v) {
           if (v != "on" && v != "off") {
             throw CLI::ValidationError(name, "on or off");
           }
           value = v == "on";
         },
         help)
      ->default_str(value ? "on" : "off")
      ->group(group);
}

// Who the agents are: interactive sessions beside the headless ones, tenants, and whether the warden keeps
// their held streams alive.
void add_clients_options(CLI::App& cmd, SimulateOptions& o) {
  const char* group = "Classes of work and tenants (--workload agentic)";
  cmd.add_option("--tenants", o.tenants,
                 "The headless agents split between tenants in these proportions, each tenant's agents "
                 "sending its own key (20,6: 20 and 6 of 26 agents; default none)")
      ->group(group);
  cmd.add_option(
         "--direct-share", o.direct_share,
         "This share of each level's headless agents (to the nearest agent) belongs to another client "
         "that sends straight to the replicas, never through the warden (0.25: 7 of 26; default 0)")
      ->check(CLI::Range(0.0, 1.0))
      ->group(group);
  cmd.add_option("--direct-rule", o.direct_rule,
                 "Where the other client sends each request: vllm-lb (pointed at vLLM's own port, its "
                 "balancer picks the rank) or hash (each session pinned to a replica by a hash of its id)")
      ->check(CLI::IsMember({"vllm-lb", "hash"}))
      ->capture_default_str()
      ->group(group);
  add_switch(cmd, "--fair-shares", o.fair_shares,
             "With --tenants: the agents send their tenant's key, held starts go by fair share (on), or send "
             "none, one fleet first come first served (off; the figures still per tenant)",
             group);
  add_switch(
      cmd, "--classes", o.classes,
      "With --interactive: the interactive sessions' requests say class interactive (on), or headless, "
      "held like the rest as before classes of work (off; the figures still apart)",
      group);
  add_switch(cmd, "--keep-alive", o.keep_alive,
             "The warden keeps the agents' held streams alive, so a held task start waits up to "
             "task_admission.stream_max_wait (on), or up to task_admission.max_wait, 8 min, as before (off)",
             group);
}

// One flag per engine parameter (--max-num-seqs, ...), over the preset's value.
void add_engine_options(CLI::App& cmd, const std::shared_ptr<SimulateOptions>& o) {
  for (const std::string& name : engine::param_names()) {
    if (name.starts_with("tool_")) {
      continue;  // the workload's tool rounds (--tool-rounds above), not the engine's tool-call answers
    }
    std::string flag = name;
    for (char& ch : flag) {
      if (ch == '_') {
        ch = '-';
      }
    }
    cmd.add_option_function<std::string>(
           "--" + flag, [o, name](const std::string& v) { o->engine_params[name] = v; },
           name.starts_with("reply_")
               ? "Replies of the workload: " + name + " (default 0: every reply runs to --max-output)"
               : "Engine parameter " + name + " (overrides the preset)")
        ->group("Engine");
  }
}

}  // namespace

void add_simulate_command(CLI::App& app) {
  auto o = std::make_shared<SimulateOptions>();
  auto* cmd = app.add_subcommand(
      "simulate",
      "What-if run in virtual time: the workload, the routing code and the engine model (seconds)");
  cmd->add_option("--preset", o->preset, "Engine preset of every replica")->capture_default_str();
  cmd->add_option("--preset-file", o->preset_file, "YAML of engine parameters (optional `preset:` base)");
  cmd->add_option("--replicas", o->replicas, "Number of replicas (DP ranks)")->capture_default_str();
  cmd->add_option("--levels", o->levels, "Concurrent sessions per level, comma-separated")
      ->capture_default_str();
  cmd->add_option("--duration", o->duration, "Model time per level (180, 180s, 3m)")->capture_default_str();
  cmd->add_option("--policies", o->policies,
                  "Policies to run one after the other: " + whatif::simulate_policies_help());
  cmd->add_option("--compare", o->compare,
                  "A,B: the reference method (A over all levels, then B, warm caches)");
  cmd->add_option("--seed", o->seed, "Seed of the prompts and of routing ties")->capture_default_str();
  cmd->add_flag("--warm-start", o->warm_start, "Keep engine caches from one policy to the next");
  cmd->add_flag("--kv-events", o->kv_events,
                "The warden listens to every engine's KV cache events (what each replica holds is known, not "
                "estimated)");
  cmd->add_option(
      "--restart-replica", o->restart,
      "R@DURATION: replica R's engine restarts DURATION into every level (its requests fail and are "
      "sent again; its cache and KV events start over)");
  cmd->add_option("--wardens", o->wardens,
                  "Wardens with no shared state, each request sent to one at random (default 1)")
      ->check(CLI::Range(1, 16));
  cmd->add_flag("--carry-over", o->carry_over,
                "Sessions run on from one level into the next, which adds sessions to them (no drain "
                "between levels); the chat workload only");
  cmd->add_option("--think-jitter", o->think_jitter, "Extra client time per turn, uniform in [0, J)")
      ->capture_default_str();
  cmd->add_option("--scrape-interval", o->scrape_interval, "Warden metrics scrape period")
      ->capture_default_str();
  cmd->add_option("--client-rtt", o->client_rtt, "Client <-> warden round trip (counted in TTFB)")
      ->capture_default_str();
  add_routing_options(*cmd, o->routing);
  add_policy_options(*cmd, *o);
  add_clients_options(*cmd, *o);
  cmd->add_option("--vllm-api-servers", o->vllm_api_servers,
                  "vLLM API server processes (0 = one per replica)")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "Write the rows to FILE (.json, .csv, .md)");
  cmd->add_option("--svg", o->svg, "Write the TTFB chart to FILE");
  cmd->add_option(
         "--timeline", o->timeline,
         "Interval of each level's timeline (prefix hits and tasks/h per interval; 5m, 300s); 0 = none")
      ->capture_default_str();
  cmd->add_option("--timeline-svg", o->timeline_svg, "Write the timeline chart to FILE (needs --timeline)");
  cmd->add_flag("--vs-reference", o->vs_reference, "Print the reference table side by side with residuals");
  cmd->add_flag(
      "--placement-overrides", o->placement_overrides,
      "Print how much load the preference for a cached prompt start overrode, per policy and level");
  cmd->add_option("--workload", o->workload,
                  "Workload preset: claude-code (chat turns, the reference) or agentic (coding agents: tool "
                  "rounds, subagents, compaction, tasks)")
      ->capture_default_str();
  add_agentic_options(*cmd, o->agentic);
  cmd->add_option("--system-tokens", o->system_tokens,
                  "Shared system prompt (claude-code 3500, agentic 1400)");
  cmd->add_option("--first-tokens", o->first_tokens, "First user message (claude-code 7300, agentic 1200)");
  cmd->add_option("--turn-tokens", o->turn_tokens, "New user text per follow-up turn (claude-code: 400)");
  cmd->add_option("--turns", o->turns, "User turns per session (claude-code: 6)");
  cmd->add_option("--max-output", o->max_output, "max_tokens of every request (default 256)");
  cmd->add_option("--think-time", o->think_time, "Client time between a turn's end and the next turn")
      ->capture_default_str();
  add_engine_options(*cmd, o);
  cmd->callback([o] {
    const int rc = run_simulate(*o);
    if (rc != 0) {
      std::exit(rc);
    }
  });
}

}  // namespace warden::app
