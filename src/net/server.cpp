#include "net/server.hpp"

#include "net/read_deadline.hpp"

#include "net/buffered_parse.hpp"
#include "net/eager_write.hpp"

#include <spdlog/spdlog.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <utility>

namespace warden::net {

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Pipelined bytes a client may send while its previous request is being answered; more is abuse.
constexpr std::size_t kMaxPipelinedBytes = 64u << 10;
// Read sizes: one system call for a typical request header, a few for a 200 KB agent prompt.
constexpr std::size_t kHeaderReadBytes = 4u << 10;
constexpr std::size_t kBodyReadBytes = 256u << 10;

std::string openai_error(std::string_view message, std::string_view type, unsigned code) {
  boost::json::object err{{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}};
  return boost::json::serialize(boost::json::object{{"error", std::move(err)}});
}

Response plain_error(unsigned version, unsigned status, std::string_view message) {
  Response res{static_cast<http::status>(status), version};
  res.set(http::field::content_type, "application/json");
  res.body() = openai_error(message, "BadRequestError", status);
  res.keep_alive(false);
  res.prepare_payload();
  return res;
}

// A protocol violation by the client (worth a 400), as opposed to EOF, a timeout or a transport error.
bool is_parse_error(const boost::system::error_code& ec) {
  return ec.category() == make_error_code(http::error::bad_target).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::need_more;
}

// The header as bytes, so that it can go out in one write with the first chunk.
std::string serialize_header(http::response<http::empty_body>& head) {
  http::response_serializer<http::empty_body> sr{head};
  sr.split(true);
  std::string out;
  boost::system::error_code ec;
  while (!ec && !sr.is_header_done()) {
    sr.next(ec, [&](boost::system::error_code& vec, const auto& buffers) {
      vec = {};
      out += beast::buffers_to_string(buffers);
      sr.consume(beast::buffer_bytes(buffers));
    });
  }
  return out;
}

}  // namespace

void prepare_header(StreamReply& reply, bool keep_alive) {
  http::response<http::empty_body> head{std::move(reply.header)};
  head.erase(http::field::content_length);
  head.chunked(true);
  reply.keep_alive = keep_alive && head.keep_alive();
  head.keep_alive(reply.keep_alive);
  reply.header_text = serialize_header(head);
  reply.header = std::move(head.base());
}

namespace {

class SessionWriter final : public StreamWriter {
 public:
  /// `pending_header`: a serialized header not sent yet (it goes out with the first write), or empty.
  SessionWriter(beast::tcp_stream& stream, std::chrono::milliseconds timeout, std::string pending_header)
      : stream_(stream), timeout_(timeout), header_(std::move(pending_header)) {}

  // The coroutine itself, not a wrapper around it: one frame per write.
  asio::awaitable<boost::system::error_code> write(std::string_view data) override {
    return send(data, false);
  }
  asio::awaitable<boost::system::error_code> write_last(std::string_view data) override {
    return send(data, true);
  }
  bool failed() const noexcept override { return failed_; }
  std::uint64_t bytes_written() const noexcept override { return bytes_; }
  void mark_failed() noexcept { failed_ = true; }
  bool finished() const noexcept { return finished_; }

 private:
  // One gathered write: [pending header] [chunk size line, data, CRLF] [terminating chunk].
  asio::awaitable<boost::system::error_code> send(std::string_view data, bool last) {
    static constexpr std::string_view kCrlf = "\r\n";
    static constexpr std::string_view kCrlfLast = "\r\n0\r\n\r\n";
    static constexpr std::string_view kLast = "0\r\n\r\n";
    if (failed_ || finished_) {
      co_return asio::error::broken_pipe;
    }
    if (data.empty() && !last) {
      co_return boost::system::error_code{};  // an empty chunk would end the body
    }
    char size_line[24];
    const int size_len =
        data.empty() ? 0 : std::snprintf(size_line, sizeof size_line, "%zx\r\n", data.size());
    std::string_view tail = data.empty() ? (last ? kLast : std::string_view{}) : (last ? kCrlfLast : kCrlf);
    const std::array<asio::const_buffer, 4> buffers{
        asio::buffer(header_), asio::buffer(size_line, static_cast<std::size_t>(size_len)),
        asio::buffer(data.data(), data.size()), asio::buffer(tail.data(), tail.size())};
    std::size_t done = 0;
    boost::system::error_code ec;
    if (!write_now(stream_, buffers, done, ec)) {
      ec = co_await write_rest(stream_, buffers, done, timeout_);
    }
    std::string().swap(header_);
    if (ec) {
      failed_ = true;
      co_return ec;
    }
    bytes_ += data.size();
    finished_ = last;
    co_return boost::system::error_code{};
  }

  beast::tcp_stream& stream_;
  std::chrono::milliseconds timeout_;
  std::string header_;
  bool failed_ = false;
  bool finished_ = false;
  std::uint64_t bytes_ = 0;
};

}  // namespace

Response make_response(const Request& req, unsigned status, std::string body, std::string_view content_type) {
  Response res{static_cast<http::status>(status), req.version()};
  if (!content_type.empty()) {
    res.set(http::field::content_type, content_type);
  }
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

StreamReply sse_reply(const Request& req, unsigned status) {
  StreamReply s;
  s.header.result(static_cast<http::status>(status));
  s.header.version(req.version());
  s.header.set(http::field::content_type, "text/event-stream; charset=utf-8");
  s.header.set(http::field::cache_control, "no-cache");
  if (!req.keep_alive()) {
    s.header.set(http::field::connection, "close");
  }
  return s;
}

// Watches a client's socket while its request is handled (armed from the handler's start to the end of
// the response). EOF or an error there means the client is gone: terminal cancellation is emitted on the
// session coroutine's slot, so whatever the handler or stream body is suspended in (an upstream read, a
// timer, a Notifier) completes with operation_aborted and its next co_await throws. A plain callback
// rather than a coroutine raced with `||`: the parallel group cost four handler hops (each one a reactor
// poll) per request. Bytes the client sends meanwhile (a pipelined next request) are kept in `buffer`.
struct Server::DisconnectWatch {
  asio::cancellation_signal signal;      // bound to the session coroutine
  tcp::socket* socket = nullptr;         // null once the session is gone
  beast::flat_buffer* buffer = nullptr;  // the session's read buffer
  std::uint64_t generation = 0;          // bumped by disarm(): a late callback of an older wait is ignored
  bool armed = false;                    // between the handler's start and the end of the response
  bool waiting = false;                  // the peeking receive is pending
  bool fired = false;
  char peeked = 0;  // target of the peeking receive

  // Registers once the handler first suspends (for a proxy: after the request went upstream), so that
  // the registration is not on the way of the request. A peeking receive rather than async_wait: Asio
  // queues a receive on a drained socket without a system call (at most one recv), while a wait
  // re-registers the socket with an epoll_ctl every time. A client that left meanwhile is seen then.
  static void arm(asio::io_context& ioc, const std::shared_ptr<DisconnectWatch>& self) {
    self->armed = true;
    asio::post(ioc, [self, gen = self->generation] {
      if (gen == self->generation && self->armed && self->socket && !self->waiting) {
        wait(self);
      }
    });
  }
  void disarm() noexcept {
    ++generation;
    if (waiting && socket) {
      boost::system::error_code ignored;
      socket->cancel(ignored);  // only the wait is pending between requests
    }
    waiting = false;
    armed = false;
  }

 private:
  static void wait(const std::shared_ptr<DisconnectWatch>& self) {
    self->waiting = true;
    // MSG_PEEK: the byte stays in the socket, so a wait cancelled after it completed loses nothing.
    self->socket->async_receive(
        asio::buffer(&self->peeked, 1), tcp::socket::message_peek,
        [self, gen = self->generation](const boost::system::error_code& ec, std::size_t n) {
          on_ready(self, gen, ec, n);
        });
  }
  static void on_ready(const std::shared_ptr<DisconnectWatch>& self, std::uint64_t gen,
                       const boost::system::error_code& ec, std::size_t n) {
    if (gen != self->generation || !self->armed || !self->socket) {
      return;  // disarmed, or the session is gone
    }
    self->waiting = false;
    if (!ec && n > 0) {
      boost::system::error_code ec2;
      const std::size_t avail = self->socket->available(ec2);
      if (!ec2 && avail > 0 && self->buffer->size() + avail <= kMaxPipelinedBytes) {
        const std::size_t n = self->socket->read_some(self->buffer->prepare(avail), ec2);
        if (!ec2) {
          self->buffer->commit(n);
          wait(self);
          return;
        }
      }
    }
    // Readable with nothing to read (EOF), an error, or too much pipelined: the client is gone.
    self->armed = false;
    self->fired = true;
    self->signal.emit(asio::cancellation_type::terminal);
  }
};

struct Server::Session {
  beast::tcp_stream* stream = nullptr;
};

Server::Server(asio::io_context& ioc, ServerOptions opts, Handler handler)
    : ioc_(ioc), opts_(std::move(opts)), handler_(std::move(handler)), acceptor_(ioc) {}

Server::~Server() = default;

boost::system::result<tcp::endpoint> Server::listen() {
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(opts_.host, ec);
  if (ec) {
    // Accept "localhost" and similar names by resolving them once.
    tcp::resolver resolver(ioc_);
    auto results = resolver.resolve(opts_.host, std::to_string(opts_.port), ec);
    if (ec || results.empty()) {
      return ec ? ec : make_error_code(asio::error::host_not_found);
    }
    addr = results.begin()->endpoint().address();
  }
  tcp::endpoint ep{addr, opts_.port};
  acceptor_.open(ep.protocol(), ec);
  if (ec) {
    return ec;
  }
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (opts_.reuse_port) {
    using reuse_port = asio::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>;
    acceptor_.set_option(reuse_port(true), ec);
  }
  acceptor_.bind(ep, ec);
  if (ec) {
    return ec;
  }
  acceptor_.listen(opts_.backlog, ec);
  if (ec) {
    return ec;
  }
  return acceptor_.local_endpoint();
}

asio::awaitable<void> Server::run() {
  while (!stopped_) {
    auto [ec, sock] = co_await acceptor_.async_accept(use_tuple);
    if (ec) {
      if (stopped_ || ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) {
        co_return;
      }
      // EMFILE and friends: back off briefly instead of spinning.
      spdlog::warn("accept failed: {}", ec.message());
      asio::steady_timer t(ioc_, std::chrono::milliseconds(50));
      co_await t.async_wait(use_tuple);
      continue;
    }
    boost::system::error_code ignored;
    sock.set_option(tcp::no_delay(true), ignored);
    std::uint64_t id = next_id_++;
    ++stats_.connections_accepted;
    auto watch = std::make_shared<DisconnectWatch>();
    auto slot = watch->signal.slot();
    asio::co_spawn(ioc_, session(std::move(sock), id, watch),
                   asio::bind_cancellation_slot(slot, [id, watch](std::exception_ptr e) {
                     if (e) {
                       try {
                         std::rethrow_exception(e);
                       } catch (const boost::system::system_error& ex) {
                         if (ex.code() != asio::error::operation_aborted) {  // aborted: client gone
                           spdlog::error("connection {}: {}", id, ex.what());
                         }
                       } catch (const std::exception& ex) {
                         spdlog::error("connection {}: {}", id, ex.what());
                       }
                     }
                   }));
  }
}

void Server::stop() {
  if (stopped_) {
    return;
  }
  stopped_ = true;
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  // Closing the sockets fails every pending read/write and the disconnect watchers, which cancels
  // in-flight handlers and stream bodies.
  for (Session* s : sessions_) {
    s->stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
    s->stream->socket().close(ignored);
  }
}

asio::awaitable<void> Server::session(tcp::socket socket, std::uint64_t id,
                                      std::shared_ptr<DisconnectWatch> watch) {
  ConnectionInfo info;
  info.id = id;
  boost::system::error_code ignored;
  info.remote = socket.remote_endpoint(ignored);
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  Session self{&stream};
  sessions_.push_back(&self);
  auto self_it = std::prev(sessions_.end());
  ++stats_.connections_open;
  struct Unregister {
    Server* server;
    std::list<Session*>::iterator it;
    ~Unregister() {
      server->sessions_.erase(it);
      --server->stats_.connections_open;
    }
  } unregister{this, self_it};
  watch->socket = &stream.socket();
  watch->buffer = &buffer;
  struct Unwatch {
    DisconnectWatch& watch;
    ~Unwatch() {
      watch.disarm();
      watch.socket = nullptr;
      watch.buffer = nullptr;
    }
  } unwatch{*watch};

  auto too_large = [&](const http::request_header<>& request) {
    Response res = opts_.make_too_large ? opts_.make_too_large(request, false)
                                        : plain_error(request.version(), 413, "Request body too large");
    res.keep_alive(false);
    res.prepare_payload();
    return res;
  };
  auto send_and_close = [&](Response& res) -> asio::awaitable<void> {
    stream.expires_after(opts_.write_timeout);
    co_await http::async_write(stream, res, use_tuple);
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  };

  ReadDeadline deadline(stream.socket());
  // One read into the buffer; a passed deadline reads as Beast's timeout.
  auto read_some = [&](std::size_t bytes) -> asio::awaitable<boost::system::error_code> {
    auto [ec, n] = co_await stream.socket().async_read_some(buffer.prepare(bytes), use_tuple);
    buffer.commit(n);
    if (ec == asio::error::operation_aborted && deadline.expired()) {
      ec = beast::error::timeout;
    }
    co_return ec;
  };

  for (std::uint64_t index = 0; !stopped_; ++index) {
    info.request_index = index;
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(opts_.max_header_bytes));
    parser.body_limit(opts_.max_body_bytes);
    // Plain socket reads fed to the parser (what is buffered first: a pipelined request), under a lazy
    // deadline: cheaper per request than Beast's composed read and its timer.
    deadline.expires_after(index == 0 ? opts_.read_timeout : opts_.idle_timeout);
    boost::system::error_code hec;
    while (true) {
      hec = put_buffered(parser, buffer);
      if (hec || parser.is_header_done()) {
        break;
      }
      hec = co_await read_some(kHeaderReadBytes);
      if (hec) {
        break;
      }
    }
    if (hec) {
      if (hec == http::error::header_limit) {
        Response answer = plain_error(11, 431, "Request header fields too large");
        co_await send_and_close(answer);
      } else if (hec == http::error::body_limit) {
        Response answer = too_large(parser.get().base());
        co_await send_and_close(answer);
      } else if (is_parse_error(hec)) {
        Response answer = plain_error(11, 400, "Malformed HTTP request");
        co_await send_and_close(answer);
      }
      co_return;  // EOF, timeout, reset, stop(): nothing to answer
    }
    unsigned version = parser.get().version();
    if (parser.content_length() && *parser.content_length() > opts_.max_body_bytes) {
      Response answer = too_large(parser.get().base());
      co_await send_and_close(answer);
      co_return;
    }
    if (parser.get()[http::field::expect] == "100-continue") {
      stream.expires_after(opts_.write_timeout);
      static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
      auto [cec, cn] = co_await asio::async_write(stream, asio::buffer(cont.data(), cont.size()), use_tuple);
      if (cec) {
        co_return;
      }
    }
    if (parser.content_length()) {
      buffer.reserve(
          std::min<std::size_t>(static_cast<std::size_t>(*parser.content_length()), kBodyReadBytes));
    }
    // The body usually came in with the header: parsed from the buffer without another read.
    boost::system::error_code bec = put_buffered(parser, buffer);
    if (!bec && !parser.is_done()) {
      deadline.expires_after(opts_.read_timeout);
    }
    while (!bec && !parser.is_done()) {
      const std::uint64_t left = parser.content_length_remaining().value_or(kBodyReadBytes);
      bec =
          co_await read_some(static_cast<std::size_t>(std::clamp<std::uint64_t>(left, 512, kBodyReadBytes)));
      if (!bec) {
        bec = put_buffered(parser, buffer);
      }
    }
    if (bec) {
      if (bec == http::error::body_limit) {
        Response answer = too_large(parser.get().base());
        co_await send_and_close(answer);
      } else if (is_parse_error(bec)) {
        Response answer = plain_error(version, 400, "Malformed HTTP request body");
        co_await send_and_close(answer);
      }
      co_return;
    }
    deadline.clear();
    Request req = parser.release();
    if (buffer.size() == 0) {
      buffer.shrink_to_fit();  // an idle keep-alive connection should hold no read buffer
    }
    ++stats_.requests;
    bool keep_alive = req.keep_alive();

    // From here to the end of the response a client that goes away cancels the handler or stream body
    // (see DisconnectWatch); operation_aborted escaping them means exactly that.
    DisconnectWatch::arm(ioc_, watch);
    std::optional<Reply> reply;
    try {
      // Not `reply.emplace(co_await ...)`: GCC 12 miscompiles co_await inside some full expressions.
      Reply r = co_await handler_(req, info);
      reply.emplace(std::move(r));
    } catch (const boost::system::system_error& e) {
      if (e.code() == asio::error::operation_aborted) {
        ++stats_.client_disconnects;
        co_return;
      }
      ++stats_.handler_errors;
      spdlog::error("handler {} {}: {}", std::string(req.method_string()), std::string(req.target()),
                    e.what());
    } catch (const std::exception& e) {
      ++stats_.handler_errors;
      spdlog::error("handler {} {}: {}", std::string(req.method_string()), std::string(req.target()),
                    e.what());
    }
    if (watch->fired) {
      ++stats_.client_disconnects;
      co_return;
    }
    if (!reply) {
      reply.emplace(
          make_response(req, 500, openai_error("Internal server error", "InternalServerError", 500)));
    }

    if (auto* res = std::get_if<Response>(&*reply)) {
      keep_alive = keep_alive && res->keep_alive();
      res->keep_alive(keep_alive);
      http::response_serializer<http::string_body> sr{*res};
      const auto wec = co_await eager_write_message(stream, sr, opts_.write_timeout);
      watch->disarm();
      if (wec) {
        co_return;
      }
      if (!keep_alive) {
        stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
        co_return;
      }
      continue;
    }

    auto& streamed = std::get<StreamReply>(*reply);
    if (streamed.header_text.empty()) {
      prepare_header(streamed, keep_alive);
    }
    keep_alive = keep_alive && streamed.keep_alive;
    std::string pending_header = std::move(streamed.header_text);
    if (!streamed.header_with_first_chunk) {
      const auto hwec = co_await eager_write(stream, asio::buffer(pending_header), opts_.write_timeout);
      if (hwec) {
        co_return;
      }
      pending_header.clear();
    }
    SessionWriter writer(stream, opts_.write_timeout, std::move(pending_header));
    try {
      if (streamed.body) {
        co_await streamed.body(writer);
      }
    } catch (const boost::system::system_error& e) {
      if (e.code() == asio::error::operation_aborted) {
        ++stats_.client_disconnects;
        co_return;
      }
      writer.mark_failed();
      ++stats_.handler_errors;
      spdlog::error("stream body {}: {}", std::string(req.target()), e.what());
    } catch (const std::exception& e) {
      writer.mark_failed();
      ++stats_.handler_errors;
      spdlog::error("stream body {}: {}", std::string(req.target()), e.what());
    }
    if (watch->fired) {
      ++stats_.client_disconnects;
      co_return;
    }
    if (writer.failed()) {
      co_return;  // a broken stream we cannot terminate cleanly
    }
    boost::system::error_code lec;
    if (!writer.finished()) {
      lec = co_await writer.write_last({});
    }
    watch->disarm();
    if (lec || !keep_alive) {
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      co_return;
    }
    stream.expires_never();
  }
}

int run_until_signal(asio::io_context& ioc, Server& server, std::function<void()> on_stop) {
  auto ep = server.listen();
  if (!ep) {
    spdlog::error("cannot listen on {}:{}: {}", server.options().host, server.options().port,
                  ep.error().message());
    return 1;
  }
  std::string host =
      ep->address().is_v6() ? "[" + ep->address().to_string() + "]" : ep->address().to_string();
  std::printf("listening on http://%s:%u\n", host.c_str(), static_cast<unsigned>(ep->port()));
  std::fflush(stdout);
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) {
      return;
    }
    spdlog::info("signal {}: shutting down", sig);
    server.stop();
    if (on_stop) {
      on_stop();
    }
  });
  asio::co_spawn(ioc, server.run(), [](std::exception_ptr e) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        spdlog::error("accept loop: {}", ex.what());
      }
    }
  });
  ioc.run();
  return 0;
}

}  // namespace warden::net
