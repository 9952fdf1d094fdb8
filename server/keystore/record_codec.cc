#include "keystore/record_codec.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "openssl/crypto.h"
#include "openssl/evp.h"
#include "openssl/hmac.h"
#include "openssl/rand.h"
#include "openssl/sha.h"
#include "spdlog/spdlog.h"

namespace pqcd::server::internal {
namespace {

constexpr uint8_t kMagic[4] = {'P', 'Q', 'K', 'S'};
constexpr uint16_t kFormatV1 = 1;       // no uid (read for migration only)
constexpr uint16_t kFormatVersion = 2;  // written
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr char kAeadKeyLabel[] = "pqcd/keystore/v1/aes-256-gcm";
constexpr char kKekCheckLabel[] = "pqcd/keystore/v1/kek-check";
constexpr char kBlobKeyLabel[] = "pqcd/keystore/v1/manifest-aes-256-gcm";
constexpr uint16_t kBlobFormat = 1;
constexpr char kRecordSuffix[] = ".key";
constexpr char kRetiredSuffix[] = ".retired";

// ---- little-endian writer / bounds-checked reader --------------------------------------------

void PutU16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutU64(std::vector<uint8_t>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void PutBytes(std::vector<uint8_t>& out, const void* data, size_t n) {
  PutU32(out, static_cast<uint32_t>(n));
  const auto* p = static_cast<const uint8_t*>(data);
  out.insert(out.end(), p, p + n);
}
void PutU32At(std::vector<uint8_t>& out, size_t pos, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[pos + i] = static_cast<uint8_t>(v >> (8 * i));
}

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool U16(uint16_t* v) {
    if (n_ - pos_ < 2) return false;
    *v = static_cast<uint16_t>(p_[pos_] | (p_[pos_ + 1] << 8));
    pos_ += 2;
    return true;
  }
  bool U32(uint32_t* v) {
    if (n_ - pos_ < 4) return false;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<uint32_t>(p_[pos_ + i]) << (8 * i);
    *v = r;
    pos_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (n_ - pos_ < 8) return false;
    uint64_t r = 0;
    for (int i = 0; i < 8; ++i) r |= static_cast<uint64_t>(p_[pos_ + i]) << (8 * i);
    *v = r;
    pos_ += 8;
    return true;
  }
  bool Skip(size_t k, const uint8_t** where) {
    if (n_ - pos_ < k) return false;
    *where = p_ + pos_;
    pos_ += k;
    return true;
  }
  bool Str(std::string* s) {
    uint32_t len;
    const uint8_t* where;
    if (!U32(&len) || !Skip(len, &where)) return false;
    s->assign(reinterpret_cast<const char*>(where), len);
    return true;
  }
  bool Bytes(std::vector<uint8_t>* b) {
    uint32_t len;
    const uint8_t* where;
    if (!U32(&len) || !Skip(len, &where)) return false;
    b->assign(where, where + len);
    return true;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

void EncodeMeta(const RecordMeta& m, std::vector<uint8_t>& out) {
  PutU32(out, m.version);
  PutU32(out, static_cast<uint32_t>(m.algorithm));
  PutU64(out, static_cast<uint64_t>(m.created_unix_ms));
  PutBytes(out, m.key_id.data(), m.key_id.size());
  PutBytes(out, m.owner.data(), m.owner.size());
  PutU32(out, static_cast<uint32_t>(m.labels.size()));
  for (const auto& [k, v] : m.labels) {
    PutBytes(out, k.data(), k.size());
    PutBytes(out, v.data(), v.size());
  }
  PutBytes(out, m.public_key.data(), m.public_key.size());
  PutBytes(out, m.uid.data(), m.uid.size());
}

bool DecodeMeta(const uint8_t* p, size_t n, uint16_t format, RecordMeta* m) {
  Reader r(p, n);
  uint32_t alg, count;
  uint64_t created;
  if (!r.U32(&m->version) || !r.U32(&alg) || !r.U64(&created) || !r.Str(&m->key_id) ||
      !r.Str(&m->owner) || !r.U32(&count)) {
    return false;
  }
  m->algorithm = static_cast<int>(alg);
  m->created_unix_ms = static_cast<int64_t>(created);
  for (uint32_t i = 0; i < count; ++i) {
    std::string k, v;
    if (!r.Str(&k) || !r.Str(&v)) return false;
    m->labels[std::move(k)] = std::move(v);
  }
  if (!r.Bytes(&m->public_key)) return false;
  if (format != kFormatV1 && (!r.Str(&m->uid) || m->uid.size() != kUidBytes)) return false;
  return r.left() == 0;
}

// Parses "<key_id>.v<N><suffix>" (the legacy form and the tail of the owner-qualified one).
bool ParseIdVersion(std::string_view stem, std::string* key_id, uint32_t* version) {
  const size_t dot_v = stem.rfind(".v");
  if (dot_v == std::string_view::npos || dot_v + 2 >= stem.size() || stem.size() - dot_v > 12) {
    return false;
  }
  if (stem[dot_v + 2] == '0') return false;  // no leading zeros: one name per version
  uint64_t v = 0;
  for (size_t i = dot_v + 2; i < stem.size(); ++i) {
    if (stem[i] < '0' || stem[i] > '9') return false;
    v = v * 10 + static_cast<uint64_t>(stem[i] - '0');
  }
  if (v == 0 || v > 0xffffffffull) return false;
  if (!IsValidKeyId(stem.substr(0, dot_v))) return false;
  key_id->assign(stem.substr(0, dot_v));
  *version = static_cast<uint32_t>(v);
  return true;
}

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

void DeriveKey(const SecretBytes& kek, const char* label, uint8_t out[32]) {
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), kek.data(), static_cast<int>(kek.size()),
           reinterpret_cast<const uint8_t*>(label), std::strlen(label), out, &len) == nullptr ||
      len != 32) {
    // Only on a broken OpenSSL installation; fail closed with an unusable all-zero output would be
    // worse, so stop here.
    spdlog::critical("HMAC-SHA256 key derivation failed in OpenSSL");
    std::abort();
  }
}

// Branch-free hex digit decoding (the KEK is secret): returns the nibble, ORs -1 into *bad on a
// non-hex character.
int32_t HexNibble(uint8_t c, int32_t* bad) {
  const int32_t x = c;
  const int32_t lower = x | 0x20;
  auto ge = [](int32_t a, int32_t b) { return ~((a - b) >> 31); };  // -1 if a >= b else 0
  const int32_t digit = ge(x, '0') & ge('9', x);
  const int32_t alpha = ge(lower, 'a') & ge('f', lower);
  *bad |= ~(digit | alpha);
  return (digit & (x - '0')) | (alpha & (lower - 'a' + 10));
}

}  // namespace

absl::StatusOr<SecretBytes> LoadKek(const std::string& path, bool allow_shared) {
  // O_NONBLOCK: a FIFO given as the KEK file is refused (not a regular file) instead of blocking
  // start-up until something writes to it.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open KEK file ", path, ": ", std::strerror(errno)));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot stat KEK file ", path, ": ", std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("KEK file ", path, " is not a regular file"));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0 && !allow_shared) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "KEK file %s is accessible by group or others (mode %04o): restrict it with "
        "'chmod 600 %s' (or start pqcd with --allow-shared-kek-file to accept it)",
        path, static_cast<unsigned>(st.st_mode & 07777), path));
  }
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    spdlog::warn(
        "KEK file {} is accessible by group or others (mode {:04o}); restrict it with "
        "chmod 600",
        path, static_cast<unsigned>(st.st_mode & 07777));
  }
  const auto size = static_cast<size_t>(st.st_size);
  const std::string kExpect =
      "must hold exactly 32 raw bytes or 64 hex characters (optionally "
      "followed by a newline)";
  if (size != 32 && size != 64 && size != 65 && size != 66) {
    return absl::InvalidArgumentError(
        absl::StrCat("KEK file ", path, " has ", size, " bytes; it ", kExpect));
  }
  SecretBytes buf(size + 1);  // +1 detects a file that grew since fstat
  size_t got = 0;
  while (got < buf.size()) {
    const ssize_t r = read(fd, buf.data() + got, buf.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot read KEK file ", path, ": ", std::strerror(errno)));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  if (got != size) {
    return absl::FailedPreconditionError(
        absl::StrCat("KEK file ", path, " changed while being read"));
  }
  SecretBytes kek(32);
  if (size == 32) {
    std::memcpy(kek.data(), buf.data(), 32);
    return kek;
  }
  // Hex form; the line ending is not secret.
  bool ending_ok = size == 64 || (size == 65 && buf.data()[64] == '\n') ||
                   (size == 66 && buf.data()[64] == '\r' && buf.data()[65] == '\n');
  int32_t bad = 0;
  for (size_t i = 0; i < 32; ++i) {
    const int32_t hi = HexNibble(buf.data()[2 * i], &bad);
    const int32_t lo = HexNibble(buf.data()[2 * i + 1], &bad);
    kek.data()[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  if (!ending_ok || bad != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("KEK file ", path, " is not valid: it ", kExpect));
  }
  return kek;
}

RecordSealer::RecordSealer(const SecretBytes& kek) : aead_key_(32), blob_key_(32) {
  DeriveKey(kek, kAeadKeyLabel, aead_key_.data());
  DeriveKey(kek, kBlobKeyLabel, blob_key_.data());
  SecretBytes check(32);
  DeriveKey(kek, kKekCheckLabel, check.data());
  std::memcpy(kek_check_.data(), check.data(), kek_check_.size());
}

// magic | u16 format | u16 flags (0) | kek_check | fresh random nonce: the start of every sealed
// record and blob (all of it is authenticated as AAD).
absl::Status RecordSealer::AppendHeader(const uint8_t magic[4], uint16_t format,
                                        std::vector<uint8_t>& out) const {
  out.insert(out.end(), magic, magic + 4);
  PutU16(out, format);
  PutU16(out, 0);
  out.insert(out.end(), kek_check_.begin(), kek_check_.end());
  uint8_t nonce[kNonceBytes];
  if (RAND_bytes(nonce, sizeof nonce) != 1) {
    return absl::InternalError("random nonce generation failed");
  }
  out.insert(out.end(), nonce, nonce + kNonceBytes);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> RecordSealer::Seal(const RecordMeta& meta,
                                                        const SecretBytes& private_key) const {
  if (meta.uid.size() != kUidBytes) return absl::InternalError("record uid is not set");
  std::vector<uint8_t> out;
  if (absl::Status s = AppendHeader(kMagic, kFormatVersion, out); !s.ok()) return s;
  uint8_t nonce[kNonceBytes];  // the header ends with it
  std::memcpy(nonce, out.data() + out.size() - kNonceBytes, kNonceBytes);
  const size_t meta_len_pos = out.size();
  PutU32(out, 0);
  EncodeMeta(meta, out);
  const size_t meta_len = out.size() - meta_len_pos - 4;
  const size_t total = out.size() + 4 + private_key.size() + kTagBytes;
  if (total > kMaxRecordBytes) {
    return absl::InvalidArgumentError(absl::StrCat("key record would take ", total,
                                                   " bytes; the limit is ", kMaxRecordBytes,
                                                   " (labels, owner or public key too large)"));
  }
  PutU32At(out, meta_len_pos, static_cast<uint32_t>(meta_len));
  PutU32(out, static_cast<uint32_t>(private_key.size()));
  const size_t aad_len = out.size();
  out.resize(total);

  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  bool ok =
      ctx != nullptr &&
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, aead_key_.data(), nonce) == 1 &&
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, out.data(), static_cast<int>(aad_len)) == 1;
  if (ok && !private_key.empty()) {
    ok = EVP_EncryptUpdate(ctx.get(), out.data() + aad_len, &len, private_key.data(),
                           static_cast<int>(private_key.size())) == 1 &&
         static_cast<size_t>(len) == private_key.size();
  }
  ok = ok && EVP_EncryptFinal_ex(ctx.get(), out.data() + aad_len + private_key.size(), &len) == 1 &&
       EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes,
                           out.data() + aad_len + private_key.size()) == 1;
  if (!ok) return absl::InternalError("AES-256-GCM sealing failed in OpenSSL");
  return out;
}

OpenResult RecordSealer::Open(const uint8_t* data, size_t size) const {
  OpenResult res;
  auto fail = [&res](OpenFailure f, std::string why) -> OpenResult {
    res.failure = f;
    res.reason = std::move(why);
    return std::move(res);
  };
  Reader r(data, size);
  const uint8_t *magic, *check, *nonce, *meta, *ct, *tag;
  uint16_t format, flags;
  if (!r.Skip(4, &magic)) return fail(OpenFailure::kMalformed, "truncated (no header)");
  if (std::memcmp(magic, kMagic, 4) != 0) {
    return fail(OpenFailure::kMalformed, "not a pqcd key record (bad magic)");
  }
  if (!r.U16(&format) || !r.U16(&flags) || !r.Skip(8, &check) || !r.Skip(kNonceBytes, &nonce)) {
    return fail(OpenFailure::kMalformed, "truncated header");
  }
  if ((format != kFormatVersion && format != kFormatV1) || flags != 0) {
    return fail(OpenFailure::kMalformed,
                absl::StrCat("unsupported record format ", format, " (flags ", flags, ")"));
  }
  uint32_t meta_len, ct_len;
  if (!r.U32(&meta_len) || !r.Skip(meta_len, &meta) || !r.U32(&ct_len)) {
    return fail(OpenFailure::kMalformed, absl::StrCat("truncated (", size, " bytes)"));
  }
  const size_t aad_len = r.pos();
  if (!r.Skip(ct_len, &ct) || !r.Skip(kTagBytes, &tag)) {
    return fail(OpenFailure::kMalformed, absl::StrCat("truncated (", size, " bytes)"));
  }
  if (r.left() != 0) {
    return fail(OpenFailure::kMalformed, absl::StrCat(r.left(), " unexpected trailing bytes"));
  }
  if (CRYPTO_memcmp(check, kek_check_.data(), kek_check_.size()) != 0) {
    return fail(OpenFailure::kWrongKek, "sealed under a different key-encryption key");
  }

  SecretBytes plain(ct_len);
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  bool ok =
      ctx != nullptr &&
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, aead_key_.data(), nonce) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, data, static_cast<int>(aad_len)) == 1;
  if (ok && ct_len != 0) {
    ok = EVP_DecryptUpdate(ctx.get(), plain.data(), &len, ct, static_cast<int>(ct_len)) == 1;
  }
  ok = ok && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes,
                                 const_cast<uint8_t*>(tag)) == 1;
  uint8_t final_block[16];
  ok = ok && EVP_DecryptFinal_ex(ctx.get(), final_block, &len) == 1;
  if (!ok) {
    return fail(OpenFailure::kAuthFailed, "authentication failed (corrupted or tampered)");
  }
  if (!DecodeMeta(meta, meta_len, format, &res.meta)) {
    return fail(OpenFailure::kMalformed, "authenticated but unparsable metadata");
  }
  res.private_key = std::move(plain);
  return res;
}

bool IsValidKeyId(std::string_view key_id) {
  bool ok = !key_id.empty() && key_id.size() <= kMaxKeyIdLength && key_id[0] != '.';
  for (char c : key_id) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-');
  }
  return ok;
}

std::string OwnerTag(std::string_view owner) {
  uint8_t digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const uint8_t*>(owner.data()), owner.size(), digest);
  std::string out;
  for (size_t i = 0; i < kOwnerTagChars / 2; ++i) {
    absl::StrAppend(&out, absl::Hex(digest[i], absl::kZeroPad2));
  }
  return out;
}

std::string MakeKeyFileName(std::string_view owner, std::string_view key_id, uint32_t version) {
  return absl::StrCat(OwnerTag(owner), ".", std::string(key_id), ".v", version, kRecordSuffix);
}

std::string MakeLegacyKeyFileName(std::string_view key_id, uint32_t version, KeyFileKind kind) {
  return absl::StrCat(std::string(key_id), ".v", version,
                      kind == KeyFileKind::kRecord ? kRecordSuffix : kRetiredSuffix);
}

std::optional<KeyFileName> ParseKeyFileName(std::string_view name, bool legacy) {
  KeyFileName out;
  out.legacy = legacy;
  std::string_view stem;
  if (name.ends_with(kRecordSuffix)) {
    stem = name.substr(0, name.size() - (sizeof(kRecordSuffix) - 1));
    out.kind = KeyFileKind::kRecord;
  } else if (legacy && name.ends_with(kRetiredSuffix)) {
    stem = name.substr(0, name.size() - (sizeof(kRetiredSuffix) - 1));
    out.kind = KeyFileKind::kRetired;
  } else {
    return std::nullopt;
  }
  if (!legacy) {
    if (stem.size() < kOwnerTagChars + 1 || stem[kOwnerTagChars] != '.') return std::nullopt;
    for (size_t i = 0; i < kOwnerTagChars; ++i) {
      const char c = stem[i];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
    }
    out.owner_tag.assign(stem.substr(0, kOwnerTagChars));
    stem.remove_prefix(kOwnerTagChars + 1);
  }
  if (!ParseIdVersion(stem, &out.key_id, &out.version)) return std::nullopt;
  return out;
}

constexpr std::string_view kManifestShardPrefix = "MANIFEST.";

std::string MakeManifestShardName(std::string_view owner) {
  return ManifestShardNameForTag(OwnerTag(owner));
}

std::string ManifestShardNameForTag(std::string_view owner_tag) {
  return std::string(kManifestShardPrefix) + std::string(owner_tag);
}

std::map<std::string, Manifest> SplitByOwner(Manifest m) {
  std::map<std::string, Manifest> parts;
  for (auto& [id, k] : m.keys) {
    Manifest& part = parts[id.first];
    part.counter = m.counter;
    part.keys.emplace(id, std::move(k));
  }
  return parts;
}

std::optional<std::string> ParseManifestShardName(std::string_view name) {
  if (!name.starts_with(kManifestShardPrefix)) return std::nullopt;
  name.remove_prefix(kManifestShardPrefix.size());
  if (name.size() != kOwnerTagChars) return std::nullopt;
  for (const char c : name) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  }
  return std::string(name);
}

std::vector<uint8_t> EncodeManifestShard(std::string_view owner, const Manifest& m) {
  std::vector<uint8_t> out;
  PutBytes(out, owner.data(), owner.size());
  const std::vector<uint8_t> payload = EncodeManifestPayload(m);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

bool DecodeManifestShard(const uint8_t* data, size_t size, std::string* owner, Manifest* m) {
  Reader r(data, size);
  std::string o;
  if (!r.Str(&o) || o.empty()) return false;
  if (!DecodeManifestPayload(data + r.pos(), r.left(), m)) return false;
  for (const auto& [id, key] : m->keys) {
    if (id.first != o) return false;
  }
  owner->assign(o);
  return true;
}

std::vector<uint8_t> EncodeManifestRoot(const ManifestRoot& r) {
  std::vector<uint8_t> out;
  PutU64(out, r.counter);
  PutU32(out, static_cast<uint32_t>(r.owners.size()));
  for (const auto& [owner, counter] : r.owners) {
    PutBytes(out, owner.data(), owner.size());
    PutU64(out, counter);
  }
  return out;
}

bool DecodeManifestRoot(const uint8_t* data, size_t size, ManifestRoot* r) {
  Reader in(data, size);
  uint32_t n = 0;
  if (!in.U64(&r->counter) || !in.U32(&n)) return false;
  r->owners.clear();
  for (uint32_t i = 0; i < n; ++i) {
    std::string owner;
    uint64_t counter = 0;
    if (!in.Str(&owner) || owner.empty() || !in.U64(&counter) || counter == 0 ||
        counter > r->counter || !r->owners.emplace(std::move(owner), counter).second) {
      return false;
    }
  }
  return in.left() == 0;
}

std::vector<uint8_t> EncodeManifestPayload(const Manifest& m) {
  std::vector<uint8_t> out;
  PutU64(out, m.counter);
  PutU32(out, static_cast<uint32_t>(m.keys.size()));
  for (const auto& [id, key] : m.keys) {
    PutBytes(out, id.first.data(), id.first.size());
    PutBytes(out, id.second.data(), id.second.size());
    PutU32(out, key.high_water);
    PutU32(out, static_cast<uint32_t>(key.versions.size()));
    for (const auto& [version, uid] : key.versions) {
      PutU32(out, version);
      PutBytes(out, uid.data(), uid.size());
    }
  }
  return out;
}

bool DecodeManifestPayload(const uint8_t* data, size_t size, Manifest* m) {
  Reader r(data, size);
  uint32_t key_count = 0;
  if (!r.U64(&m->counter) || !r.U32(&key_count)) return false;
  m->keys.clear();
  for (uint32_t i = 0; i < key_count; ++i) {
    std::string owner, key_id;
    ManifestKey key;
    uint32_t version_count = 0;
    if (!r.Str(&owner) || !r.Str(&key_id) || !r.U32(&key.high_water) || !r.U32(&version_count) ||
        !IsValidKeyId(key_id) || version_count == 0) {
      return false;
    }
    for (uint32_t j = 0; j < version_count; ++j) {
      uint32_t version = 0;
      std::string uid;
      if (!r.U32(&version) || !r.Str(&uid) || uid.size() != kUidBytes || version == 0 ||
          version > key.high_water || !key.versions.emplace(version, std::move(uid)).second) {
        return false;
      }
    }
    if (!m->keys.emplace(std::make_pair(std::move(owner), std::move(key_id)), std::move(key))
             .second) {
      return false;
    }
  }
  return r.left() == 0;
}

absl::StatusOr<std::vector<uint8_t>> RecordSealer::SealBlob(
    const char magic[4], const std::vector<uint8_t>& plain) const {
  std::vector<uint8_t> out;
  if (absl::Status s = AppendHeader(reinterpret_cast<const uint8_t*>(magic), kBlobFormat, out);
      !s.ok()) {
    return s;
  }
  uint8_t nonce[kNonceBytes];  // the header ends with it
  std::memcpy(nonce, out.data() + out.size() - kNonceBytes, kNonceBytes);
  if (plain.size() > kMaxManifestBytes) return absl::InternalError("sealed blob too large");
  PutU32(out, static_cast<uint32_t>(plain.size()));
  const size_t aad_len = out.size();
  out.resize(aad_len + plain.size() + kTagBytes);
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  bool ok =
      ctx != nullptr &&
      EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, blob_key_.data(), nonce) == 1 &&
      EVP_EncryptUpdate(ctx.get(), nullptr, &len, out.data(), static_cast<int>(aad_len)) == 1;
  if (ok && !plain.empty()) {
    ok = EVP_EncryptUpdate(ctx.get(), out.data() + aad_len, &len, plain.data(),
                           static_cast<int>(plain.size())) == 1;
  }
  ok = ok && EVP_EncryptFinal_ex(ctx.get(), out.data() + aad_len + plain.size(), &len) == 1 &&
       EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes,
                           out.data() + aad_len + plain.size()) == 1;
  if (!ok) return absl::InternalError("AES-256-GCM sealing failed in OpenSSL");
  return out;
}

OpenFailure RecordSealer::OpenBlob(const char magic[4], const uint8_t* data, size_t size,
                                   std::vector<uint8_t>* plain, std::string* reason) const {
  Reader r(data, size);
  const uint8_t *m, *check, *nonce, *ct, *tag;
  uint16_t format, flags;
  uint32_t ct_len;
  if (!r.Skip(4, &m) || std::memcmp(m, magic, 4) != 0) {
    *reason = "bad magic";
    return OpenFailure::kMalformed;
  }
  if (!r.U16(&format) || !r.U16(&flags) || !r.Skip(8, &check) || !r.Skip(kNonceBytes, &nonce) ||
      !r.U32(&ct_len)) {
    *reason = "truncated header";
    return OpenFailure::kMalformed;
  }
  if (format != kBlobFormat || flags != 0) {
    *reason = absl::StrCat("unsupported format ", format, " (flags ", flags, ")");
    return OpenFailure::kMalformed;
  }
  const size_t aad_len = r.pos();
  if (!r.Skip(ct_len, &ct) || !r.Skip(kTagBytes, &tag) || r.left() != 0) {
    *reason = absl::StrCat("truncated or trailing bytes (", size, " bytes)");
    return OpenFailure::kMalformed;
  }
  if (CRYPTO_memcmp(check, kek_check_.data(), kek_check_.size()) != 0) {
    *reason = "sealed under a different key-encryption key";
    return OpenFailure::kWrongKek;
  }
  plain->assign(ct_len, 0);
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  int len = 0;
  bool ok =
      ctx != nullptr &&
      EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, blob_key_.data(), nonce) == 1 &&
      EVP_DecryptUpdate(ctx.get(), nullptr, &len, data, static_cast<int>(aad_len)) == 1;
  if (ok && ct_len != 0) {
    ok = EVP_DecryptUpdate(ctx.get(), plain->data(), &len, ct, static_cast<int>(ct_len)) == 1;
  }
  ok = ok && EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes,
                                 const_cast<uint8_t*>(tag)) == 1;
  uint8_t final_block[16];
  ok = ok && EVP_DecryptFinal_ex(ctx.get(), final_block, &len) == 1;
  if (!ok) {
    plain->clear();
    *reason = "authentication failed (corrupted or tampered)";
    return OpenFailure::kAuthFailed;
  }
  return OpenFailure::kNone;
}

}  // namespace pqcd::server::internal
