#include <malloc.h>

#include <fmt/core.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>

#include "app/cli.hpp"
#include "app/service_status.hpp"
#include "gateway/config/config.hpp"
#include "gateway/gateway.hpp"
#include "net/server.hpp"
#include "net/service_notify.hpp"

namespace warden::app {

namespace {

struct ServeOptions {
  std::string config;
  std::string listen;
  std::string state_dir;
  std::string log_level = "info";
};

// Once a second: when no request came since the last look and none is in flight, the free heap goes
// back to the system (once per idle period). Not while busy: the latency work keeps the heap then.
boost::asio::awaitable<void> trim_when_idle(const net::Server& server) {
  boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor);
  std::uint64_t seen = server.stats().requests;
  bool trimmed = false;
  while (true) {
    timer.expires_after(std::chrono::seconds(1));
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    if (ec) {
      co_return;
    }
    const std::uint64_t now = server.stats().requests;
    if (now != seen || server.requests_in_flight() > 0) {
      seen = now;
      trimmed = false;
    } else if (!trimmed) {
      ::malloc_trim(0);
      trimmed = true;
    }
  }
}

// The file, with the command line's overrides over it: at start, and again at every reload (so a reload
// does not take the file's listen: for a change of the --listen in force).
gateway::ConfigResult load_with_overrides(const ServeOptions& o) {
  auto loaded = gateway::load_config_file(o.config);
  if (!loaded.ok()) {
    return loaded;
  }
  if (auto hp = o.listen.empty() ? std::nullopt : gateway::parse_listen(o.listen)) {
    loaded.config->listen_host = hp->first;
    loaded.config->listen_port = hp->second;
  }
  if (!o.state_dir.empty()) {
    loaded.config->state_dir = o.state_dir;
  }
  return loaded;
}

int run_serve(const ServeOptions& o) {
  // Logs go to stderr: stdout carries only the "listening on" line that scripts and tests wait for.
  auto logger = spdlog::stderr_color_mt("serve");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(o.log_level));

  if (!o.listen.empty() && !gateway::parse_listen(o.listen)) {
    fmt::print(stderr, "lm-warden serve: --listen '{}' is not HOST:PORT (e.g. 127.0.0.1:8080)\n", o.listen);
    return 2;
  }
  auto loaded = load_with_overrides(o);
  if (!loaded.ok()) {
    fmt::print(stderr, "lm-warden serve: the configuration is not valid:\n{}\n", loaded.error_text());
    return 2;
  }
  gateway::Config config = std::move(*loaded.config);

  // Request bodies of agents are 50-200 KB every turn. glibc serves blocks that large with mmap and
  // gives them back at free, so every request paid ~50 page faults (about a third of its CPU in the
  // proxy). Keep them on the heap and keep the heap while busy; trim_when_idle() gives a burst's memory
  // back once the warden has been idle for a second.
  ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 256 << 20);
  boost::asio::io_context ioc(1);  // one thread runs it: the scheduler skips cross-thread wake-ups
  // systemd's Type=notify (nothing without it), read before any engine is launched: they must not inherit it.
  ServiceStatus service(ioc, net::service_notifier());
  gateway::Gateway gw(ioc, std::move(config));
  gw.set_config_loader([&o] { return load_with_overrides(o); });
  if (auto started = gw.start(); !started) {
    fmt::print(stderr, "lm-warden serve: {}\n", started.error());
    return 1;
  }
  for (const auto& m : gw.config().models) {
    spdlog::info(
        "model {} → {} ({} replica{}, {}), affinity {}, spill threshold {}, admission {}", m.name,
        m.served_model_name, m.replica_count(), m.replica_count() == 1 ? "" : "s",
        m.data_parallel ? fmt::format("data parallel at {}", m.dp_url.text) : std::string("one URL each"),
        m.routing.affinity ? "on" : "off", m.routing.spill_threshold.label(m.routing.max_num_seqs),
        m.routing.admission.enabled
            ? fmt::format("auto (max_queue {}, max_wait {}s)", m.routing.admission.max_queue,
                          std::chrono::duration<double>(m.routing.admission.max_wait).count())
            : std::string("off"));
  }
  net::ServerOptions server_options = gw.server_options();
  service.watch_drain(server_options);
  net::Server server(ioc, server_options, [&gw](net::Request& req, const net::ConnectionInfo& conn) {
    return gw.handle(req, conn);
  });
  server.set_tls(gw.listener_tls());
  gw.on_listener_tls([&server](std::shared_ptr<net::TlsContext> ctx) { server.set_tls(std::move(ctx)); });
  service.start(gw);
  boost::asio::cancellation_signal trim_cancel;
  boost::asio::co_spawn(ioc, trim_when_idle(server),
                        boost::asio::bind_cancellation_slot(trim_cancel.slot(), boost::asio::detached));
  const int code = net::run_until_signal(
      ioc, server,
      [&] {
        service.stopped();
        trim_cancel.emit(boost::asio::cancellation_type::terminal);
        gw.stop();
      },
      [&gw] { gw.reload(); });
  gw.stop();
  return code;
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto opts = std::make_shared<ServeOptions>();
  auto* cmd = app.add_subcommand("serve", "Run the gateway: OpenAI + Anthropic APIs in, routing to replicas");
  cmd->add_option("-c,--config", opts->config, "YAML configuration file (see docs/config.md)")->required();
  cmd->add_option("--listen", opts->listen, "HOST:PORT to listen on (overrides listen: in the config)");
  cmd->add_option("--state-dir", opts->state_dir, "Directory for the stats history (overrides state_dir:)");
  cmd->add_option("--log-level", opts->log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  cmd->callback([opts] { std::exit(run_serve(*opts)); });
}

}  // namespace warden::app
