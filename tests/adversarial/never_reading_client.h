// A hostile HTTP/2 client for tests/adversarial (issue 25): it opens gRPC calls and never takes
// their answers. Used by the tests themselves and by pqcd_flood_helper, which runs it as other
// uids.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "pqc/v1/crypto.pb.h"

namespace pqcd::testing {

// An HTTP/2 client written by hand (RFC 9113, HPACK literals only): it announces an initial
// stream window of 0, so the daemon can send each call's headers but none of its answer. It does
// answer the connection's SETTINGS and PINGs (from its reader thread), so the connection itself
// stays healthy.
class NeverReadingClient {
 public:
  // Takes a connected stream socket (ConnectTcp, ConnectUnix) and starts HTTP/2 on it.
  explicit NeverReadingClient(int fd) : fd_(fd), connected_(fd >= 0) {
    if (!connected_) return;
    std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    // SETTINGS: ENABLE_PUSH (0x2) = 0, INITIAL_WINDOW_SIZE (0x4) = 0.
    const std::string settings("\x00\x02\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00", 12);
    out += Frame(0x4, 0, 0, settings);
    Send(out);
    reader_ = std::thread([this] { Read(); });
  }
  static int ConnectTcp(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return Connected(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  static int ConnectUnix(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    return Connected(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  ~NeverReadingClient() {
    if (fd_ < 0) return;
    ::shutdown(fd_, SHUT_RDWR);
    if (reader_.joinable()) reader_.join();
    ::close(fd_);
  }
  bool connected() const { return connected_; }

  // Opens a call of `method` ("/pqc.v1.Crypto/Batch") with one serialized request message. The
  // message is sent in DATA frames of at most 16 KiB within the daemon's flow-control windows
  // (it never reads the daemon's answers, but it does respect what the daemon lets it send), so a
  // request of megabytes arrives whole; it returns once the whole message is sent, or when the
  // daemon ends the stream or grants no window for 30 s.
  void Call(const std::string& method, const std::string& message) {
    std::lock_guard<std::mutex> call_lock(call_mu_);  // streams open in increasing order
    std::string headers;
    for (const auto& [name, value] : {std::pair<std::string, std::string>{":method", "POST"},
                                      {":scheme", "http"},
                                      {":path", method},
                                      {":authority", "127.0.0.1"},
                                      {"content-type", "application/grpc"},
                                      {"te", "trailers"}}) {
      headers += '\0';  // literal header field without indexing, new name
      headers += static_cast<char>(name.size());
      headers += name;
      headers += static_cast<char>(value.size());
      headers += value;
    }
    std::string grpc_message(5, '\0');
    const uint32_t n = static_cast<uint32_t>(message.size());
    grpc_message[1] = static_cast<char>(n >> 24);
    grpc_message[2] = static_cast<char>(n >> 16);
    grpc_message[3] = static_cast<char>(n >> 8);
    grpc_message[4] = static_cast<char>(n);
    grpc_message += message;
    const uint32_t stream = next_stream_;
    next_stream_ += 2;
    {
      std::lock_guard<std::mutex> lock(window_mu_);
      stream_window_[stream] = initial_window_;
    }
    Send(Frame(0x1, 0x4, stream, headers));
    for (size_t off = 0; off < grpc_message.size();) {
      int64_t room = 0;
      {
        std::unique_lock<std::mutex> lock(window_mu_);
        const bool granted = window_cv_.wait_for(lock, std::chrono::seconds(30), [&] {
          return closed_ || !stream_window_.contains(stream) ||
                 (connection_window_ > 0 && stream_window_[stream] > 0);
        });
        if (!granted || closed_ || !stream_window_.contains(stream)) return;
        room = std::min<int64_t>({16384, connection_window_, stream_window_[stream],
                                  static_cast<int64_t>(grpc_message.size() - off)});
        connection_window_ -= room;
        stream_window_[stream] -= room;
      }
      const bool last = off + static_cast<size_t>(room) == grpc_message.size();
      Send(Frame(0x0, last ? 0x1 : 0x0, stream,
                 grpc_message.substr(off, static_cast<size_t>(room))));
      off += static_cast<size_t>(room);
    }
    std::lock_guard<std::mutex> lock(window_mu_);
    stream_window_.erase(stream);  // sent whole: no more window needed
  }

 private:
  static int Connected(int fd, const sockaddr* addr, socklen_t len) {
    if (fd >= 0 && ::connect(fd, addr, len) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
  }
  static std::string Frame(uint8_t type, uint8_t flags, uint32_t stream,
                           const std::string& payload) {
    std::string f(9, '\0');
    const size_t len = payload.size();
    f[0] = static_cast<char>(len >> 16);
    f[1] = static_cast<char>(len >> 8);
    f[2] = static_cast<char>(len);
    f[3] = static_cast<char>(type);
    f[4] = static_cast<char>(flags);
    f[5] = static_cast<char>(stream >> 24);
    f[6] = static_cast<char>(stream >> 16);
    f[7] = static_cast<char>(stream >> 8);
    f[8] = static_cast<char>(stream);
    return f + payload;
  }
  void Send(const std::string& bytes) {
    std::lock_guard<std::mutex> lock(send_mu_);
    for (size_t off = 0; off < bytes.size();) {
      const ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += static_cast<size_t>(n);
    }
  }
  // Reads frames: ACKs SETTINGS and PINGs, keeps the windows the daemon grants (SETTINGS'
  // INITIAL_WINDOW_SIZE, WINDOW_UPDATE) and the streams it ends (RST_STREAM, END_STREAM), ignores
  // the rest (headers, trailers of refused calls).
  void Read() {
    std::string buf;
    char chunk[16384];
    for (;;) {
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) {
        std::lock_guard<std::mutex> lock(window_mu_);
        closed_ = true;
        window_cv_.notify_all();
        return;
      }
      buf.append(chunk, static_cast<size_t>(n));
      while (buf.size() >= 9) {
        const size_t len = (size_t{static_cast<uint8_t>(buf[0])} << 16) |
                           (size_t{static_cast<uint8_t>(buf[1])} << 8) |
                           static_cast<uint8_t>(buf[2]);
        if (buf.size() < 9 + len) break;
        const uint8_t type = static_cast<uint8_t>(buf[3]);
        const uint8_t flags = static_cast<uint8_t>(buf[4]);
        const uint32_t stream = Be32(buf, 5) & 0x7fffffffu;
        if (type == 0x4 && (flags & 0x1) == 0) {
          for (size_t at = 9; at + 6 <= 9 + len; at += 6) {
            const uint16_t id = static_cast<uint16_t>((static_cast<uint8_t>(buf[at]) << 8) |
                                                      static_cast<uint8_t>(buf[at + 1]));
            if (id != 0x4) continue;  // INITIAL_WINDOW_SIZE
            const int64_t value = Be32(buf, at + 2);
            std::lock_guard<std::mutex> lock(window_mu_);
            for (auto& [id_, window] : stream_window_) window += value - initial_window_;
            initial_window_ = value;
            window_cv_.notify_all();
          }
          Send(Frame(0x4, 0x1, 0, ""));
        }
        if (type == 0x6 && (flags & 0x1) == 0) Send(Frame(0x6, 0x1, 0, buf.substr(9, len)));
        if (type == 0x8 && len == 4) {  // WINDOW_UPDATE
          std::lock_guard<std::mutex> lock(window_mu_);
          const int64_t increment = Be32(buf, 9) & 0x7fffffffu;
          if (stream == 0) {
            connection_window_ += increment;
          } else if (auto it = stream_window_.find(stream); it != stream_window_.end()) {
            it->second += increment;
          }
          window_cv_.notify_all();
        }
        if (type == 0x3 || ((type == 0x1 || type == 0x0) && (flags & 0x1) != 0)) {
          std::lock_guard<std::mutex> lock(window_mu_);  // the daemon ended the stream
          stream_window_.erase(stream);
          window_cv_.notify_all();
        }
        buf.erase(0, 9 + len);
      }
    }
  }
  static uint32_t Be32(const std::string& b, size_t at) {
    return (uint32_t{static_cast<uint8_t>(b[at])} << 24) |
           (uint32_t{static_cast<uint8_t>(b[at + 1])} << 16) |
           (uint32_t{static_cast<uint8_t>(b[at + 2])} << 8) | static_cast<uint8_t>(b[at + 3]);
  }

  int fd_ = -1;
  bool connected_ = false;
  uint32_t next_stream_ = 1;  // call_mu_
  std::mutex call_mu_;
  std::mutex send_mu_;
  // What the daemon lets this client send (RFC 9113 §6.9), window_mu_.
  std::mutex window_mu_;
  std::condition_variable window_cv_;
  int64_t connection_window_ = 65535;
  int64_t initial_window_ = 65535;
  std::map<uint32_t, int64_t> stream_window_;  // streams still sending
  bool closed_ = false;
  std::thread reader_;
};

// 255 SHAKE256 outputs of 64 KiB: ~16 MiB of answers from a 3 KB request.
inline std::string HugeBatch() {
  pqc::v1::BatchRequest req;
  for (int i = 0; i < 255; ++i) {
    pqc::v1::Operation* op = req.add_operations();
    op->mutable_hash()->set_algorithm(pqc::v1::SHAKE256);
    op->mutable_hash()->set_data(std::to_string(i));
    op->mutable_hash()->set_output_length(64 << 10);
  }
  return req.SerializeAsString();
}

}  // namespace pqcd::testing
