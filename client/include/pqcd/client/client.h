// The pqcd C++ client: typed calls for every RPC of pqc.v1.Crypto and pqc.v1.Keys, sync and async,
// Batch and Stream helpers, health checks. It hides the generated gRPC stubs.
//
//   auto client = pqcd::client::Client::Create({.targets = {"unix:/run/pqcd.sock"}});
//   auto kp = (*client)->KeyGen({.algorithm = Algorithm::kMlKem768});
//
// Every call has a deadline (CallOptions::timeout, else ClientOptions::default_timeout; never
// infinite). A call is retried only when it failed with UNAVAILABLE before it was sent to any
// daemon (no connection could be picked), so no operation ever runs twice. Errors are absl::Status
// values whose codes are the gRPC codes one-to-one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pqcd/client/types.h"

namespace pqc::v1 {
class ListKeysRequest;
}

namespace pqcd::client {

struct TlsOptions {
  bool enabled = false;
  std::string ca_file;      // PEM roots; empty: the system roots
  std::string cert_file;    // client certificate chain (mTLS), PEM
  std::string key_file;     // client private key (mTLS), PEM
  std::string server_name;  // overrides the name checked against the server certificate
};

// Batching: each crypto call stays one operation for the caller, but many calls in flight share a
// long-lived Stream and travel packed, many operations to a message each way, so that gRPC's
// per-message cost (larger than an ML-KEM decapsulation on the daemon) is shared. Details above
// Client::KeyGen.
struct BatchingOptions {
  // Carry KeyGen, Encaps, Decaps, Sign, Verify, Hash and Run, sync and async, over shared Streams
  // (false: one unary RPC per call). Keys, HashStream, Batch and Health calls stay unary, and so
  // does an operation over 64 KiB encoded (packing saves nothing there, and a message over the
  // daemon's size limit would fail the shared stream for every call on it).
  bool enabled = false;
  // Operations per Stream message at most. Must not exceed the daemon's --max-batch-items (a
  // larger message fails the whole stream).
  size_t max_pack = 64;
  // Operations written and not yet answered per shared stream; further calls wait in the client
  // (their deadlines run) until answers free room.
  size_t max_inflight = 1024;
  // Shared streams (each on its own channel, round robin); 0: one per channel.
  int streams = 0;
};

struct ClientOptions {
  // "host:port", "[v6]:port", "unix:/path" (or unix:///path), or any gRPC target URI
  // ("dns:///name:port", "ipv4:a:p,b:p"). Several targets form one round_robin channel.
  std::vector<std::string> targets = {"127.0.0.1:50051"};
  TlsOptions tls;
  absl::Duration default_timeout = absl::Seconds(30);
  // Deadline of a Stream (it covers the whole stream) when CallOptions gives none.
  absl::Duration default_stream_timeout = absl::Hours(1);
  // Attempts for a call that fails with UNAVAILABLE before it was sent (1 = no retry).
  int max_attempts = 5;
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(1);
  // Independent channels (HTTP/2 connections per daemon); calls are spread over them.
  int channels = 1;
  // gRPC load-balancing policy over the targets' addresses.
  std::string load_balancing = "round_robin";
  int max_message_bytes = 64 << 20;
  BatchingOptions batching;
  // The daemon's shared-memory lanes (pqcd --unix PATH serves them on PATH.lane): with one
  // "unix:PATH" target and a daemon that offers them, the crypto calls (KeyGen ... Hash, their
  // *Async forms, Run and RunAsync; not Batch, Stream, HashStream or Keys) go through lanes
  // instead of gRPC (the same results and statuses; operations a lane cannot carry,
  // KeyGen with labels or inputs over the daemon's --lane-max-input, still go by gRPC). The
  // client falls back to gRPC when the daemon offers no lane; lane_status() says which.
  struct LaneOptions {
    bool enabled = false;
    int lanes = 1;       // each driven by a thread of its own
    uint32_t slots = 0;  // requests in flight per lane; 0: the daemon's default
  } lane;
};

struct CallOptions {
  // Zero or negative: the client's default; infinite values are replaced by the default.
  absl::Duration timeout = absl::ZeroDuration();
  // Queue the call while no daemon is reachable, until the deadline.
  bool wait_for_ready = false;
};

template <class T>
using Callback = absl::AnyInvocable<void(absl::StatusOr<T>)>;

using BatchResults = std::vector<absl::StatusOr<Result>>;

struct PipelineOptions {
  size_t batch_size = 64;   // operations per Batch RPC
  size_t max_inflight = 8;  // Batch RPCs in flight at once
};

class Stream;
struct StreamOptions {
  size_t max_inflight = 64;  // Submit blocks while this many operations are unanswered
  // Operations per Stream message at most. Whenever the stream may write, it takes every queued
  // operation (up to max_pack) into one message, so operations submitted while a write is
  // outstanding share the next message; a lone operation leaves at once, alone. 1: one operation
  // per message (single form). Must not exceed the daemon's --max-batch-items. A message also
  // stops growing at 1 MiB, below the daemon's message size limit.
  size_t max_pack = 64;
};

// Counters of a Stream, or of all shared streams of a batching client (cumulative).
struct StreamStats {
  uint64_t messages_sent = 0;
  uint64_t operations_sent = 0;
  uint64_t messages_received = 0;
  uint64_t results_received = 0;
  uint64_t streams_opened = 0;
};

class Client {
 public:
  static absl::StatusOr<std::unique_ptr<Client>> Create(ClientOptions options);
  // "lanes" when operations go through the daemon's shared-memory lanes, else "gRPC: <why not>"
  // (or "not asked for").
  const std::string& lane_status() const;
  // Cancels the calls still in flight (their callbacks run with CANCELLED, or with what they had
  // already got) and waits until every callback has returned and gRPC is done with every call;
  // only then are the channels released. So: never destroy a Client inside one of its own
  // callbacks (it would wait for itself). Streams from OpenStream are not affected: each keeps
  // its own channel until it is destroyed.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const ClientOptions& options() const;
  // The gRPC target URI that the channels were created with (after resolving several targets).
  const std::string& channel_target() const;

  // ---- Crypto, synchronous ------------------------------------------------------------------
  // With ClientOptions::batching.enabled, these six calls, Run and their *Async forms do not make
  // one RPC each: each becomes one operation on a shared, long-lived Stream, written at once when
  // the stream is idle and packed with the other calls queued behind an outstanding write (no
  // timer, so a lone call is not delayed). For the caller nothing changes:
  //  - The call's deadline is kept by the client: a call still queued, or written and unanswered,
  //    when its deadline passes completes DEADLINE_EXCEEDED (the daemon may still run it; the
  //    stream has no deadline of its own). Every call completes exactly once.
  //  - Errors are per call (the daemon's code and message for that operation).
  //  - A stream that breaks (e.g. the daemon restarts) fails the calls it had written with its
  //    status (UNAVAILABLE); calls not yet written move to a new stream. When a stream cannot reach
  //    any daemon, its calls are retried as unary calls are: wait_for_ready calls until their
  //    deadline, the others up to max_attempts with backoff, so no operation ever runs twice.
  //  - The caller's identity is the channel's, as with unary calls.
  // Async callbacks run on gRPC threads or the client's deadline thread. A sync call made inside
  // such a callback goes as a unary RPC: waiting there for the shared stream could wait for
  // reactions that gRPC runs on that same thread once the callback has returned.
  absl::StatusOr<KeyPair> KeyGen(const KeyGenOp& op, const CallOptions& call = {});
  absl::StatusOr<EncapsResult> Encaps(const EncapsOp& op, const CallOptions& call = {});
  absl::StatusOr<DecapsResult> Decaps(const DecapsOp& op, const CallOptions& call = {});
  absl::StatusOr<SignResult> Sign(const SignOp& op, const CallOptions& call = {});
  absl::StatusOr<VerifyResult> Verify(const VerifyOp& op, const CallOptions& call = {});
  absl::StatusOr<HashResult> Hash(const HashOp& op, const CallOptions& call = {});
  // Client-streaming hash: next_chunk fills *chunk and returns true, or returns false at the end.
  absl::StatusOr<HashResult> HashStream(Algorithm algorithm,
                                        absl::FunctionRef<bool(std::string* chunk)> next_chunk,
                                        uint32_t output_length = 0, const CallOptions& call = {});
  absl::StatusOr<HashResult> HashStream(Algorithm algorithm, std::istream& in,
                                        uint32_t output_length = 0, const CallOptions& call = {});
  // One Batch RPC: one result per operation, in order (each with its own status).
  absl::StatusOr<BatchResults> Batch(const std::vector<Operation>& ops,
                                     const CallOptions& call = {});
  // Any number of operations, split into Batch RPCs of options.batch_size with up to
  // options.max_inflight in flight; results in order. A failed RPC fails the items it carried.
  BatchResults RunPipelined(const std::vector<Operation>& ops, const PipelineOptions& options = {},
                            const CallOptions& call = {});
  // One operation through its own unary RPC.
  absl::StatusOr<Result> Run(const Operation& op, const CallOptions& call = {});

  // ---- Crypto, asynchronous (callbacks run on a gRPC thread; they must not block long) ------
  void KeyGenAsync(KeyGenOp op, Callback<KeyPair> done, const CallOptions& call = {});
  void EncapsAsync(EncapsOp op, Callback<EncapsResult> done, const CallOptions& call = {});
  void DecapsAsync(DecapsOp op, Callback<DecapsResult> done, const CallOptions& call = {});
  void SignAsync(SignOp op, Callback<SignResult> done, const CallOptions& call = {});
  void VerifyAsync(VerifyOp op, Callback<VerifyResult> done, const CallOptions& call = {});
  void HashAsync(HashOp op, Callback<HashResult> done, const CallOptions& call = {});
  void HashStreamAsync(Algorithm algorithm, std::vector<std::string> chunks,
                       Callback<HashResult> done, uint32_t output_length = 0,
                       const CallOptions& call = {});
  void BatchAsync(std::vector<Operation> ops, Callback<BatchResults> done,
                  const CallOptions& call = {});
  void RunAsync(Operation op, Callback<Result> done, const CallOptions& call = {});

  // A bidirectional Stream: many operations pipelined over one call, answered as they finish.
  absl::StatusOr<std::unique_ptr<Stream>> OpenStream(const StreamOptions& options = {},
                                                     const CallOptions& call = {});

  // ---- Keys ---------------------------------------------------------------------------------
  // Without an Owner these manage the caller's own keys (ImportKeyOp::owner: see types.h).
  absl::StatusOr<KeyInfo> GetPublicKey(const std::string& key_id, uint32_t version = 0,
                                       const CallOptions& call = {});
  // Every key the caller owns (the daemon answers in pages of up to 1000; this fetches them all).
  absl::StatusOr<std::vector<KeyInfo>> ListKeys(
      const std::map<std::string, std::string>& label_selector = {}, const CallOptions& call = {});
  // Returns the number of versions deleted (version 0: every version).
  absl::StatusOr<uint32_t> DeleteKey(const std::string& key_id, uint32_t version = 0,
                                     const CallOptions& call = {});
  absl::StatusOr<KeyInfo> ImportKey(const ImportKeyOp& op, const CallOptions& call = {});
  absl::StatusOr<KeyInfo> RotateKey(const std::string& key_id, const CallOptions& call = {});
  // The same calls on the keys of `owner` (types.h: Owner::Of for an --admin identity managing
  // another identity's keys; ListKeys also Owner::All). ImportKeyOp::owner does this for imports.
  absl::StatusOr<KeyInfo> GetPublicKey(const Owner& owner, const std::string& key_id,
                                       uint32_t version = 0, const CallOptions& call = {});
  absl::StatusOr<std::vector<KeyInfo>> ListKeys(
      const Owner& owner, const std::map<std::string, std::string>& label_selector = {},
      const CallOptions& call = {});
  absl::StatusOr<uint32_t> DeleteKey(const Owner& owner, const std::string& key_id,
                                     uint32_t version = 0, const CallOptions& call = {});
  absl::StatusOr<KeyInfo> RotateKey(const Owner& owner, const std::string& key_id,
                                    const CallOptions& call = {});

  void GetPublicKeyAsync(std::string key_id, uint32_t version, Callback<KeyInfo> done,
                         const CallOptions& call = {});
  void ListKeysAsync(std::map<std::string, std::string> label_selector,
                     Callback<std::vector<KeyInfo>> done, const CallOptions& call = {});
  void DeleteKeyAsync(std::string key_id, uint32_t version, Callback<uint32_t> done,
                      const CallOptions& call = {});
  void ImportKeyAsync(ImportKeyOp op, Callback<KeyInfo> done, const CallOptions& call = {});
  void RotateKeyAsync(std::string key_id, Callback<KeyInfo> done, const CallOptions& call = {});

  // Counters of the shared streams of the batching client (zero when batching is off).
  StreamStats batching_stats() const;

  // ---- Health (grpc.health.v1) ----------------------------------------------------------------
  absl::StatusOr<HealthStatus> Health(const std::string& service = "",
                                      const CallOptions& call = {});
  // Polls Health until SERVING or the timeout passes.
  absl::Status WaitForServing(absl::Duration timeout);

  struct Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  void ListKeysPageAsync(pqc::v1::ListKeysRequest req, std::shared_ptr<std::vector<KeyInfo>> out,
                         Callback<std::vector<KeyInfo>> done, const CallOptions& call);
  std::unique_ptr<Impl> impl_;
};

// A bidirectional Stream call. Submit and Finish may be called from any thread; answers arrive on
// gRPC threads, possibly out of order, several per message when the daemon packs them (the
// callbacks of two answer messages may run at the same time, on two threads). An
// operation's in-flight slot is freed before its callback runs, so a callback may Submit one
// operation without blocking; what the callbacks of one answer message submit is written together
// once they have all run. Against a daemon that predates packed messages the stream notices the
// first rejected packed message and falls back to one operation per message (nothing runs twice).
class Stream {
 public:
  // Finishes the stream first (see Finish). Like a Client, destroy it outside the client's
  // callbacks: it may hold the last reference to its channel.
  virtual ~Stream() = default;
  // Sends one operation; blocks while max_inflight operations are unanswered. Fails (and never
  // calls done) when the stream has already ended.
  virtual absl::Status Submit(Operation op, Callback<Result> done) = 0;
  // Half-closes the stream, waits for every answer and returns the call's final status. Answers
  // still missing when the call ends get that status (or UNAVAILABLE).
  virtual absl::Status Finish() = 0;
  // Operations submitted and not yet answered.
  virtual size_t inflight() const = 0;
  // Messages and operations written and read so far.
  virtual StreamStats stats() const = 0;
};

// Maps a gRPC status code number and message to absl::Status (the codes are equal).
absl::Status StatusFromCode(int code, std::string_view message);

// The socket path of a "unix:PATH" or "unix:///PATH" target; nullopt for any other target. The
// shared-memory lanes (and the OpenSSL provider's own lanes) sit beside that socket.
std::optional<std::string> UnixSocketPath(std::string_view target);

// Builds the single gRPC target URI for the given targets (exposed for tests): one target is used
// as given (a bare "unix:" path gets "unix:" kept); several are resolved to addresses and joined
// into an "ipv4:"/"ipv6:"/"unix:" list.
absl::StatusOr<std::string> BuildChannelTarget(const std::vector<std::string>& targets);

}  // namespace pqcd::client
