// provider_evp_check OPENSSL_CNF: the provider through OpenSSL's EVP interface, as libssl drives
// it, against the daemon that OPENSSL_CNF names (run by test_provider_tls.py). For each group,
// and for plain ML-KEM-512/768/1024 (where the peer key is made by EVP_PKEY_new_raw_public_key_ex):
//  - a client key (EVP_PKEY_keygen: KeyGen), its encoded public key given to a server-side key
//    object (paramgen + EVP_PKEY_set1_encoded_public_key), EVP_PKEY_encapsulate (Encaps),
//    EVP_PKEY_decapsulate (Decaps): both secrets equal, the sizes those of docs/hybrids.md;
//  - refusals, each when the share is set (where libssl answers illegal_parameter): a share of the
//    wrong length, a curve part that is not a valid public key (X25519's low-order points, also
//    in non-canonical encodings; a P-256/P-384 point not on the curve) and an ML-KEM
//    encapsulation key that fails FIPS 203's modulus check: "invalid key share" and the
//    kernel's reason on the error queue.
// Prints one line per check; exit 0 when all pass.
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/provider.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct GroupCase {
  const char* name;
  size_t ek, ct, ss;
  size_t mlkem_offset;  // where the ML-KEM encapsulation key starts in the share
  size_t curve_offset, curve_bytes;
};

constexpr GroupCase kGroups[] = {
    {"X25519MLKEM768", 1216, 1120, 64, 0, 1184, 32},
    {"SecP256r1MLKEM768", 1249, 1153, 64, 65, 0, 65},
    {"SecP384r1MLKEM1024", 1665, 1665, 80, 97, 0, 97},
    // Plain ML-KEM (EVP only, no TLS group): no curve part.
    {"ML-KEM-512", 800, 768, 32, 0, 0, 0},
    {"ML-KEM-768", 1184, 1088, 32, 0, 0, 0},
    {"ML-KEM-1024", 1568, 1568, 32, 0, 0, 0},
};

int failures = 0;

void Check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// The error queue as one line (and emptied).
std::string Errors() {
  std::string all;
  const char* data = nullptr;
  int flags = 0;
  unsigned long e = 0;
  while ((e = ERR_get_error_all(nullptr, nullptr, nullptr, &data, &flags)) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    all += buf;
    if (data != nullptr && (flags & ERR_TXT_STRING) != 0) {
      all += " [";
      all += data;
      all += "]";
    }
    all += "; ";
  }
  return all;
}

// A server-side key object holding `share` as its encoded public key (what libssl makes of a
// client's key share), or nullptr.
EVP_PKEY* PeerKey(OSSL_LIB_CTX* libctx, const char* group,
                  const std::vector<unsigned char>& share) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(libctx, group, nullptr);
  EVP_PKEY* key = nullptr;
  if (ctx == nullptr || EVP_PKEY_paramgen_init(ctx) <= 0 || EVP_PKEY_paramgen(ctx, &key) <= 0) {
    EVP_PKEY_CTX_free(ctx);
    return nullptr;
  }
  EVP_PKEY_CTX_free(ctx);
  if (EVP_PKEY_set1_encoded_public_key(key, share.data(), share.size()) <= 0) {
    EVP_PKEY_free(key);
    return nullptr;
  }
  return key;
}

// Encapsulates to `peer`: true on success (ct and ss filled).
bool Encapsulate(OSSL_LIB_CTX* libctx, EVP_PKEY* peer, std::vector<unsigned char>* ct,
                 std::vector<unsigned char>* ss) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(libctx, peer, nullptr);
  size_t ctlen = 0, sslen = 0;
  bool ok = ctx != nullptr && EVP_PKEY_encapsulate_init(ctx, nullptr) > 0 &&
            EVP_PKEY_encapsulate(ctx, nullptr, &ctlen, nullptr, &sslen) > 0;
  if (ok) {
    ct->resize(ctlen);
    ss->resize(sslen);
    ok = EVP_PKEY_encapsulate(ctx, ct->data(), &ctlen, ss->data(), &sslen) > 0;
    ct->resize(ctlen);
    ss->resize(sslen);
  }
  EVP_PKEY_CTX_free(ctx);
  return ok;
}

void CheckGroup(OSSL_LIB_CTX* libctx, const GroupCase& g) {
  const std::string n = g.name;
  // Client: KeyGen.
  EVP_PKEY_CTX* gen = EVP_PKEY_CTX_new_from_name(libctx, g.name, nullptr);
  EVP_PKEY* client = nullptr;
  const bool generated = gen != nullptr && EVP_PKEY_keygen_init(gen) > 0 &&
                         EVP_PKEY_CTX_set_group_name(gen, g.name) > 0 &&
                         EVP_PKEY_keygen(gen, &client) > 0;
  EVP_PKEY_CTX_free(gen);
  Check(generated, n + ": keygen " + (generated ? "" : Errors()));
  if (!generated) return;
  unsigned char* encoded = nullptr;
  const size_t eklen = EVP_PKEY_get1_encoded_public_key(client, &encoded);
  std::vector<unsigned char> share(encoded, encoded + eklen);
  OPENSSL_free(encoded);
  Check(eklen == g.ek, n + ": key share of " + std::to_string(eklen) + " bytes");

  // The public key exported raw (EVP_PKEY_get_raw_public_key) is the encoded one, and imports
  // (EVP_PKEY_new_raw_public_key_ex, what an EVP caller of plain ML-KEM uses for a peer's key).
  size_t rawlen = 0;
  std::vector<unsigned char> raw;
  bool exported = EVP_PKEY_get_raw_public_key(client, nullptr, &rawlen) > 0;
  if (exported) {
    raw.resize(rawlen);
    exported = EVP_PKEY_get_raw_public_key(client, raw.data(), &rawlen) > 0 && raw == share;
  }
  EVP_PKEY* imported =
      EVP_PKEY_new_raw_public_key_ex(libctx, g.name, nullptr, share.data(), share.size());
  Check(exported && imported != nullptr,
        n + ": raw public key export and import " + (imported != nullptr ? "" : Errors()));

  // Server: Encaps to the share; client: Decaps. (The plain sets to the imported key.)
  EVP_PKEY* peer =
      g.curve_bytes == 0 && imported != nullptr ? imported : PeerKey(libctx, g.name, share);
  if (peer != imported) EVP_PKEY_free(imported);
  std::vector<unsigned char> ct, ss;
  const bool encapsulated = peer != nullptr && Encapsulate(libctx, peer, &ct, &ss);
  Check(encapsulated && ct.size() == g.ct && ss.size() == g.ss,
        n + ": encapsulate, " + std::to_string(ct.size()) + " + " + std::to_string(ss.size()) +
            " bytes " + (encapsulated ? "" : Errors()));
  EVP_PKEY_free(peer);
  if (encapsulated) {
    EVP_PKEY_CTX* dctx = EVP_PKEY_CTX_new_from_pkey(libctx, client, nullptr);
    std::vector<unsigned char> ss2(g.ss);
    size_t sslen = ss2.size();
    const bool decapsulated =
        dctx != nullptr && EVP_PKEY_decapsulate_init(dctx, nullptr) > 0 &&
        EVP_PKEY_decapsulate(dctx, ss2.data(), &sslen, ct.data(), ct.size()) > 0;
    Check(decapsulated && sslen == g.ss && ss2 == ss,
          n + ": decapsulate gives the same secret " + (decapsulated ? "" : Errors()));
    // A server share of the wrong length never reaches the daemon.
    sslen = ss2.size();
    const bool short_ct =
        dctx != nullptr && EVP_PKEY_decapsulate_init(dctx, nullptr) > 0 &&
        EVP_PKEY_decapsulate(dctx, ss2.data(), &sslen, ct.data(), ct.size() - 1) > 0;
    const std::string err = Errors();
    Check(!short_ct && err.find("key share of the wrong length") != std::string::npos,
          n + ": a server share one byte short refused: " + err);
    EVP_PKEY_CTX_free(dctx);
  }
  EVP_PKEY_free(client);

  // A client share of the wrong length: refused when libssl sets it.
  std::vector<unsigned char> longer = share;
  longer.push_back(0);
  EVP_PKEY* bad = PeerKey(libctx, g.name, longer);
  std::string err = Errors();
  Check(bad == nullptr && err.find("key share of the wrong length") != std::string::npos,
        n + ": a client share one byte long refused: " + err);
  EVP_PKEY_free(bad);

  // Shares refused when they are set: the curve part (X25519: points of low order, whose result
  // is all-zero, among them 0, 1, an order-8 point, p encoding 0, and 1 with bit 255 set, which
  // X25519 ignores; P-256/P-384: an uncompressed point not on the curve), the ML-KEM part (a
  // first coefficient of 0xFFF >= q).
  std::vector<std::pair<std::string, std::vector<unsigned char>>> refused;
  auto with_curve = [&](std::string what, std::vector<unsigned char> point) {
    std::vector<unsigned char> s2 = share;
    std::memcpy(s2.data() + g.curve_offset, point.data(), g.curve_bytes);
    refused.emplace_back(std::move(what), std::move(s2));
  };
  if (g.curve_bytes == 0) {
    // plain ML-KEM: no curve part
  } else if (g.curve_bytes == 32) {
    std::vector<unsigned char> u(32, 0);
    with_curve("X25519 point 0", u);
    u[0] = 1;
    with_curve("X25519 point 1", u);
    u[31] = 0x80;
    with_curve("X25519 point 1 with bit 255 set", u);
    const unsigned char order8[32] = {0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae,
                                      0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
                                      0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd,
                                      0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00};
    with_curve("X25519 point of order 8", std::vector<unsigned char>(order8, order8 + 32));
    std::vector<unsigned char> p(32, 0xff);
    p[0] = 0xed;
    p[31] = 0x7f;
    with_curve("X25519 point p (= 0)", p);
  } else {
    std::vector<unsigned char> off(g.curve_bytes, 0);
    off[0] = 0x04;  // (0, 0): not on either curve
    with_curve("point not on the curve", off);
  }
  std::vector<unsigned char> bad_mlkem = share;
  bad_mlkem[g.mlkem_offset] = 0xFF;
  bad_mlkem[g.mlkem_offset + 1] |= 0x0F;
  refused.emplace_back("ML-KEM part (modulus check)", bad_mlkem);
  for (const auto& [what, s] : refused) {
    EVP_PKEY* k = PeerKey(libctx, g.name, s);
    err = Errors();
    Check(k == nullptr && err.find("invalid key share") != std::string::npos,
          n + ": a share with a bad " + what + " refused when set: " + err);
    EVP_PKEY_free(k);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: provider_evp_check OPENSSL_CNF\n");
    return 2;
  }
  OSSL_LIB_CTX* libctx = OSSL_LIB_CTX_new();
  if (libctx == nullptr || !OSSL_LIB_CTX_load_config(libctx, argv[1]) ||
      !OSSL_PROVIDER_available(libctx, "pqcd")) {
    std::printf("FAIL the pqcd provider did not load from %s: %s\n", argv[1], Errors().c_str());
    return 1;
  }
  for (const GroupCase& g : kGroups) CheckGroup(libctx, g);
  OSSL_LIB_CTX_free(libctx);
  std::printf("%s\n", failures == 0 ? "all passed" : "failures");
  return failures == 0 ? 0 : 1;
}
