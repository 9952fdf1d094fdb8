/* pqcd_lane.h: the shared-memory lane's C API (libpqcd_lane), for callers on the daemon's host.
 *
 * A lane is a pair of rings in memory shared with pqcd, opened over the lane socket next to the
 * daemon's gRPC Unix socket (pqcd --unix PATH serves lanes on PATH.lane). Requests skip gRPC,
 * HTTP/2 and protobuf: they are written into a slot of the shared memory and served by the
 * daemon's pinned workers, in the same bursts as gRPC requests, under the caller's Unix identity
 * (SO_PEERCRED) with the same rights, quotas and audit as gRPC on the Unix socket.
 *
 *   pqcd_lane* lane;
 *   char err[256];
 *   if (pqcd_lane_open("/run/pqcd/pqcd.sock", 0, &lane, err, sizeof err) != 0) { ... err ... }
 *   pqcd_lane_request rq = {0};
 *   rq.op = PQCD_LANE_DECAPS; rq.algorithm = 2;  // pqc.v1.Algorithm ML_KEM_768
 *   rq.key = dk; rq.key_len = dk_len; rq.input = ct; rq.input_len = ct_len;
 *   pqcd_lane_result r;
 *   if (pqcd_lane_call(lane, &rq, -1, &r) == 0 && r.code == 0) use(r.out[0], r.out_len[0]);
 *   pqcd_lane_release(lane, &r);  // the slot is wiped and free again
 *   pqcd_lane_close(lane);
 *
 * Pipelining: pqcd_lane_submit up to pqcd_lane_slots() requests, then pqcd_lane_wait for their
 * results (in completion order; match them by tag) and pqcd_lane_release each.
 *
 * A lane is not thread-safe: use it from one thread at a time (open one lane per thread).
 * pqcd_lane_wait spins 200 µs before it sleeps on a futex (the daemon then wakes it with a system
 * call); the environment variable PQCD_LANE_SPIN_US, read by pqcd_lane_open, or
 * pqcd_lane_set_spin_us changes that (0..1000000): longer spins cost the caller CPU and save the
 * daemon wake-ups under load.
 * Functions return 0 or one of the negative PQCD_LANE_E* values (pqcd_lane_strerror names it);
 * a request that reached the daemon reports the daemon's answer in result.code (a gRPC status
 * code) and result.message. */
#ifndef PQCD_LANE_H_
#define PQCD_LANE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define PQCD_LANE_API __attribute__((visibility("default")))
#else
#define PQCD_LANE_API
#endif

typedef struct pqcd_lane pqcd_lane;

/* Operations (the gRPC API's). */
#define PQCD_LANE_KEYGEN 1
#define PQCD_LANE_ENCAPS 2
#define PQCD_LANE_DECAPS 3
#define PQCD_LANE_SIGN 4
#define PQCD_LANE_VERIFY 5
#define PQCD_LANE_HASH 6

/* Request flags. */
#define PQCD_LANE_HELD_KEY 1u      /* key_id (owner, key_version) names a held key */
#define PQCD_LANE_DETERMINISTIC 2u /* Sign: deterministic (default: hedged) */
#define PQCD_LANE_EXTERNAL_MU 4u   /* Sign, Verify: input is ML-DSA's mu */
#define PQCD_LANE_HOLD 8u          /* KeyGen: the daemon keeps the key (key_id: wanted or NULL) */

/* Errors of the library (the daemon's answers are in pqcd_lane_result.code). */
#define PQCD_LANE_EINVAL (-1)    /* a bad argument, or a request too large for a slot */
#define PQCD_LANE_EFULL (-2)     /* every slot is in flight: wait for a result first */
#define PQCD_LANE_ECLOSED (-3)   /* the daemon closed the lane (stopping, or the lane broke) */
#define PQCD_LANE_ETIMEDOUT (-4) /* no result within the timeout */
#define PQCD_LANE_ECONNECT (-5)  /* no lane socket, or the daemon refused the lane (see err) */
#define PQCD_LANE_EBUSY (-6)     /* pqcd_lane_call while other requests are in flight */

typedef struct pqcd_lane_request {
  uint32_t op;            /* PQCD_LANE_KEYGEN ... PQCD_LANE_HASH */
  uint32_t algorithm;     /* pqc.v1.Algorithm number; 0 with a held key: the key's */
  uint32_t flags;         /* PQCD_LANE_HELD_KEY | ... */
  uint32_t pre_hash;      /* pqc.v1.PreHash (Sign, Verify) */
  uint32_t key_version;   /* held key: 0 = the newest */
  uint32_t output_length; /* Hash of SHAKE: bytes wanted (0: the default) */
  uint32_t timeout_ms;    /* 0: none */
  uint64_t tag;           /* echoed in the result */
  const char* owner;      /* held key of another identity (admins); NULL: the caller's own */
  const char* key_id;     /* held key id (KeyGen with HOLD: the id wanted; NULL: a new one) */
  const uint8_t* context;
  size_t context_len;
  const uint8_t* key; /* the key (or KeyGen's seed); none with a held key */
  size_t key_len;
  const uint8_t* input; /* Decaps: ciphertext; Sign, Verify: message or mu; Hash: data */
  size_t input_len;
  const uint8_t* signature; /* Verify */
  size_t signature_len;
} pqcd_lane_request;

typedef struct pqcd_lane_result {
  uint64_t tag;
  int32_t code;  /* gRPC status code; 0: OK */
  int32_t valid; /* Verify: 1 if the signature is valid */
  uint32_t key_version;
  const char* message; /* the daemon's error text (not NUL-terminated) */
  size_t message_len;
  const char* key_id; /* KeyGen with HOLD: the id of the key created */
  size_t key_id_len;
  /* Outputs, pointing into the slot until pqcd_lane_release: KeyGen public key, private key,
   * seed; Encaps ciphertext, shared secret; Decaps shared secret; Sign signature; Hash digest. */
  const uint8_t* out[3];
  size_t out_len[3];
  uint32_t slot; /* the library's */
} pqcd_lane_result;

/* Opens a lane to the daemon whose gRPC Unix socket is unix_socket (the lane socket is
 * unix_socket + ".lane"; a path that ends in ".lane" is used as given). slots: how many requests
 * may be in flight (0: the daemon's default). On failure err (if not NULL) gets the reason. */
PQCD_LANE_API int pqcd_lane_open(const char* unix_socket, uint32_t slots, pqcd_lane** lane,
                                 char* err, size_t err_len);
/* Closes the lane (the daemon frees it at once) and frees *lane. NULL is ignored. */
PQCD_LANE_API void pqcd_lane_close(pqcd_lane* lane);

PQCD_LANE_API uint32_t pqcd_lane_slots(const pqcd_lane* lane);
/* How long pqcd_lane_wait spins before it sleeps, in microseconds (0..1000000; others are
 * refused with PQCD_LANE_EINVAL). */
PQCD_LANE_API int pqcd_lane_set_spin_us(pqcd_lane* lane, int64_t spin_us);
/* The longest input (message, data) and hash output a request may carry. */
PQCD_LANE_API uint32_t pqcd_lane_max_input(const pqcd_lane* lane);
/* Requests submitted whose results have not been taken by pqcd_lane_wait. */
PQCD_LANE_API uint32_t pqcd_lane_in_flight(const pqcd_lane* lane);

/* 1 when the request fits the lane's slots (what pqcd_lane_submit refuses as PQCD_LANE_EINVAL:
 * a null pointer with a length, an input over pqcd_lane_max_input, more than a slot in all),
 * else 0. Reads only the lane's geometry: any thread may call it. */
PQCD_LANE_API int pqcd_lane_fits(const pqcd_lane* lane, const pqcd_lane_request* request);
/* Copies the request into a free slot and hands it to the daemon. */
PQCD_LANE_API int pqcd_lane_submit(pqcd_lane* lane, const pqcd_lane_request* request);
/* Takes the next result: spins briefly, then sleeps; timeout_us < 0: no limit. The result's
 * memory is the slot's until pqcd_lane_release. */
PQCD_LANE_API int pqcd_lane_wait(pqcd_lane* lane, int64_t timeout_us, pqcd_lane_result* result);
/* Wipes the result's slot and makes it free for another request. */
PQCD_LANE_API void pqcd_lane_release(pqcd_lane* lane, pqcd_lane_result* result);
/* pqcd_lane_submit then pqcd_lane_wait, with nothing else in flight. */
PQCD_LANE_API int pqcd_lane_call(pqcd_lane* lane, const pqcd_lane_request* request,
                                 int64_t timeout_us, pqcd_lane_result* result);

PQCD_LANE_API const char* pqcd_lane_strerror(int rc);

#ifdef __cplusplus
}
#endif

#endif /* PQCD_LANE_H_ */
