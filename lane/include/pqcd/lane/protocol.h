// The shared-memory lane's format, defined once for the daemon (server/src/lanes.cc) and the
// client library (lane/src/lane_client.cc): how a lane is opened over its SOCK_SEQPACKET socket,
// the layout of the shared region, and the compact request and response format of a slot.
//
// A lane is one memfd, made and sealed (no shrinking, no growing) by the daemon and mapped by
// both sides:
//
//   [Control: one page]  the geometry (written by the daemon; the daemon never reads it back) and
//                        six counters, each on its own cache line
//   [submission ring]    slot_count uint32 slot indices, written by the caller
//   [completion ring]    slot_count uint32 slot indices, written by the daemon
//   [slots]              slot_count slots of slot_bytes each, from a page boundary
//
// A slot belongs to the caller until it pushes its index on the submission ring, then to the
// daemon until the daemon pushes the index on the completion ring. The request is a
// RequestHeader followed by its fields back to back (owner, key id, context, key, input,
// signature); the daemon replaces it with a ResponseHeader followed by the error message, the key
// id and the outputs. Both rings are single producer, single consumer, with free-running uint32
// indices (position = index % slot_count; slot_count is a power of two).
//
// Waking, only when a side is idle: the daemon sets daemon_idle before its worker blocks; a
// caller that pushed while it was set writes 1 to the lane's eventfd (the doorbell). A caller that
// waits for a completion sets caller_waiting and sleeps on a futex on completion_tail; the daemon
// wakes it after a push while it is set.
//
// Nothing the caller writes is trusted: the daemon keeps its own ring positions, reads each index
// once, copies a request out of the slot before it looks at it, checks every length against the
// slot, and closes the lane on any ring index that cannot be right.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "pqcd/kernels/algorithms.h"

namespace pqcd::lane {

inline constexpr uint64_t kMagic = 0x31454e414c435150ull;  // "PQCLANE1", little-endian
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kCacheLine = 64;
inline constexpr size_t kPage = 4096;

// The lane socket's path beside the gRPC Unix socket (pqcd --unix PATH): PATH + ".lane".
inline constexpr const char* kSocketSuffix = ".lane";

// ---- Opening a lane -----------------------------------------------------------------------------
// The caller connects to the lane socket and sends one OpenRequest; the daemon answers with one
// OpenReply, carrying two descriptors with SCM_RIGHTS when code is 0: the memfd, then the
// doorbell eventfd. The connection then stays open for the life of the lane; the daemon frees
// the lane as soon as it is closed (or the caller exits).
struct OpenRequest {
  uint64_t magic = kMagic;
  uint32_t version = kVersion;
  uint32_t slots = 0;  // wanted; 0: the daemon's default. Rounded up to a power of two, capped.
};
struct OpenReply {
  uint64_t magic = kMagic;
  uint32_t version = kVersion;
  int32_t code = 0;              // a gRPC status code; 0: the lane is open
  uint32_t slot_count = 0;       // a power of two
  uint32_t slot_bytes = 0;       // a multiple of kCacheLine
  uint32_t max_input_bytes = 0;  // the longest input (message, data) a request may carry
  uint32_t reserved = 0;
  uint64_t region_bytes = 0;  // the memfd's size
  uint64_t slots_offset = 0;  // where slot 0 starts
  char message[192] = {};     // why, when code is not 0 (NUL-terminated)
};

// ---- The shared region
// ---------------------------------------------------------------------------
struct alignas(kCacheLine) Counter {
  uint32_t value;
};
struct Control {
  // Line 0: the geometry, as in the OpenReply.
  uint64_t magic;
  uint32_t version;
  uint32_t slot_count;
  uint32_t slot_bytes;
  uint32_t max_input_bytes;
  uint64_t region_bytes;
  uint64_t slots_offset;
  uint8_t pad0[kCacheLine - 40];
  Counter submission_tail;  // caller: slots pushed
  Counter submission_head;  // daemon: slots taken
  Counter completion_tail;  // daemon: slots answered (the caller's futex word)
  Counter completion_head;  // caller: answers taken
  Counter daemon_idle;      // daemon: 1 while the lane's worker may block
  Counter caller_waiting;   // caller: 1 while it sleeps on completion_tail
  Counter state;            // daemon: kOpen, or why the lane no longer serves
};
static_assert(sizeof(Control) <= kPage);

enum LaneState : uint32_t {
  kOpen = 0,
  kDraining = 1,  // the daemon is stopping: requests are answered UNAVAILABLE
  kBroken = 2,    // the daemon found a ring index that cannot be right and stopped serving it
};

// Atomic access to a word of the shared region (both sides map it; neither owns its objects).
inline std::atomic_ref<uint32_t> Word(Counter& c) {
  return std::atomic_ref<uint32_t>(c.value);
}

inline constexpr size_t RingOffset() {
  return kPage;
}
inline uint32_t* SubmissionRing(void* base) {
  return reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(base) + RingOffset());
}
inline uint32_t* CompletionRing(void* base, uint32_t slot_count) {
  return SubmissionRing(base) + slot_count;
}
inline constexpr size_t SlotsOffset(uint32_t slot_count) {
  return (RingOffset() + 2 * sizeof(uint32_t) * slot_count + kPage - 1) / kPage * kPage;
}

// ---- Requests
// --------------------------------------------------------------------------------------- The
// operations are the gRPC API's (pqc.v1.Operation's fields, same numbers).
enum class Op : uint32_t {
  kKeyGen = 1,  // key: an optional seed; flags: kHold (key_id: the id wanted, or empty)
  kEncaps = 2,  // key: the encapsulation key (or a held key)
  kDecaps = 3,  // key: the decapsulation key or its seed (or a held key); input: the ciphertext
  kSign = 4,    // key: the private key or its seed (or a held key); input: the message (or mu)
  kVerify = 5,  // key: the public key (or a held key); input: the message; signature
  kHash = 6,    // input: the data; output_length: for SHAKE (0: the default)
};
inline constexpr uint32_t kNumOps = 6;

enum RequestFlags : uint32_t {
  kHeldKey = 1u << 0,        // key_id (and owner, version) name a held key; no key bytes
  kDeterministic = 1u << 1,  // Sign: deterministic (default: hedged)
  kExternalMu = 1u << 2,     // Sign, Verify: input is ML-DSA's mu
  kHold = 1u << 3,           // KeyGen: the daemon keeps the key (the answer has no private key)
};
inline constexpr uint32_t kAllRequestFlags = kHeldKey | kDeterministic | kExternalMu | kHold;

struct RequestHeader {
  uint64_t tag;          // the caller's; echoed in the response
  uint32_t op;           // Op
  uint32_t algorithm;    // pqc.v1.Algorithm (kernels::AlgorithmFacts::api_value); 0 with a held key
  uint32_t flags;        // RequestFlags
  uint32_t pre_hash;     // pqc.v1.PreHash (Sign, Verify)
  uint32_t key_version;  // held key: 0 = the newest
  uint32_t output_length;  // Hash of an XOF: bytes wanted (0: the default)
  uint32_t timeout_ms;  // 0: none; else the request is dropped (DEADLINE_EXCEEDED) if queued longer
  uint16_t owner_len;   // held key of another identity (admins with --allow-admin-key-use)
  uint16_t key_id_len;
  uint32_t context_len;
  uint32_t key_len;
  uint32_t input_len;
  uint32_t signature_len;
  uint32_t reserved[2];
};
static_assert(sizeof(RequestHeader) == 64);

// The bytes a request takes in its slot: the header and its fields.
inline uint64_t RequestBytes(const RequestHeader& h) {
  return uint64_t{sizeof(RequestHeader)} + h.owner_len + h.key_id_len + h.context_len + h.key_len +
         h.input_len + h.signature_len;
}

enum ResponseFlags : uint32_t {
  kValid = 1u << 0,  // Verify: the signature is valid
};

struct ResponseHeader {
  uint64_t tag;          // the request's
  int32_t code;          // a gRPC status code (0: OK)
  uint32_t flags;        // ResponseFlags
  uint32_t message_len;  // the error's text (code != 0)
  uint32_t key_version;  // the held key's version used, or created by KeyGen kHold
  uint16_t key_id_len;   // KeyGen kHold: the key's id
  uint16_t reserved0;
  // The outputs, in this order: KeyGen public key, private key, seed; Encaps ciphertext, shared
  // secret; Decaps shared secret; Sign signature; Hash digest.
  uint32_t out_len[3];
  uint32_t reserved[6];
};
static_assert(sizeof(ResponseHeader) == 64);

// The longest error message the daemon writes (longer ones are cut).
inline constexpr uint32_t kMaxMessageBytes = 512;
inline constexpr uint32_t kMaxKeyIdBytes = 128;
inline constexpr uint32_t kMaxOwnerBytes = 512;

// ---- Sizes, from the registry
// ------------------------------------------------------------------------
struct RegistryMaxima {
  size_t key = 0;        // the largest key a request carries (public, private or seed)
  size_t signature = 0;  // the largest signature
  size_t outputs = 0;    // the largest sum of one operation's outputs
  size_t context = 0;    // the longest context string
  size_t digest = 0;     // the largest fixed digest
};
constexpr RegistryMaxima Maxima() {
  RegistryMaxima m;
  for (const kernels::AlgorithmFacts& a : kernels::kAlgorithms) {
    m.key = std::max({m.key, a.public_key_bytes, a.private_key_bytes, a.seed_bytes});
    m.signature = std::max(m.signature, a.signature_bytes);
    m.context = std::max(m.context, a.max_context_bytes);
    m.digest = std::max(m.digest, a.digest_bytes);
    m.outputs = std::max({m.outputs, a.public_key_bytes + a.private_key_bytes + a.seed_bytes,
                          a.ciphertext_bytes + a.secret_bytes, a.signature_bytes});
  }
  return m;
}

constexpr size_t RoundUp(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// The slot size for requests whose input (message, data; for a hash also the output) is at most
// max_input bytes: room for the largest request and the largest answer of any algorithm.
constexpr size_t SlotBytes(size_t max_input) {
  constexpr RegistryMaxima m = Maxima();
  const size_t request = sizeof(RequestHeader) + kMaxOwnerBytes + kMaxKeyIdBytes + m.context +
                         m.key + max_input + m.signature;
  const size_t response = sizeof(ResponseHeader) + kMaxMessageBytes + kMaxKeyIdBytes +
                          std::max({m.outputs, m.digest, max_input});
  return RoundUp(std::max(request, response), kCacheLine);
}

// The region's size for slot_count slots of slot_bytes.
constexpr size_t RegionBytes(uint32_t slot_count, size_t slot_bytes) {
  return SlotsOffset(slot_count) + RoundUp(size_t{slot_count} * slot_bytes, kPage);
}

inline constexpr uint32_t kMaxSlots = 256;

}  // namespace pqcd::lane
