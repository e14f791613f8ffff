#include "support/ws_client.hpp"

#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>

namespace edri::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

struct WsClient::Impl {
  asio::io_context io;
  websocket::stream<tcp::socket> ws{io};
  std::chrono::milliseconds timeout;
  std::vector<std::string> pongs;
  beast::flat_buffer buffer;

  // Runs the asynchronous operation started by `start` to its end, or
  // cancels it at the timeout. Returns its error code, or nullopt on timeout.
  template <class Start>
  std::optional<beast::error_code> run(Start&& start, std::chrono::milliseconds limit) {
    std::optional<beast::error_code> result;
    start([&](beast::error_code ec, auto&&...) { result = ec; });
    io.restart();
    io.run_for(limit);
    if (!result) {
      beast::error_code ignored;
      beast::get_lowest_layer(ws).cancel(ignored);
      io.restart();
      io.run_for(std::chrono::milliseconds(500));
      return std::nullopt;
    }
    return result;
  }
  beast::error_code must(std::optional<beast::error_code> r, const char* what) {
    if (!r) throw std::runtime_error(std::string(what) + ": timed out");
    return *r;
  }
};

WsClient::WsClient(std::uint16_t port, const std::string& path, const std::map<std::string, std::string>& headers,
                   int timeout_ms)
    : impl_(std::make_unique<Impl>()) {
  impl_->timeout = std::chrono::milliseconds(timeout_ms);
  auto& ws = impl_->ws;
  beast::get_lowest_layer(ws).connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
    for (const auto& [k, v] : headers) req.set(k, v);
  }));
  ws.control_callback([this](websocket::frame_type kind, beast::string_view payload) {
    if (kind == websocket::frame_type::pong) impl_->pongs.emplace_back(payload.data(), payload.size());
  });
  websocket::response_type res;
  const auto ec =
      impl_->must(impl_->run([&](auto h) { ws.async_handshake(res, "127.0.0.1:" + std::to_string(port), path, h); },
                             impl_->timeout),
                  "handshake");
  if (ec) throw std::runtime_error("handshake failed: HTTP " + std::to_string(res.result_int()) + ": " + ec.message());
}

WsClient::~WsClient() {
  beast::error_code ignored;
  beast::get_lowest_layer(impl_->ws).close(ignored);
}

void WsClient::send(const std::string& text) {
  impl_->ws.text(true);
  const auto ec =
      impl_->must(impl_->run([&](auto h) { impl_->ws.async_write(asio::buffer(text), h); }, impl_->timeout), "write");
  if (ec) throw std::runtime_error("write failed: " + ec.message());
}

void WsClient::send_binary(const std::string& bytes) {
  impl_->ws.binary(true);
  const auto ec =
      impl_->must(impl_->run([&](auto h) { impl_->ws.async_write(asio::buffer(bytes), h); }, impl_->timeout), "write");
  impl_->ws.text(true);
  if (ec) throw std::runtime_error("write failed: " + ec.message());
}

void WsClient::send_fragmented(const std::vector<std::string>& parts) {
  impl_->ws.text(true);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const bool fin = i + 1 == parts.size();
    const auto ec = impl_->must(
        impl_->run([&](auto h) { impl_->ws.async_write_some(fin, asio::buffer(parts[i]), h); }, impl_->timeout),
        "write");
    if (ec) throw std::runtime_error("write failed: " + ec.message());
  }
}

void WsClient::ping(const std::string& payload) {
  const auto ec = impl_->must(
      impl_->run([&](auto h) { impl_->ws.async_ping(websocket::ping_data(payload.c_str()), h); }, impl_->timeout),
      "ping");
  if (ec) throw std::runtime_error("ping failed: " + ec.message());
}

std::string WsClient::read() {
  impl_->buffer.clear();
  const auto ec =
      impl_->must(impl_->run([&](auto h) { impl_->ws.async_read(impl_->buffer, h); }, impl_->timeout), "read");
  if (ec) throw std::runtime_error("read failed: " + ec.message());
  return beast::buffers_to_string(impl_->buffer.data());
}

bool WsClient::quiet_for(int ms) {
  impl_->buffer.clear();
  const auto r = impl_->run([&](auto h) { impl_->ws.async_read(impl_->buffer, h); }, std::chrono::milliseconds(ms));
  return !r.has_value();
}

int WsClient::read_close_code() {
  for (;;) {
    impl_->buffer.clear();
    const auto r = impl_->run([&](auto h) { impl_->ws.async_read(impl_->buffer, h); }, impl_->timeout);
    if (!r) return -1;
    if (*r == websocket::error::closed) return impl_->ws.reason().code;
    if (*r) return impl_->ws.reason().code ? impl_->ws.reason().code : 0;
  }
}

const std::vector<std::string>& WsClient::pongs() const { return impl_->pongs; }

int WsClient::close(int code) {
  const auto r =
      impl_->run([&](auto h) { impl_->ws.async_close(websocket::close_reason(static_cast<std::uint16_t>(code)), h); },
                 impl_->timeout);
  return r && !*r ? 0 : -1;
}

}  // namespace edri::test
