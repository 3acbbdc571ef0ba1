#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <memory>

#include "app/agentic_options.hpp"
#include "app/cli.hpp"
#include "app/version.hpp"
#include "bench/runner.hpp"

namespace warden::app {

namespace {

struct BenchArgs {
  bench::BenchOptions options;
  std::string api = "anthropic";
  std::string levels = "4,8,16,24,32";
  std::string duration = "3m";
  std::string compare;
  std::string preset = "claude-code";
  std::optional<std::size_t> system_tokens, first_tokens, turn_tokens, turns, max_output;
  std::optional<double> think_time;
  std::optional<double> stagger;
  std::optional<std::size_t> context_window;
  AgenticFlags agentic;
  std::uint64_t seed = 1;
  bool no_billing_header = false;
  std::string tenants;
  std::vector<std::string> urls;
  std::vector<std::string> wardens;
  std::string stayed_by;
};

// Turns the textual flags into options; prints the reason and returns false when one is wrong.
bool finish_options(BenchArgs& a) {
  auto fail = [](const std::string& why) {
    fmt::print(stderr, "lm-warden bench: {}\n", why);
    return false;
  };
  auto api = bench::parse_api(a.api);
  if (!api) {
    return fail(api.error());
  }
  a.options.api = *api;
  auto levels = bench::parse_levels(a.levels);
  if (!levels) {
    return fail(levels.error());
  }
  a.options.levels = *levels;
  auto duration = bench::parse_duration(a.duration);
  if (!duration) {
    return fail(duration.error());
  }
  a.options.duration = *duration;
  if (!a.compare.empty()) {
    auto compare = bench::parse_compare(a.compare);
    if (!compare) {
      return fail(compare.error());
    }
    a.options.compare = *compare;
  }
  auto urls = bench::parse_urls(a.urls, "--url");
  if (!urls) {
    return fail(urls.error());
  }
  a.options.urls = *urls;
  auto wardens = bench::parse_urls(a.wardens, "--warden");
  if (!wardens) {
    return fail(wardens.error());
  }
  a.options.wardens = *wardens;
  if (!a.stayed_by.empty()) {
    auto stayed_by = bench::parse_stayed_by(a.stayed_by);
    if (!stayed_by) {
      return fail(stayed_by.error());
    }
    a.options.stayed_by = *stayed_by;
  }
  auto preset = workload::preset(a.preset);
  if (!preset) {
    return fail(preset.error());
  }
  workload::WorkloadConfig& w = a.options.workload;
  w = *preset;
  w.system_tokens = a.system_tokens.value_or(w.system_tokens);
  w.first_tokens = a.first_tokens.value_or(w.first_tokens);
  w.turn_tokens = a.turn_tokens.value_or(w.turn_tokens);
  w.turns = a.turns.value_or(w.turns);
  w.max_output = a.max_output.value_or(w.max_output);
  w.think_time = a.think_time.value_or(w.think_time);
  w.stagger = a.stagger.value_or(w.stagger);
  w.agentic.context_window = a.context_window.value_or(w.agentic.context_window);
  if (auto ok = apply_agentic_options(a.agentic, w.agentic); !ok) {
    return fail(ok.error());
  }
  auto tenants = parse_tenant_shares(a.tenants);
  if (!tenants) {
    return fail(tenants.error());
  }
  a.options.tenants = *tenants;
  if (!a.options.tenants.empty() && a.options.tenant_header.empty()) {
    return fail("--tenants needs --tenant-header NAME: the header the warden's clients.tenant_header reads");
  }
  w.seed = a.seed;
  // Anthropic requests carry Claude Code's billing line as the real client sends it (render_openai has none).
  w.billing_header = !a.no_billing_header;
  a.options.version = kVersion;
  return true;
}

// Where requests go and how much load: targets, model, API, levels and their length, seed, wardens, how a
// stay is judged, the engines' metrics, the time scale.
void add_load_options(CLI::App* cmd, BenchArgs& args) {
  bench::BenchOptions& o = args.options;
  cmd->add_option("--url", args.urls,
                  "Where requests go: an engine (vLLM, lm-warden sim) or a warden, http://host:port; several "
                  "(repeated or comma-separated): each session's turns rotate over them")
      ->required()
      ->allow_extra_args(false);
  cmd->add_option("--model", o.model,
                  "Model name sent in every request (and the warden's model for --compare)")
      ->required();
  cmd->add_option("--api", args.api, "anthropic (what Claude Code sends) or openai (chat completions)")
      ->capture_default_str();
  cmd->add_option("--levels", args.levels, "Concurrency levels (sessions held open), comma-separated")
      ->capture_default_str();
  cmd->add_option("--duration", args.duration, "Length of each level in model time (e.g. 3m, 90s)")
      ->capture_default_str();
  cmd->add_option("--seed", args.seed, "Fixes every prompt and session id")->capture_default_str();
  cmd->add_option("--warden", args.wardens,
                  "Warden base URL (admin API for --compare); one per --url when there are several")
      ->allow_extra_args(false);
  cmd->add_option("--stayed-by", args.stayed_by,
                  "route (x-warden-route is sticky; the default with one --url) or replica (x-warden-replica "
                  "equals the session's previous turn's; the default with several)");
  cmd->add_option(
         "--metrics", o.metrics,
         "Engine /metrics URL(s) to poll for replicas busy and prefix hits, summed (default: each --url's "
         "/metrics)")
      ->allow_extra_args(false);
  cmd->add_option(
         "--time-scale", o.time_scale,
         "Model seconds per wall second of the target (the simulator's --time-scale); durations, TTFB and "
         "rates are reported in model time")
      ->capture_default_str();
}

// What the run writes, and the comparisons it makes (affinity off/on, an earlier report).
void add_report_options(CLI::App* cmd, BenchArgs& args) {
  bench::BenchOptions& o = args.options;
  cmd->add_option("--out", o.out, "Write the table to FILE.json (stable schema), .csv or .md");
  cmd->add_option("--svg", o.svg, "Write a chart of TTFB p50/p95 per level (log scale) to this SVG file");
  cmd->add_option(
      "--compare", args.compare,
      "off,on: all levels with the warden's affinity off, then all with it on (admin API), same prompts");
  cmd->add_option("--records", o.records,
                  "Write every request (session, turn, times, TTFB, tokens, route, replica) as JSON lines");
  cmd->add_option("--baseline", o.baseline,
                  "A .json report of an earlier run (e.g. one warden) to print beside this one: prefix hits, "
                  "stayed on replica and TTFB p50 per level, with the ratio");
  cmd->add_option("--label", o.label, "Policy label of the rows of a single pass")->capture_default_str();
  cmd->add_option("--admin-token", o.admin_token, "Bearer token of the warden's admin API")
      ->envname("WARDEN_ADMIN_TOKEN");
}

// The workload: a preset and the sizes and timings that override it.
void add_workload_options(CLI::App* cmd, BenchArgs& args) {
  cmd->add_option("--preset,--workload", args.preset,
                  "Workload preset: claude-code (chat turns, the reference) or agentic (coding agents: tool "
                  "rounds, background subagents, compaction, tasks)")
      ->capture_default_str();
  cmd->add_option("--context-window", args.context_window,
                  "Workload agentic: the model's context window in tokens; a thread compacts past 80 % of it "
                  "(default 32768)");
  add_agentic_options(*cmd, args.agentic);
  cmd->add_option("--system-tokens", args.system_tokens, "Shared system prompt size (default 3500)");
  cmd->add_option("--first-tokens", args.first_tokens,
                  "First user message size, unique per session (default 7300)");
  cmd->add_option("--turn-tokens", args.turn_tokens, "New user tokens per follow-up turn (default 400)");
  cmd->add_option("--turns", args.turns, "User turns per session, the first included (default 6)");
  cmd->add_option("--max-output", args.max_output, "max_tokens of every request (default 256)");
  cmd->add_option("--think-time", args.think_time,
                  "Model seconds between a turn's end and the session's next turn (default 0)");
  cmd->add_option("--stagger", args.stagger,
                  "Model seconds over which each level's first turns are spread (default 0: all at once)");
  cmd->add_flag(
      "--no-billing-header", args.no_billing_header,
      "Leave out Claude Code's per-conversation billing line (first system block of --api anthropic)");
  cmd->add_option("--tenants", args.tenants,
                  "Workload agentic: the headless agents split between tenants in these proportions (20,6: "
                  "20 and 6 of 26 agents), each agent sending its tenant's name in --tenant-header")
      ->group("Classes of work and tenants (--workload agentic)");
  cmd->add_option("--tenant-header", args.options.tenant_header,
                  "With --tenants: the header naming each agent's tenant (tenant-1, tenant-2, ...), as the "
                  "warden's clients.tenant_header")
      ->group("Classes of work and tenants (--workload agentic)");
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench",
                                     "Closed-loop agent-session load over HTTP: the reference table of "
                                     "routing.md (Sessions/h, output tokens/min, "
                                     "TTFB p50/p95, replicas busy, prefix hits, stayed on replica)");
  add_load_options(cmd, *args);
  add_report_options(cmd, *args);
  add_workload_options(cmd, *args);
  bench::BenchOptions& o = args->options;
  cmd->add_option("--drain-timeout", o.drain_timeout,
                  "Model seconds in-flight turns may take to finish after a level before they are cancelled")
      ->capture_default_str();
  cmd->add_option("--log-interval", o.log_interval,
                  "Wall seconds between progress lines when stderr is not a terminal")
      ->capture_default_str();
  cmd->callback([args] {
    if (!finish_options(*args)) {
      std::exit(2);
    }
    std::exit(bench::run_bench_command(args->options));
  });
}

}  // namespace warden::app
