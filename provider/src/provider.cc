// pqcd-provider.so: an OpenSSL 3 provider whose hybrid post-quantum TLS 1.3 groups
// (draft-ietf-tls-ecdhe-mlkem: X25519MLKEM768, SecP256r1MLKEM768, SecP384r1MLKEM1024) and plain
// ML-KEM-512/768/1024 KEMs (FIPS 203, for EVP callers) are computed by a pqcd daemon. For each it
// offers a KEYMGMT and a KEM of its name; it announces the hybrids through the TLS-GROUP
// capability (a KEM group, TLS 1.3 only, no DTLS), so that libssl (nginx, s_server, s_client,
// curl) uses them like built-in groups:
//  - server: the client's key share becomes the encoded public key of a key object, and
//    EVP_PKEY_encapsulate makes one Encaps call to the daemon (the sizes are answered here);
//  - client: EVP_PKEY_keygen is one KeyGen call (the private key stays in the key object, wiped
//    when it is freed) and EVP_PKEY_decapsulate one Decaps call.
// The daemon checks the shares (the ML-KEM encapsulation key, the curve point, the ciphertext's
// length, an all-zero X25519 result); its refusals and any failure to reach it become errors on
// OpenSSL's error queue and fail the handshake. Configuration: docs/provider.md.
#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/params.h>
#include <openssl/prov_ssl.h>

#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "pqcd/client/types.h"
#include "pqcd/kernels/algorithms.h"
#include "pqcd/kernels/hybrid.h"
#include "pqcd/kernels/mlkem.h"
#include "transport.h"

namespace pqcd::provider {
namespace {

using client::Algorithm;

// ---- The KEMs: the TLS groups, then plain ML-KEM --------------------------------------------
struct Group {
  const char* name;     // the KEYMGMT's and the KEM's algorithm name (and the TLS group's)
  unsigned int tls_id;  // 0: not a TLS group (plain ML-KEM: EVP only)
  Algorithm algorithm;
  size_t ek_bytes;  // the client's key share
  size_t ct_bytes;  // the server's key share
  size_t ss_bytes;  // the shared secret
  unsigned int security_bits;
  // The kernel's check of a client key share (the encapsulation key): FIPS 203 §7.2 on the
  // ML-KEM part, the point on the curve (NIST curves), not of low order (X25519).
  absl::Status (*check_share)(kernels::Bytes);
};

// The sizes are the algorithm registry's (kernels/include/pqcd/kernels/algorithms.h), which the
// daemon serves: the client's enum values are the rows' pqc.v1.Algorithm numbers.
template <class Kem>
constexpr Group MakeGroup(const char* name, unsigned int tls_id, Algorithm algorithm,
                          unsigned int security_bits) {
  const kernels::AlgorithmFacts& f = *kernels::FindByApiValue(static_cast<int>(algorithm));
  return {
      name,           tls_id,        algorithm,           f.public_key_bytes, f.ciphertext_bytes,
      f.secret_bytes, security_bits, &Kem::CheckEncapsKey};
}
constexpr Group kGroups[] = {
    MakeGroup<kernels::X25519MlKem768>("X25519MLKEM768", 0x11EC, Algorithm::kX25519MlKem768, 192),
    MakeGroup<kernels::SecP256r1MlKem768>("SecP256r1MLKEM768", 0x11EB,
                                          Algorithm::kSecP256r1MlKem768, 192),
    MakeGroup<kernels::SecP384r1MlKem1024>("SecP384r1MLKEM1024", 0x11ED,
                                           Algorithm::kSecP384r1MlKem1024, 256),
    MakeGroup<kernels::MlKem512>("ML-KEM-512", 0, Algorithm::kMlKem512, 128),
    MakeGroup<kernels::MlKem768>("ML-KEM-768", 0, Algorithm::kMlKem768, 192),
    MakeGroup<kernels::MlKem1024>("ML-KEM-1024", 0, Algorithm::kMlKem1024, 256),
};
// draft-ietf-tls-ecdhe-mlkem's share sizes, as a check of the registry rows above.
static_assert(kGroups[0].ek_bytes == 1216 && kGroups[0].ct_bytes == 1120 &&
              kGroups[1].ek_bytes == 1249 && kGroups[1].ct_bytes == 1153 &&
              kGroups[2].ek_bytes == 1665 && kGroups[2].ct_bytes == 1665);
// And FIPS 203's sizes (Table 3) of the plain sets.
static_assert(kGroups[3].ek_bytes == 800 && kGroups[3].ct_bytes == 768 &&
              kGroups[4].ek_bytes == 1184 && kGroups[4].ct_bytes == 1088 &&
              kGroups[5].ek_bytes == 1568 && kGroups[5].ct_bytes == 1568);
constexpr size_t kGroupCount = sizeof(kGroups) / sizeof(kGroups[0]);

// ---- Errors ---------------------------------------------------------------------------------
enum Reason : int {
  kUnreachable = 1,
  kRefused = 2,
  kBadShare = 3,
  kNoKey = 4,
  kShortBuffer = 5,
  kBadAnswer = 6,
  kBadConfig = 7,
  kInvalidShare = 8,
};

const OSSL_ITEM kReasonStrings[] = {
    {kUnreachable, const_cast<char*>("pqcd daemon unreachable")},
    {kRefused, const_cast<char*>("pqcd daemon refused the operation")},
    {kBadShare, const_cast<char*>("key share of the wrong length")},
    {kNoKey, const_cast<char*>("key object has no such key")},
    {kShortBuffer, const_cast<char*>("output buffer too small")},
    {kBadAnswer, const_cast<char*>("pqcd daemon answered with wrong sizes")},
    {kBadConfig, const_cast<char*>("invalid pqcd provider configuration")},
    {kInvalidShare, const_cast<char*>("invalid key share")},
    {0, nullptr},
};

struct ProvCtx {
  const OSSL_CORE_HANDLE* handle = nullptr;
  OSSL_FUNC_core_new_error_fn* new_error = nullptr;
  OSSL_FUNC_core_set_error_debug_fn* set_error_debug = nullptr;
  OSSL_FUNC_core_vset_error_fn* vset_error = nullptr;
  std::unique_ptr<Transport> transport;
};

// ERR_raise_data for a provider: the error goes onto the calling thread's OpenSSL error queue
// through the core's functions, under this provider's library code with kReasonStrings' text.
#define PQCD_RAISE(prov, reason, ...) \
  RaiseError((prov), __FILE__, __LINE__, __func__, (reason), __VA_ARGS__)

__attribute__((format(printf, 6, 7))) void RaiseError(const ProvCtx* prov, const char* file,
                                                      int line, const char* func, int reason,
                                                      const char* fmt, ...) {
  if (prov == nullptr || prov->new_error == nullptr || prov->vset_error == nullptr) {
    return;
  }
  prov->new_error(prov->handle);
  if (prov->set_error_debug != nullptr) {
    prov->set_error_debug(prov->handle, file, line, func);
  }
  va_list args;
  va_start(args, fmt);
  prov->vset_error(prov->handle, reason, fmt, args);
  va_end(args);
}

// A failed daemon call: unreachable (fail-closed, naming the address) or refused.
void RaiseCallError(const ProvCtx* prov, const char* file, int line, const char* func,
                    const char* op, const Group& group, const absl::Status& status) {
  const bool unreachable = Unreachable(status);
  const std::string message(status.message());
  RaiseError(prov, file, line, func, unreachable ? kUnreachable : kRefused, "%s %s at %s: %s: %s",
             op, group.name, prov->transport->config().address.c_str(),
             absl::StatusCodeToString(status.code()).c_str(), message.c_str());
}
#define PQCD_RAISE_CALL(prov, op, group, status) \
  RaiseCallError((prov), __FILE__, __LINE__, __func__, (op), (group), (status))

void Wipe(std::string& s) {
  if (!s.empty()) {
    OPENSSL_cleanse(s.data(), s.size());
  }
  s.clear();
}

// ---- KEYMGMT --------------------------------------------------------------------------------
struct KeyObject {
  ProvCtx* prov;
  const Group* group;
  std::string public_key;   // the encoded public key: this group's client key share
  std::string private_key;  // the daemon's expanded private key (only from our own KeyGen)
};

struct GenCtx {
  ProvCtx* prov;
  const Group* group;
  int selection;
};

template <size_t G>
void* KeyNew(void* provctx) {
  return new (std::nothrow) KeyObject{static_cast<ProvCtx*>(provctx), &kGroups[G], {}, {}};
}

void KeyFree(void* keydata) {
  auto* key = static_cast<KeyObject*>(keydata);
  if (key == nullptr) {
    return;
  }
  Wipe(key->private_key);
  delete key;
}

int KeyHas(const void* keydata, int selection) {
  const auto* key = static_cast<const KeyObject*>(keydata);
  if (key == nullptr) {
    return 0;
  }
  if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0 && key->public_key.empty()) {
    return 0;
  }
  if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0 && key->private_key.empty()) {
    return 0;
  }
  return 1;  // no domain parameters: the group is the key type
}

int KeyMatch(const void* a, const void* b, int selection) {
  const auto* ka = static_cast<const KeyObject*>(a);
  const auto* kb = static_cast<const KeyObject*>(b);
  if (ka->group != kb->group) {
    return 0;
  }
  if ((selection & OSSL_KEYMGMT_SELECT_KEYPAIR) != 0) {
    return ka->public_key.size() == kb->public_key.size() &&
                   CRYPTO_memcmp(ka->public_key.data(), kb->public_key.data(),
                                 ka->public_key.size()) == 0
               ? 1
               : 0;
  }
  return 1;
}

// What a client's key share (a TLS group) or a peer's encapsulation key (plain ML-KEM) is called
// in errors.
const char* PublicWhat(const Group& g) {
  return g.tls_id != 0 ? "a key share" : "an encapsulation key";
}

// Makes `data` the key's public key, once it passed the checks.
int SetPublicKey(KeyObject* key, const void* data, size_t len) {
  const Group& g = *key->group;
  if (len != g.ek_bytes) {
    PQCD_RAISE(key->prov, kBadShare, "%s: %s of %zu bytes, expected %zu", g.name, PublicWhat(g),
               len, g.ek_bytes);
    return 0;
  }
  // Checked here, not only by the daemon's Encaps: libssl answers a failure to set the client's
  // share with the illegal_parameter alert that draft-ietf-tls-ecdhe-mlkem asks for (a failed
  // Encaps would be an internal_error), and a share refused here costs the daemon nothing.
  if (const absl::Status st = g.check_share(kernels::Bytes(static_cast<const uint8_t*>(data), len));
      !st.ok()) {
    const std::string why(st.message());
    PQCD_RAISE(key->prov, kInvalidShare, "%s", why.c_str());
    return 0;
  }
  // A new public key makes this another key: a private key held before no longer belongs to it.
  Wipe(key->private_key);
  key->public_key.assign(static_cast<const char*>(data), len);
  return 1;
}

int KeySetParams(void* keydata, const OSSL_PARAM params[]) {
  auto* key = static_cast<KeyObject*>(keydata);
  const OSSL_PARAM* p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY);
  if (p == nullptr) {
    return 1;
  }
  const void* data = nullptr;
  size_t len = 0;
  if (!OSSL_PARAM_get_octet_string_ptr(p, &data, &len)) {
    return 0;
  }
  return SetPublicKey(key, data, len);
}

// Import and export (EVP_PKEY_fromdata, EVP_PKEY_new_raw_public_key_ex,
// EVP_PKEY_get_raw_public_key): the public key only, as OSSL_PKEY_PARAM_PUB_KEY (the same bytes
// as the encoded public key). The private key is the daemon's expanded form, kept for this
// process's own Decaps; it is neither imported nor exported.
int KeyImport(void* keydata, int selection, const OSSL_PARAM params[]) {
  auto* key = static_cast<KeyObject*>(keydata);
  // (EVP_PKEY_new_raw_public_key_ex asks for a key pair with the public key alone.)
  if ((selection & OSSL_KEYMGMT_SELECT_PRIVATE_KEY) != 0 &&
      OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_PRIV_KEY) != nullptr) {
    PQCD_RAISE(key->prov, kNoKey, "%s: private keys are not imported (the daemon makes them)",
               key->group->name);
    return 0;
  }
  if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) == 0) {
    return 1;  // no domain parameters: the algorithm is the key type
  }
  const OSSL_PARAM* p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_PUB_KEY);
  const void* data = nullptr;
  size_t len = 0;
  if (p == nullptr || !OSSL_PARAM_get_octet_string_ptr(p, &data, &len)) {
    PQCD_RAISE(key->prov, kNoKey, "%s: no public key to import", key->group->name);
    return 0;
  }
  return SetPublicKey(key, data, len);
}

int KeyExport(void* keydata, int selection, OSSL_CALLBACK* cb, void* cbarg) {
  auto* key = static_cast<KeyObject*>(keydata);
  if ((selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) == 0 || key->public_key.empty()) {
    return 0;
  }
  const OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, key->public_key.data(),
                                        key->public_key.size()),
      OSSL_PARAM_END,
  };
  return cb(params, cbarg);
}

const OSSL_PARAM* KeyImportExportTypes(int selection) {
  static const OSSL_PARAM kPublic[] = {
      OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, nullptr, 0),
      OSSL_PARAM_END,
  };
  return (selection & OSSL_KEYMGMT_SELECT_PUBLIC_KEY) != 0 ? kPublic : nullptr;
}

const OSSL_PARAM* KeySettableParams(void*) {
  static const OSSL_PARAM kSettable[] = {
      OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, nullptr, 0),
      OSSL_PARAM_END,
  };
  return kSettable;
}

int KeyGetParams(void* keydata, OSSL_PARAM params[]) {
  auto* key = static_cast<KeyObject*>(keydata);
  const Group& g = *key->group;
  OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_BITS);
  if (p != nullptr && !OSSL_PARAM_set_int(p, static_cast<int>(8 * g.ek_bytes))) {
    return 0;
  }
  p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_SECURITY_BITS);
  if (p != nullptr && !OSSL_PARAM_set_int(p, static_cast<int>(g.security_bits))) {
    return 0;
  }
  p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_MAX_SIZE);
  if (p != nullptr && !OSSL_PARAM_set_int(p, static_cast<int>(g.ct_bytes))) {
    return 0;
  }
  p = OSSL_PARAM_locate(params, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY);
  if (p != nullptr) {
    if (key->public_key.empty()) {
      PQCD_RAISE(key->prov, kNoKey, "%s: no public key to encode", g.name);
      return 0;
    }
    if (!OSSL_PARAM_set_octet_string(p, key->public_key.data(), key->public_key.size())) {
      return 0;
    }
  }
  return 1;
}

const OSSL_PARAM* KeyGettableParams(void*) {
  static const OSSL_PARAM kGettable[] = {
      OSSL_PARAM_int(OSSL_PKEY_PARAM_BITS, nullptr),
      OSSL_PARAM_int(OSSL_PKEY_PARAM_SECURITY_BITS, nullptr),
      OSSL_PARAM_int(OSSL_PKEY_PARAM_MAX_SIZE, nullptr),
      OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, nullptr, 0),
      OSSL_PARAM_END,
  };
  return kGettable;
}

int GenSetParams(void* genctx, const OSSL_PARAM params[]) {
  auto* gen = static_cast<GenCtx*>(genctx);
  const OSSL_PARAM* p = OSSL_PARAM_locate_const(params, OSSL_PKEY_PARAM_GROUP_NAME);
  if (p == nullptr) {
    return 1;
  }
  const char* name = nullptr;
  if (!OSSL_PARAM_get_utf8_string_ptr(p, &name)) {
    return 0;
  }
  // libssl names the group it asks for; this key type is exactly one group.
  return OPENSSL_strcasecmp(name, gen->group->name) == 0 ? 1 : 0;
}

const OSSL_PARAM* GenSettableParams(void*, void*) {
  static const OSSL_PARAM kSettable[] = {
      OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, nullptr, 0),
      OSSL_PARAM_END,
  };
  return kSettable;
}

template <size_t G>
void* GenInit(void* provctx, int selection, const OSSL_PARAM params[]) {
  auto* gen = new (std::nothrow) GenCtx{static_cast<ProvCtx*>(provctx), &kGroups[G], selection};
  if (gen != nullptr && !GenSetParams(gen, params)) {
    delete gen;
    return nullptr;
  }
  return gen;
}

void* Gen(void* genctx, OSSL_CALLBACK*, void*) {
  auto* gen = static_cast<GenCtx*>(genctx);
  auto* key = new (std::nothrow) KeyObject{gen->prov, gen->group, {}, {}};
  if (key == nullptr) {
    return nullptr;
  }
  // Parameter generation (libssl's key object for a peer's share) has nothing to compute.
  if ((gen->selection & OSSL_KEYMGMT_SELECT_KEYPAIR) == 0) {
    return key;
  }
  absl::StatusOr<client::KeyPair> pair = gen->prov->transport->KeyGen(gen->group->algorithm);
  if (!pair.ok()) {
    PQCD_RAISE_CALL(gen->prov, "KeyGen", *gen->group, pair.status());
    KeyFree(key);
    return nullptr;
  }
  if (pair->public_key.size() != gen->group->ek_bytes || pair->private_key.empty()) {
    PQCD_RAISE(gen->prov, kBadAnswer, "KeyGen %s: a public key of %zu bytes", gen->group->name,
               pair->public_key.size());
    Wipe(pair->private_key);
    Wipe(pair->seed);
    KeyFree(key);
    return nullptr;
  }
  key->public_key = std::move(pair->public_key);
  key->private_key = pair->private_key;  // copied into the key object, then wiped here
  Wipe(pair->private_key);
  Wipe(pair->seed);
  return key;
}

void GenCleanup(void* genctx) {
  delete static_cast<GenCtx*>(genctx);
}

// ---- KEM ------------------------------------------------------------------------------------
struct KemCtx {
  ProvCtx* prov;
  const Group* group;
  KeyObject* key;  // not owned: the EVP_PKEY keeps it alive while the operation runs
};

template <size_t G>
void* KemNewCtx(void* provctx) {
  return new (std::nothrow) KemCtx{static_cast<ProvCtx*>(provctx), &kGroups[G], nullptr};
}

void KemFreeCtx(void* vctx) {
  delete static_cast<KemCtx*>(vctx);
}

void* KemDupCtx(void* vctx) {
  return new (std::nothrow) KemCtx(*static_cast<const KemCtx*>(vctx));
}

int KemInit(void* vctx, void* vkey, int selection) {
  auto* ctx = static_cast<KemCtx*>(vctx);
  auto* key = static_cast<KeyObject*>(vkey);
  if (key == nullptr || key->group != ctx->group || !KeyHas(key, selection)) {
    PQCD_RAISE(ctx->prov, kNoKey, "%s: the key has no %s key", ctx->group->name,
               selection == OSSL_KEYMGMT_SELECT_PUBLIC_KEY ? "public" : "private");
    return 0;
  }
  ctx->key = key;
  return 1;
}

int EncapsulateInit(void* vctx, void* vkey, const OSSL_PARAM[]) {
  return KemInit(vctx, vkey, OSSL_KEYMGMT_SELECT_PUBLIC_KEY);
}

int DecapsulateInit(void* vctx, void* vkey, const OSSL_PARAM[]) {
  return KemInit(vctx, vkey, OSSL_KEYMGMT_SELECT_PRIVATE_KEY);
}

int Encapsulate(void* vctx, unsigned char* out, size_t* outlen, unsigned char* secret,
                size_t* secretlen) {
  auto* ctx = static_cast<KemCtx*>(vctx);
  const Group& g = *ctx->group;
  if (out == nullptr) {  // the sizes only
    if (outlen != nullptr) {
      *outlen = g.ct_bytes;
    }
    if (secretlen != nullptr) {
      *secretlen = g.ss_bytes;
    }
    return 1;
  }
  if (outlen == nullptr || *outlen < g.ct_bytes || secret == nullptr || secretlen == nullptr ||
      *secretlen < g.ss_bytes) {
    PQCD_RAISE(ctx->prov, kShortBuffer, "Encaps %s: needs %zu + %zu bytes", g.name, g.ct_bytes,
               g.ss_bytes);
    return 0;
  }
  absl::StatusOr<client::EncapsResult> r =
      ctx->prov->transport->Encaps(g.algorithm, ctx->key->public_key);
  if (!r.ok()) {
    PQCD_RAISE_CALL(ctx->prov, "Encaps", g, r.status());
    return 0;
  }
  int ok = 0;
  if (r->ciphertext.size() != g.ct_bytes || r->shared_secret.size() != g.ss_bytes) {
    PQCD_RAISE(ctx->prov, kBadAnswer, "Encaps %s: %zu + %zu bytes", g.name, r->ciphertext.size(),
               r->shared_secret.size());
  } else {
    std::memcpy(out, r->ciphertext.data(), g.ct_bytes);
    std::memcpy(secret, r->shared_secret.data(), g.ss_bytes);
    *outlen = g.ct_bytes;
    *secretlen = g.ss_bytes;
    ok = 1;
  }
  Wipe(r->shared_secret);
  return ok;
}

int Decapsulate(void* vctx, unsigned char* out, size_t* outlen, const unsigned char* in,
                size_t inlen) {
  auto* ctx = static_cast<KemCtx*>(vctx);
  const Group& g = *ctx->group;
  if (out == nullptr) {
    if (outlen != nullptr) {
      *outlen = g.ss_bytes;
    }
    return 1;
  }
  if (outlen == nullptr || *outlen < g.ss_bytes) {
    PQCD_RAISE(ctx->prov, kShortBuffer, "Decaps %s: needs %zu bytes", g.name, g.ss_bytes);
    return 0;
  }
  if (inlen != g.ct_bytes) {
    PQCD_RAISE(ctx->prov, kBadShare, "%s: a %s of %zu bytes, expected %zu", g.name,
               g.tls_id != 0 ? "server key share" : "ciphertext", inlen, g.ct_bytes);
    return 0;
  }
  absl::StatusOr<client::DecapsResult> r = ctx->prov->transport->Decaps(
      g.algorithm, ctx->key->private_key, std::string(reinterpret_cast<const char*>(in), inlen));
  if (!r.ok()) {
    PQCD_RAISE_CALL(ctx->prov, "Decaps", g, r.status());
    return 0;
  }
  int ok = 0;
  if (r->shared_secret.size() != g.ss_bytes) {
    PQCD_RAISE(ctx->prov, kBadAnswer, "Decaps %s: a secret of %zu bytes", g.name,
               r->shared_secret.size());
  } else {
    std::memcpy(out, r->shared_secret.data(), g.ss_bytes);
    *outlen = g.ss_bytes;
    ok = 1;
  }
  Wipe(r->shared_secret);
  return ok;
}

// ---- Dispatch tables ------------------------------------------------------------------------
#define PQCD_FN(f) reinterpret_cast<void (*)(void)>(f)

template <size_t G>
const OSSL_DISPATCH kKeymgmtFunctions[] = {
    {OSSL_FUNC_KEYMGMT_NEW, PQCD_FN(KeyNew<G>)},
    {OSSL_FUNC_KEYMGMT_FREE, PQCD_FN(KeyFree)},
    {OSSL_FUNC_KEYMGMT_HAS, PQCD_FN(KeyHas)},
    {OSSL_FUNC_KEYMGMT_MATCH, PQCD_FN(KeyMatch)},
    {OSSL_FUNC_KEYMGMT_GET_PARAMS, PQCD_FN(KeyGetParams)},
    {OSSL_FUNC_KEYMGMT_GETTABLE_PARAMS, PQCD_FN(KeyGettableParams)},
    {OSSL_FUNC_KEYMGMT_SET_PARAMS, PQCD_FN(KeySetParams)},
    {OSSL_FUNC_KEYMGMT_SETTABLE_PARAMS, PQCD_FN(KeySettableParams)},
    {OSSL_FUNC_KEYMGMT_IMPORT, PQCD_FN(KeyImport)},
    {OSSL_FUNC_KEYMGMT_IMPORT_TYPES, PQCD_FN(KeyImportExportTypes)},
    {OSSL_FUNC_KEYMGMT_EXPORT, PQCD_FN(KeyExport)},
    {OSSL_FUNC_KEYMGMT_EXPORT_TYPES, PQCD_FN(KeyImportExportTypes)},
    {OSSL_FUNC_KEYMGMT_GEN_INIT, PQCD_FN(GenInit<G>)},
    {OSSL_FUNC_KEYMGMT_GEN_SET_PARAMS, PQCD_FN(GenSetParams)},
    {OSSL_FUNC_KEYMGMT_GEN_SETTABLE_PARAMS, PQCD_FN(GenSettableParams)},
    {OSSL_FUNC_KEYMGMT_GEN, PQCD_FN(Gen)},
    {OSSL_FUNC_KEYMGMT_GEN_CLEANUP, PQCD_FN(GenCleanup)},
    {0, nullptr},
};

template <size_t G>
const OSSL_DISPATCH kKemFunctions[] = {
    {OSSL_FUNC_KEM_NEWCTX, PQCD_FN(KemNewCtx<G>)},
    {OSSL_FUNC_KEM_FREECTX, PQCD_FN(KemFreeCtx)},
    {OSSL_FUNC_KEM_DUPCTX, PQCD_FN(KemDupCtx)},
    {OSSL_FUNC_KEM_ENCAPSULATE_INIT, PQCD_FN(EncapsulateInit)},
    {OSSL_FUNC_KEM_ENCAPSULATE, PQCD_FN(Encapsulate)},
    {OSSL_FUNC_KEM_DECAPSULATE_INIT, PQCD_FN(DecapsulateInit)},
    {OSSL_FUNC_KEM_DECAPSULATE, PQCD_FN(Decapsulate)},
    {0, nullptr},
};

constexpr const char* kProperties = "provider=pqcd";

// One KEYMGMT and one KEM row per entry of kGroups, in its order.
template <size_t... G>
constexpr auto Rows(std::index_sequence<G...>, bool kem) {
  return std::array<OSSL_ALGORITHM, sizeof...(G) + 1>{
      OSSL_ALGORITHM{kGroups[G].name, kProperties, kem ? kKemFunctions<G> : kKeymgmtFunctions<G>,
                     "by the pqcd daemon"}...,
      OSSL_ALGORITHM{nullptr, nullptr, nullptr, nullptr}};
}
constexpr auto kKeymgmtAlgorithms = Rows(std::make_index_sequence<kGroupCount>(), false);
constexpr auto kKemAlgorithms = Rows(std::make_index_sequence<kGroupCount>(), true);

// ---- The provider ---------------------------------------------------------------------------
const OSSL_ALGORITHM* QueryOperation(void*, int operation_id, int* no_cache) {
  *no_cache = 0;
  switch (operation_id) {
    case OSSL_OP_KEYMGMT:
      return kKeymgmtAlgorithms.data();
    case OSSL_OP_KEM:
      return kKemAlgorithms.data();
    default:
      return nullptr;
  }
}

int GetCapabilities(void*, const char* capability, OSSL_CALLBACK* cb, void* arg) {
  if (OPENSSL_strcasecmp(capability, "TLS-GROUP") != 0) {
    return 0;
  }
  for (const Group& g : kGroups) {
    if (g.tls_id == 0) {
      continue;  // plain ML-KEM: no TLS group of OpenSSL 3.0's
    }
    unsigned int id = g.tls_id;
    unsigned int secbits = g.security_bits;
    unsigned int is_kem = 1;
    int min_tls = TLS1_3_VERSION;
    int max_tls = 0;    // no maximum
    int min_dtls = -1;  // not for DTLS
    int max_dtls = -1;
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_CAPABILITY_TLS_GROUP_NAME, const_cast<char*>(g.name),
                                         0),
        OSSL_PARAM_construct_utf8_string(OSSL_CAPABILITY_TLS_GROUP_NAME_INTERNAL,
                                         const_cast<char*>(g.name), 0),
        OSSL_PARAM_construct_utf8_string(OSSL_CAPABILITY_TLS_GROUP_ALG, const_cast<char*>(g.name),
                                         0),
        OSSL_PARAM_construct_uint(OSSL_CAPABILITY_TLS_GROUP_ID, &id),
        OSSL_PARAM_construct_uint(OSSL_CAPABILITY_TLS_GROUP_SECURITY_BITS, &secbits),
        OSSL_PARAM_construct_int(OSSL_CAPABILITY_TLS_GROUP_MIN_TLS, &min_tls),
        OSSL_PARAM_construct_int(OSSL_CAPABILITY_TLS_GROUP_MAX_TLS, &max_tls),
        OSSL_PARAM_construct_int(OSSL_CAPABILITY_TLS_GROUP_MIN_DTLS, &min_dtls),
        OSSL_PARAM_construct_int(OSSL_CAPABILITY_TLS_GROUP_MAX_DTLS, &max_dtls),
        OSSL_PARAM_construct_uint(OSSL_CAPABILITY_TLS_GROUP_IS_KEM, &is_kem),
        OSSL_PARAM_END,
    };
    if (!cb(params, arg)) {
      return 0;
    }
  }
  return 1;
}

const OSSL_PARAM* GettableParams(void*) {
  static const OSSL_PARAM kGettable[] = {
      OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_NAME, nullptr, 0),
      OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_VERSION, nullptr, 0),
      OSSL_PARAM_utf8_ptr(OSSL_PROV_PARAM_BUILDINFO, nullptr, 0),
      OSSL_PARAM_int(OSSL_PROV_PARAM_STATUS, nullptr),
      OSSL_PARAM_END,
  };
  return kGettable;
}

int GetParams(void*, OSSL_PARAM params[]) {
  OSSL_PARAM* p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_NAME);
  if (p != nullptr && !OSSL_PARAM_set_utf8_ptr(p, "pqcd provider")) {
    return 0;
  }
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_VERSION);
  if (p != nullptr && !OSSL_PARAM_set_utf8_ptr(p, PQCD_PROVIDER_VERSION)) {
    return 0;
  }
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_BUILDINFO);
  if (p != nullptr && !OSSL_PARAM_set_utf8_ptr(p, "pqcd " PQCD_PROVIDER_VERSION)) {
    return 0;
  }
  p = OSSL_PARAM_locate(params, OSSL_PROV_PARAM_STATUS);
  if (p != nullptr && !OSSL_PARAM_set_int(p, 1)) {
    return 0;
  }
  return 1;
}

const OSSL_ITEM* GetReasonStrings(void*) {
  return kReasonStrings;
}

void Teardown(void* provctx) {
  delete static_cast<ProvCtx*>(provctx);
}

const OSSL_DISPATCH kProviderFunctions[] = {
    {OSSL_FUNC_PROVIDER_TEARDOWN, PQCD_FN(Teardown)},
    {OSSL_FUNC_PROVIDER_GETTABLE_PARAMS, PQCD_FN(GettableParams)},
    {OSSL_FUNC_PROVIDER_GET_PARAMS, PQCD_FN(GetParams)},
    {OSSL_FUNC_PROVIDER_QUERY_OPERATION, PQCD_FN(QueryOperation)},
    {OSSL_FUNC_PROVIDER_GET_CAPABILITIES, PQCD_FN(GetCapabilities)},
    {OSSL_FUNC_PROVIDER_GET_REASON_STRINGS, PQCD_FN(GetReasonStrings)},
    {0, nullptr},
};

// The settings: the provider's openssl.cnf section, then the environment (which wins).
bool ReadConfig(ProvCtx* prov, OSSL_FUNC_core_get_params_fn* core_get_params,
                TransportConfig* config) {
  const char* address = nullptr;
  const char* deadline_ms = nullptr;
  const char* lane = nullptr;
  const char* spin_us = nullptr;
  const char* fallback = nullptr;
  struct Setting {
    const char* key;  // in the openssl.cnf section
    const char* env;  // overrides the section when set and not empty; null: none
    const char** value;
  };
  const Setting settings[] = {
      {"pqcd_address", "PQCD_PROVIDER_ADDRESS", &address},
      {"pqcd_deadline_ms", "PQCD_PROVIDER_DEADLINE_MS", &deadline_ms},
      {"pqcd_lane", nullptr, &lane},
      {"pqcd_lane_spin_us", "PQCD_PROVIDER_LANE_SPIN_US", &spin_us},
      {"pqcd_fallback", "PQCD_PROVIDER_FALLBACK", &fallback},
  };
  constexpr size_t kSettings = std::size(settings);
  if (core_get_params != nullptr) {
    OSSL_PARAM request[kSettings + 1];
    for (size_t i = 0; i < kSettings; ++i) {
      request[i] =
          OSSL_PARAM_construct_utf8_ptr(settings[i].key, const_cast<char**>(settings[i].value), 0);
    }
    request[kSettings] = OSSL_PARAM_construct_end();
    if (!core_get_params(prov->handle, request)) {
      return false;
    }
  }
  for (const Setting& setting : settings) {
    const char* env = setting.env != nullptr ? std::getenv(setting.env) : nullptr;
    if (env != nullptr && *env != '\0') *setting.value = env;
  }
  if (address != nullptr && *address != '\0') {
    config->address = address;
  }
  if (fallback != nullptr) {
    if (OPENSSL_strcasecmp(fallback, "none") == 0) {
      config->fallback_local = false;
    } else if (OPENSSL_strcasecmp(fallback, "local") == 0) {
      config->fallback_local = true;
    } else {
      PQCD_RAISE(prov, kBadConfig, "pqcd_fallback=%s: not none or local", fallback);
      return false;
    }
  }
  if (spin_us != nullptr) {
    int64_t us = 0;
    if (!absl::SimpleAtoi(spin_us, &us) || us < 0 || us > 1000000) {
      PQCD_RAISE(prov, kBadConfig, "pqcd_lane_spin_us=%s: not 0 to 1000000 microseconds", spin_us);
      return false;
    }
    config->lane_spin_us = us;
  }
  if (deadline_ms != nullptr) {
    int ms = 0;
    if (!absl::SimpleAtoi(deadline_ms, &ms) || ms <= 0) {
      PQCD_RAISE(prov, kBadConfig, "pqcd_deadline_ms=%s: not a positive number of milliseconds",
                 deadline_ms);
      return false;
    }
    config->deadline = absl::Milliseconds(ms);
  }
  if (lane != nullptr) {
    bool on = true;
    if (OPENSSL_strcasecmp(lane, "on") == 0) {
      on = true;
    } else if (OPENSSL_strcasecmp(lane, "off") == 0) {
      on = false;
    } else if (!absl::SimpleAtob(lane, &on)) {  // true/false, yes/no, 1/0
      PQCD_RAISE(prov, kBadConfig, "pqcd_lane=%s: not on or off", lane);
      return false;
    }
    config->lane = on;
  }
  return true;
}

}  // namespace
}  // namespace pqcd::provider

extern "C" __attribute__((visibility("default"))) int OSSL_provider_init(
    const OSSL_CORE_HANDLE* handle, const OSSL_DISPATCH* in, const OSSL_DISPATCH** out,
    void** provctx) {
  using namespace pqcd::provider;
  auto prov = std::make_unique<ProvCtx>();
  prov->handle = handle;
  OSSL_FUNC_core_get_params_fn* core_get_params = nullptr;
  for (; in->function_id != 0; ++in) {
    switch (in->function_id) {
      case OSSL_FUNC_CORE_GET_PARAMS:
        core_get_params = OSSL_FUNC_core_get_params(in);
        break;
      case OSSL_FUNC_CORE_NEW_ERROR:
        prov->new_error = OSSL_FUNC_core_new_error(in);
        break;
      case OSSL_FUNC_CORE_SET_ERROR_DEBUG:
        prov->set_error_debug = OSSL_FUNC_core_set_error_debug(in);
        break;
      case OSSL_FUNC_CORE_VSET_ERROR:
        prov->vset_error = OSSL_FUNC_core_vset_error(in);
        break;
      default:
        break;
    }
  }
  TransportConfig config;
  if (!ReadConfig(prov.get(), core_get_params, &config)) {
    return 0;
  }
  // No connection yet: the first operation makes it, in the process that uses it (nginx loads
  // the provider in its master and computes in the workers it forks).
  prov->transport = std::make_unique<Transport>(std::move(config));
  *out = kProviderFunctions;
  *provctx = prov.release();
  return 1;
}
