// TLS on the warden's listener (`tls:`) and to its replicas (https:// URLs, `upstream_tls:`), with
// certificates the test makes: answered over https to curl, a renewed certificate served after SIGHUP to
// new connections while a stream on the old one completes, an https:// replica scraped and served.
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "gateway_support.hpp"
#include "net/tls.hpp"
#include "support/certs.hpp"

using namespace gateway_test;
using namespace std::chrono_literals;
using test_support::make_certificate;

namespace {

// The HTTP status curl got for GET https://127.0.0.1:PORT/health trusting `ca_file` ("000": no answer,
// e.g. the certificate was not trusted).
std::string curl_health(int port, const std::string& ca_file) {
  const std::string cmd = "curl -sS --max-time 10 -o /dev/null -w '%{http_code}' --cacert '" + ca_file +
                          "' https://127.0.0.1:" + std::to_string(port) + "/health 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[64];
    while (std::fgets(buf, sizeof buf, p) != nullptr) {
      out += buf;
    }
    ::pclose(p);
  }
  return out;
}

std::shared_ptr<warden::net::TlsContext> trusting(const std::string& ca_file) {
  auto ctx = warden::net::make_client_tls({.ca_file = ca_file});
  EXPECT_TRUE(ctx) << ctx.error();
  return ctx ? *ctx : nullptr;
}

std::string tls_section(const test_support::Certificate& c) {
  return "tls: { cert_file: " + c.cert + ", key_file: " + c.key + " }\n";
}

std::string https_model(int sim_port) {
  return "  - name: m\n    served_model_name: " + kServed +
         "\n    max_num_seqs: 32\n    replicas: { urls: [https://localhost:" + std::to_string(sim_port) +
         "] }\n";
}

}  // namespace

TEST(GatewayTls, TheListenerAnswersHttpsAndServesARenewedCertificateAfterSighup) {
  TempDir certs;
  const auto cert = make_certificate(certs.path, "warden");
  const std::string old_ca = certs.file("old-ca.pem");
  std::filesystem::copy_file(cert.cert, old_ca);
  auto sim = start_sim(1, 0.005);
  Warden w(dp_model(sim->port(), 1), tls_section(cert));
  EXPECT_EQ(curl_health(w.port, old_ca), "200");
  // A stream over TLS on the old certificate, in flight across the reload.
  unsigned status = 0;
  std::string body;
  std::thread stream([&] {
    warden::net::SyncClient c({"127.0.0.1", static_cast<std::uint16_t>(w.port), true}, trusting(old_ca));
    auto r = c.post("/v1/chat/completions", chat_body("across the renewal", 150, true));
    status = r ? r->status : 0;
    body = r ? r->body : r.error().message();
  });
  ASSERT_TRUE(wait_until([&] { return sim_running(sim->port(), 0) >= 1; }, 20s));
  make_certificate(certs.path, "warden");  // renewed: a new key and certificate under the same names
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return curl_health(w.port, cert.cert) == "200"; }, 10s));
  EXPECT_EQ(curl_health(w.port, old_ca), "000");  // new connections get the new certificate only
  stream.join();
  EXPECT_EQ(status, 200u) << body;
  EXPECT_NE(body.find("data: [DONE]"), std::string::npos) << body;
  EXPECT_EQ(sim_running(sim->port(), 0), 0);
}

// A reload whose key does not match its certificate is refused whole: the running certificate stays.
TEST(GatewayTls, AReloadWithAKeyThatDoesNotMatchIsRefused) {
  TempDir certs;
  const auto cert = make_certificate(certs.path, "warden");
  const auto other = make_certificate(certs.path, "other");
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), tls_section(cert));
  std::ofstream(w.dir.path / "warden.yaml")
      << "admin_token: secret\n"
      << "tls: { cert_file: " << cert.cert << ", key_file: " << other.key << " }\nmodels:\n"
      << dp_model(sim->port(), 1);
  w.proc->signal(SIGHUP);
  ASSERT_TRUE(wait_until(
      [&] { return w.proc->stderr_text().find("configuration not reloaded") != std::string::npos; }, 10s));
  EXPECT_NE(w.proc->stderr_text().find("does not match the certificate"), std::string::npos)
      << w.proc->stderr_text();
  EXPECT_EQ(curl_health(w.port, cert.cert), "200");
}

// An https:// replica (a sim serving TLS as `vllm serve --ssl-certfile`): scraped healthy and served,
// streamed and whole, with the certificate checked against upstream_tls.ca_file and the name localhost.
TEST(GatewayTls, AnHttpsReplicaIsScrapedAndServed) {
  TempDir certs;
  const auto cert = make_certificate(certs.path, "engine");
  auto sim = start_sim(1, 1.0, 0, {"--ssl-certfile", cert.cert, "--ssl-keyfile", cert.key});
  Warden w(https_model(sim->port()), "upstream_tls: { ca_file: " + cert.cert + " }\n");
  ASSERT_TRUE(wait_until(
      [&] {
        const auto r = replica_of(card(w.port), 0);
        return r.at("scraped").as_bool() && r.at("healthy").as_bool() && r.at("last_error").is_null();
      },
      10s))
      << boost::json::serialize(card(w.port));
  Client c(w.port);
  auto streamed = c.post("/v1/chat/completions", chat_body("over https", 8, true));
  EXPECT_EQ(streamed.status, 200u) << streamed.body;
  EXPECT_NE(streamed.body.find("data: [DONE]"), std::string::npos) << streamed.body;
  auto whole = c.post("/v1/chat/completions", chat_body("over https", 8, false));
  EXPECT_EQ(whole.status, 200u) << whole.body;
}

// The same replica without its CA (the system's store does not trust a self-signed certificate): its
// scrapes fail, it is marked unhealthy, and a request gets an error instead of an unverified answer.
TEST(GatewayTls, AnUntrustedReplicaIsNotUsed) {
  TempDir certs;
  const auto cert = make_certificate(certs.path, "engine");
  auto sim = start_sim(1, 1.0, 0, {"--ssl-certfile", cert.cert, "--ssl-keyfile", cert.key});
  Warden w(https_model(sim->port()));
  ASSERT_TRUE(wait_until(
      [&] {
        const auto r = replica_of(card(w.port), 0);
        return !r.at("healthy").as_bool() && r.at("last_error").is_string();
      },
      10s))
      << boost::json::serialize(card(w.port));
  Client c(w.port);
  auto r = c.post("/v1/chat/completions", chat_body("over https", 8, false));
  EXPECT_GE(r.status, 500u) << r.body;
}

// Plain HTTP, or any bytes that do not open a TLS handshake, on the TLS listener: answered 400 in plain
// text as nginx does (a silent close told the client nothing); every such connection, and a handshake
// that fails (an untrusted client hanging up), is counted in /metrics and logged.
TEST(GatewayTls, PlainHttpOnTheTlsPortGets400AndFailuresAreCounted) {
  TempDir certs;
  const auto cert = make_certificate(certs.path, "warden");
  auto sim = start_sim(1);
  Warden w(dp_model(sim->port(), 1), tls_section(cert));
  for (const std::string sent : {std::string("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
                                 std::string("\x01\x02 garbage\r\n\r\n")}) {
    const std::string got = test_support::raw_exchange(w.port, sent, 10s);
    EXPECT_EQ(test_support::raw_status(got), 400) << got;
    EXPECT_NE(got.find("HTTPS"), std::string::npos) << got;
  }
  const auto other = make_certificate(certs.path, "other");
  EXPECT_EQ(curl_health(w.port, other.cert), "000");  // the warden's certificate is not trusted: it hangs up
  warden::net::SyncClient c({"127.0.0.1", static_cast<std::uint16_t>(w.port), true}, trusting(cert.cert));
  std::string metrics;
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = c.get("/metrics");
        metrics = r ? r->body : std::string();
        return metrics.find("lm_warden_tls_failures_total{kind=\"handshake\"} 1") != std::string::npos;
      },
      10s))
      << metrics;
  EXPECT_NE(metrics.find("lm_warden_tls_failures_total{kind=\"plain_http\"} 2"), std::string::npos)
      << metrics;
}
