// Engine stand-ins the reliability tests run themselves, on 127.0.0.1 with a free port: a black hole, and
// a FaultyEngine that answers /health, /v1/models and /metrics like a vLLM server and fails inference the
// way a wedged engine does.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace gateway_test {

// A loopback port whose connections the kernel completes (into the backlog) and nobody ever answers: an
// engine whose API server hangs. Closed by the destructor.
class BlackHole {
 public:
  BlackHole() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 128) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("black hole: cannot listen");
    }
    port_ = ntohs(a.sin_port);
  }
  ~BlackHole() { ::close(fd_); }
  BlackHole(const BlackHole&) = delete;
  BlackHole& operator=(const BlackHole&) = delete;
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// One thread per connection; the destructor stops and joins them all.
class FaultyEngine {
 public:
  enum class Fault {
    hang,   // accepts inference requests and never answers them (the engine core is stuck)
    stall,  // answers a stream's header and first event, then sends nothing more
    error,  // answers every request at once with a 500 (an engine core that died under its API server)
    none,   // answers every request at once (a healed engine)
  };

  explicit FaultyEngine(Fault fault, std::string served) : fault_(fault), served_(std::move(served)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        ::listen(listen_fd_, 128) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0 ||
        ::pipe2(stop_, O_CLOEXEC) != 0) {
      throw std::runtime_error("faulty engine: cannot listen");
    }
    port_ = ntohs(a.sin_port);
    threads_.emplace_back([this] { accept_loop(); });
  }
  ~FaultyEngine() {
    ::close(stop_[1]);  // wakes every thread's poll
    // The accept loop (first) may still add a connection's thread until it is joined: take them in turns.
    for (auto batch = threads(); !batch.empty(); batch = threads()) {
      for (auto& t : batch) {
        t.join();
      }
    }
    ::close(stop_[0]);
    ::close(listen_fd_);
  }
  FaultyEngine(const FaultyEngine&) = delete;
  FaultyEngine& operator=(const FaultyEngine&) = delete;

  int port() const { return port_; }
  // What inference requests meet from now on.
  void set_fault(Fault f) { fault_ = f; }
  // Reported as vllm:num_requests_running while inference requests hang: a stuck engine's scheduler holds
  // them; its token counters never move.
  void report_hanging_as_running(bool on) { report_running_ = on; }
  // More lines of /metrics (e.g. a vllm:cache_config_info), from the next scrape on.
  void add_metrics(std::string lines) {
    std::lock_guard lock(extra_mu_);
    extra_metrics_ = std::move(lines);
  }
  int inference_requests() const { return inference_; }
  // The head (request line and headers) of the last inference request.
  std::string last_inference_head() const {
    std::lock_guard lock(extra_mu_);
    return last_head_;
  }

 private:
  std::vector<std::thread> threads() {
    std::lock_guard lock(mu_);
    return std::exchange(threads_, {});
  }

  // Waits until `fd` is readable (true) or the engine stops (false).
  bool wait_readable(int fd) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    while (true) {
      if (::poll(p, 2, -1) < 0) {
        return false;
      }
      if (p[1].revents != 0) {
        return false;
      }
      if (p[0].revents != 0) {
        return true;
      }
    }
  }

  void accept_loop() {
    while (wait_readable(listen_fd_)) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        continue;
      }
      std::lock_guard lock(mu_);
      threads_.emplace_back([this, fd] {
        serve(fd);
        ::close(fd);
      });
    }
  }

  // One request's head and body; false when the peer closed or the engine stops.
  bool read_request(int fd, std::string& buffer, std::string& head) {
    while (true) {
      const auto end = buffer.find("\r\n\r\n");
      if (end != std::string::npos) {
        head = buffer.substr(0, end + 4);
        std::size_t length = 0;
        const auto cl = head.find("Content-Length: ");
        if (cl != std::string::npos) {
          length = std::stoul(head.substr(cl + 16));
        }
        if (buffer.size() >= end + 4 + length) {
          buffer.erase(0, end + 4 + length);
          return true;
        }
      }
      if (!wait_readable(fd)) {
        return false;
      }
      char chunk[8192];
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) {
        return false;
      }
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }

  static void send_all(int fd, const std::string& bytes) {
    ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  }

  static std::string reply(const std::string& type, const std::string& body) {
    return "HTTP/1.1 200 OK\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  }

  std::string metrics() const {
    const std::string l = "{engine=\"0\",model_name=\"" + served_ + "\"}";
    const int running = report_running_ ? hanging_.load() : 0;
    std::lock_guard lock(extra_mu_);
    return "vllm:num_requests_running" + l + " " + std::to_string(running) + "\nvllm:num_requests_waiting" +
           l + " 0\nvllm:prompt_tokens_total" + l + " 1000\nvllm:generation_tokens_total" + l + " 500\n" +
           extra_metrics_;
  }

  // A whole chat completion (a healed engine answers even a stream request this way: enough for routing).
  static std::string answer() {
    const std::string body =
        R"({"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}})";
    return reply("application/json", body);
  }

  void serve(int fd) {
    std::string buffer;
    std::string head;
    while (read_request(fd, buffer, head)) {
      if (head.rfind("GET /metrics", 0) == 0) {
        send_all(fd, reply("text/plain", metrics()));
      } else if (head.rfind("GET /v1/models", 0) == 0) {
        send_all(fd, reply("application/json", R"({"object":"list","data":[]})"));
      } else if (head.rfind("GET ", 0) == 0) {
        send_all(fd, reply("application/json", "{}"));
      } else {
        {
          std::lock_guard lock(extra_mu_);
          last_head_ = head;
        }
        ++inference_;
        if (!infer(fd)) {
          return;
        }
      }
    }
  }

  // False: the connection is left hanging until the engine stops.
  bool infer(int fd) {
    switch (fault_.load()) {
      case Fault::none:
        send_all(fd, answer());
        return true;
      case Fault::error: {
        const std::string body = R"({"error":{"message":"EngineCore died","type":"InternalServerError"}})";
        send_all(fd,
                 "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body);
        return true;
      }
      case Fault::stall: {
        const std::string event =
            R"(data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"first"}}]})"
            "\n\n";
        char size[16];
        std::snprintf(size, sizeof size, "%zx\r\n", event.size());
        send_all(fd,
                 "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
                     std::string(size) + event + "\r\n");
        break;
      }
      case Fault::hang:
        break;
    }
    ++hanging_;
    char sink[4096];
    while (wait_readable(fd) && ::recv(fd, sink, sizeof sink, 0) > 0) {
    }
    --hanging_;
    return false;
  }

  std::atomic<Fault> fault_;
  std::string served_;
  int listen_fd_ = -1;
  int stop_[2] = {-1, -1};
  int port_ = 0;
  std::atomic<bool> report_running_{false};
  std::atomic<int> hanging_{0};
  mutable std::mutex extra_mu_;
  std::string extra_metrics_;
  std::string last_head_;
  std::atomic<int> inference_{0};
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

}  // namespace gateway_test
