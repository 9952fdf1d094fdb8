#include "tls_files.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/conf.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/security/tls_certificate_provider.h"
#include "grpcpp/security/tls_credentials_options.h"

namespace pqcd::server {
namespace {

constexpr const char* kCert = "cert.pem";
constexpr const char* kKey = "key.pem";
constexpr const char* kCa = "ca.pem";
constexpr unsigned kRefreshSeconds = 1;
constexpr size_t kMaxPemBytes = 1 << 20;

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::string data;
  char buf[8192];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    data.append(buf, static_cast<size_t>(in.gcount()));
    if (data.size() > kMaxPemBytes) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": larger than 1 MiB"));
    }
  }
  return data;
}

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

BioPtr MemBio(const std::string& data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

// All certificates in a PEM text; an error if one fails to parse or there are none.
absl::StatusOr<std::vector<X509Ptr>> ParseCerts(const std::string& pem, const char* what) {
  std::vector<X509Ptr> certs;
  BioPtr bio = MemBio(pem);
  if (!bio) return absl::InternalError("BIO_new_mem_buf failed");
  ERR_clear_error();
  for (;;) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    certs.push_back(std::move(cert));
  }
  // The loop ends with "no start line" at the end of the input; anything else is a bad block.
  const unsigned long e = ERR_peek_last_error();
  if (e != 0 && !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", OpenSslError()));
  }
  ERR_clear_error();
  if (certs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": no PEM certificate found"));
  }
  return certs;
}

absl::Status WritePrivateFile(const std::string& path, const std::string& data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    return absl::InternalError(absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTlsSet(const std::string& cert_pem, const std::string& key_pem,
                            const std::string& ca_pem) {
  auto chain = ParseCerts(cert_pem, "certificate chain");
  if (!chain.ok()) return chain.status();
  BioPtr bio = MemBio(key_pem);
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) return absl::InvalidArgumentError(absl::StrCat("private key: ", OpenSslError()));
  if (X509_check_private_key(chain->front().get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError("the private key does not match the certificate");
  }
  if (!ca_pem.empty()) {
    auto ca = ParseCerts(ca_pem, "client CA bundle");
    if (!ca.ok()) return ca.status();
  }
  return absl::OkStatus();
}

absl::Status RequireTls13ForNewTlsContexts() {
  // Load the system configuration first, so that it is not loaded (over ours) later.
  if (OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, nullptr) != 1) {
    return absl::InternalError(absl::StrCat("OPENSSL_init_ssl: ", OpenSslError()));
  }
  // "Protocol" sets SSL_OP_NO_TLSv1_2 (and older) on every new context. gRPC raises the context's
  // minimum version back to TLS 1.2 itself, but the disabled-protocol options stay in force.
  static const std::string kConf =
      "pqcd_conf = pqcd_init\n"
      "[pqcd_init]\n"
      "ssl_conf = pqcd_ssl\n"
      "[pqcd_ssl]\n"
      "system_default = pqcd_tls\n"
      "[pqcd_tls]\n"
      "MinProtocol = TLSv1.3\n"
      "Protocol = -ALL, TLSv1.3\n"
      "CipherString = DEFAULT:@SECLEVEL=2\n";
  std::unique_ptr<CONF, void (*)(CONF*)> conf(NCONF_new(nullptr), NCONF_free);
  BioPtr bio = MemBio(kConf);
  long line = 0;
  if (!conf || !bio || NCONF_load_bio(conf.get(), bio.get(), &line) != 1) {
    return absl::InternalError(absl::StrCat("TLS version config: ", OpenSslError()));
  }
  if (CONF_modules_load(conf.get(), "pqcd_conf", 0) <= 0) {
    return absl::InternalError(absl::StrCat("TLS version config: ", OpenSslError()));
  }
  // Check that it took: a fresh context must refuse TLS 1.2.
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx || (SSL_CTX_get_options(ctx.get()) & SSL_OP_NO_TLSv1_2) == 0) {
    ERR_clear_error();
    return absl::InternalError("TLS version config: TLS 1.2 is still enabled on new contexts");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TlsFiles>> TlsFiles::Create(Options options) {
  std::unique_ptr<TlsFiles> files(new TlsFiles(std::move(options)));
  const char* tmp = std::getenv("TMPDIR");
  std::string templ =
      absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/pqcd-tls-XXXXXX");
  if (::mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a private directory ", templ, ": ", std::strerror(errno)));
  }
  files->dir_ = templ;
  ::chmod(files->dir_.c_str(), 0700);
  if (auto s = files->InstallFromSources(); !s.ok()) return s;
  return files;
}

TlsFiles::~TlsFiles() {
  RemoveCopies();
}

void TlsFiles::RemoveCopies() {
  std::lock_guard<std::mutex> lock(mu_);
  if (dir_.empty()) return;
  for (const char* name : {kCert, kKey, kCa}) ::unlink((dir_ + "/" + name).c_str());
  ::rmdir(dir_.c_str());
  dir_.clear();
}

absl::Status TlsFiles::InstallFromSources() {
  std::lock_guard<std::mutex> lock(mu_);
  if (dir_.empty()) return absl::FailedPreconditionError("TLS files already removed");
  auto cert = ReadFile(options_.cert_file);
  if (!cert.ok()) return cert.status();
  auto key = ReadFile(options_.key_file);
  if (!key.ok()) return key.status();
  std::string ca;
  if (!options_.client_ca_file.empty()) {
    auto read = ReadFile(options_.client_ca_file);
    if (!read.ok()) return read.status();
    ca = std::move(*read);
  }
  if (auto s = ValidateTlsSet(*cert, *key, ca); !s.ok()) return s;
  // Write all temporaries first, then rename: each copy changes atomically. gRPC checks that the
  // key it reads matches the certificate, so a refresh that falls between the renames is skipped
  // and picked up on the next one.
  struct Item {
    const char* name;
    const std::string* data;
  };
  std::vector<Item> items = {{kCa, &ca}, {kKey, &*key}, {kCert, &*cert}};
  if (options_.client_ca_file.empty()) items.erase(items.begin());
  for (const Item& item : items) {
    if (auto s = WritePrivateFile(dir_ + "/" + item.name + ".new", *item.data); !s.ok()) return s;
  }
  for (const Item& item : items) {
    const std::string path = dir_ + "/" + item.name;
    if (std::rename((path + ".new").c_str(), path.c_str()) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot rename into ", path, ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

absl::Status TlsFiles::Reload() {
  return InstallFromSources();
}

std::shared_ptr<grpc::ServerCredentials> TlsFiles::Credentials() const {
  const bool mtls = !options_.client_ca_file.empty();
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      dir_ + "/" + kKey, dir_ + "/" + kCert, mtls ? dir_ + "/" + kCa : std::string(),
      kRefreshSeconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (mtls) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  } else {
    options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  }
  return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace pqcd::server
