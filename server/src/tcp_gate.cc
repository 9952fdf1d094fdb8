#include "tcp_gate.h"

#include <arpa/inet.h>
#include <grpc/support/sync.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstring>
#include <utility>

namespace pqcd::server {
namespace {

// gRPC's socket mutator, laid out as gRPC 1.51 declares it in src/core/lib/iomgr/socket_mutator.h
// (not installed): a vtable pointer and a reference count, which gRPC reads and changes, then
// what we keep. Only its address crosses into gRPC, as a grpc_socket_mutator*.
enum FdUsage : int { kClientConnection = 0, kServerListener = 1, kServerConnection = 2 };
struct MutateInfo {
  int fd;
  FdUsage usage;
};
struct Mutator;
struct MutatorVtable {
  bool (*mutate_fd)(int fd, Mutator* m);
  int (*compare)(Mutator* a, Mutator* b);
  void (*destroy)(Mutator* m);
  bool (*mutate_fd_2)(const MutateInfo* info, Mutator* m);
};
struct Mutator {
  const MutatorVtable* vtable;
  gpr_refcount refcount;
  std::shared_ptr<TcpConnectionGate> gate;  // after gRPC's part
};

// Every answer is true: gRPC 1.51 stops accepting on the whole port when a mutator fails for an
// accepted socket. A refused connection is shut down instead (TcpConnectionGate::Admit).
bool MutateFd2(const MutateInfo* info, Mutator* m) {
  if (info->usage == kServerListener) m->gate->NoteListener();
  if (info->usage == kServerConnection) (void)m->gate->Admit(info->fd);
  return true;
}
bool MutateFd(int, Mutator*) {
  return true;
}  // used only by a gRPC without mutate_fd_2
int Compare(Mutator* a, Mutator* b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}
void Destroy(Mutator* m) {
  delete m;
}

constexpr MutatorVtable kVtable = {MutateFd, Compare, Destroy, MutateFd2};

class GateOption : public grpc::ServerBuilderOption {
 public:
  explicit GateOption(std::shared_ptr<TcpConnectionGate> gate) : gate_(std::move(gate)) {}
  void UpdateArguments(grpc::ChannelArguments* args) override {
    auto* m = new Mutator{&kVtable, {}, gate_};
    gpr_ref_init(&m->refcount, 1);
    // The arguments take this reference; gRPC calls Destroy when its last copy is gone.
    args->SetSocketMutator(reinterpret_cast<grpc_socket_mutator*>(m));
  }
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*) override {}

 private:
  std::shared_ptr<TcpConnectionGate> gate_;
};

constexpr auto kPruneInterval = std::chrono::milliseconds(10);

}  // namespace

std::shared_ptr<TcpConnectionGate> TcpConnectionGate::Create(Options options) {
  return std::shared_ptr<TcpConnectionGate>(new TcpConnectionGate(options));
}

void TcpConnectionGate::Install(grpc::ServerBuilder& builder) {
  builder.SetOption(std::make_unique<GateOption>(shared_from_this()));
}

std::string TcpConnectionGate::AddressKey(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    return std::string("4") + std::string(reinterpret_cast<const char*>(&a->sin_addr), 4);
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    const auto* b = reinterpret_cast<const char*>(&a->sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) return std::string("4") + std::string(b + 12, 4);
    return std::string("6") + std::string(b, 8);
  }
  return "";
}

void TcpConnectionGate::EraseLocked(ConnMap::iterator it) {
  auto a = per_addr_.find(it->second.address);
  if (a != per_addr_.end() && --a->second == 0) per_addr_.erase(a);
  conns_.erase(it);
}

void TcpConnectionGate::PruneLocked() {
  last_prune_ = std::chrono::steady_clock::now();
  for (auto it = conns_.begin(); it != conns_.end();) {
    struct stat st {};
    if (::fstat(it->first, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_ino != it->second.inode) {
      auto next = std::next(it);
      EraseLocked(it);
      it = next;
    } else {
      ++it;
    }
  }
}

bool TcpConnectionGate::Admit(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return true;  // nothing to count; gRPC fails it on its own
  std::string address = AddressKey(fd);
  bool over_total = false, over_address = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // An fd the gate still counts belongs to a connection gRPC has closed since.
    if (auto it = conns_.find(fd); it != conns_.end()) EraseLocked(it);
    const auto at_address = [&] {
      auto a = per_addr_.find(address);
      return a == per_addr_.end() ? size_t{0} : a->second;
    };
    if ((conns_.size() >= options_.max_connections || at_address() >= options_.max_per_address) &&
        std::chrono::steady_clock::now() - last_prune_ >= kPruneInterval) {
      PruneLocked();
    }
    over_total = conns_.size() >= options_.max_connections;
    over_address = !over_total && at_address() >= options_.max_per_address;
    if (!over_total && !over_address) {
      conns_[fd] = Conn{st.st_ino, std::move(address)};
      ++per_addr_[conns_[fd].address];
      return true;
    }
  }
  (over_total ? refused_limit_ : refused_address_).fetch_add(1, std::memory_order_relaxed);
  Report(fd, over_total);
  // gRPC owns the descriptor: shut the connection down (its handshake reads the end and closes
  // it) and reset it rather than linger.
  linger lg{1, 0};
  (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  (void)::shutdown(fd, SHUT_RDWR);
  return false;
}

void TcpConnectionGate::Report(int fd, bool over_total) {
  if (!options_.log) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t last = last_report_ns_.load(std::memory_order_relaxed);
  if (now - last < 1'000'000'000 ||
      !last_report_ns_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return;
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  char host[INET6_ADDRSTRLEN] = "?";
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    int family = ss.ss_family;
    const void* a = &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr;
    if (family == AF_INET6) {
      const in6_addr* a6 = &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr;
      a = a6;
      if (IN6_IS_ADDR_V4MAPPED(a6)) {  // as the per-address cap counts it
        family = AF_INET;
        a = a6->s6_addr + 12;
      }
    }
    if (::inet_ntop(family, a, host, sizeof(host)) == nullptr) std::strcpy(host, "?");
  }
  const Refusals r = refusals();
  if (over_total) {
    options_.log->warn(
        "TCP connection from {} refused: --max-tcp-connections {} reached ({} "
        "refused so far at the total, {} at a per-address cap)",
        host, options_.max_connections, r.limit, r.address_limit);
  } else {
    options_.log->warn(
        "TCP connection from {} refused: --max-tcp-connections-per-address {} "
        "reached ({} refused so far at a per-address cap, {} at the total)",
        host, options_.max_per_address, r.address_limit, r.limit);
  }
}

size_t TcpConnectionGate::open() {
  std::lock_guard<std::mutex> lock(mu_);
  PruneLocked();
  return conns_.size();
}

TcpConnectionGate::Refusals TcpConnectionGate::refusals() const {
  return {refused_limit_.load(std::memory_order_relaxed),
          refused_address_.load(std::memory_order_relaxed)};
}

}  // namespace pqcd::server
