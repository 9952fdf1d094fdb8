// The PostgreSQL key store (--key-store postgres://...) with real pqcd processes and a real
// PostgreSQL started for the test (tests/server/pg/pg_cluster.sh: initdb in a temporary directory,
// Unix socket only): keys shared by replicas, the propagation bound, concurrent creation,
// database restarts under load, the staleness limit, kill -9 during writes, records moved or put
// back by someone with database access, and the import of a file store written by pqcd itself.
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "daemon_fixture.h"
#include "grpcpp/impl/codegen/client_unary_call.h"
#include "gtest/gtest.h"

#ifndef PQCD_PG_CLUSTER_SCRIPT
#error "PQCD_PG_CLUSTER_SCRIPT must name tests/server/pg/pg_cluster.sh"
#endif

namespace pqcd::testing {
namespace {

using namespace pqc::v1;
using Clock = std::chrono::steady_clock;

// The propagation interval the replicas run with here, and the bound the test holds them to:
// a change committed on one replica is applied by a connected replica on NOTIFY, at the latest
// after one reconcile interval (plus the time a synchronization takes on a busy 2-core machine).
constexpr double kReconcileS = 0.5;
constexpr auto kBound = std::chrono::milliseconds(500 + 1500);

std::unique_ptr<grpc::ClientContext> Ctx(int seconds = 20) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  return ctx;
}

std::string Run(const std::string& cmd, int* rc = nullptr) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = pclose(p);
  if (rc != nullptr) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A PostgreSQL server in a temporary directory, stopped at destruction.
class PgCluster {
 public:
  PgCluster() : dir_(tmp_.path() / "pg") {
    int rc = 0;
    const std::string out = Run(Cmd("init") + " 2>&1", &rc);
    ok_ = rc == 0;
    if (!ok_) {
      ADD_FAILURE() << "pg_cluster.sh init failed (rc " << rc << "):\n" << out;
      return;
    }
    Start();
  }
  ~PgCluster() {
    if (running_) Stop();
  }
  bool ok() const { return ok_; }
  void Start() {
    int rc = 0;
    const std::string out = Run(Cmd("start") + " 2>&1", &rc);
    ASSERT_EQ(rc, 0) << out;
    running_ = true;
  }
  void Stop() {
    int rc = 0;
    const std::string out = Run(Cmd("stop") + " 2>&1", &rc);
    EXPECT_EQ(rc, 0) << out;
    running_ = false;
  }
  std::string Psql(const std::string& sql) {
    int rc = 0;
    std::string out = Run(Cmd("psql") + " '" + sql + "' 2>&1", &rc);
    EXPECT_EQ(rc, 0) << sql << ": " << out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }
  void PsqlFile(const std::string& file) {
    int rc = 0;
    const std::string out = Run(Cmd("psql-file") + " '" + file + "' 2>&1", &rc);
    EXPECT_EQ(rc, 0) << file << ": " << out;
  }
  std::string Dsn() const { return "postgresql:///postgres?host=" + dir_.string() + "&user=pqcd"; }
  // A KEK file for the replicas.
  std::string Kek() {
    const std::string path = tmp_ / "kek";
    std::ofstream(path, std::ios::binary) << std::string(32, 'k');
    ::chmod(path.c_str(), 0600);
    return path;
  }

 private:
  std::string Cmd(const std::string& verb) const {
    return std::string(PQCD_PG_CLUSTER_SCRIPT) + " " + verb + " " + dir_.string();
  }
  TempDir tmp_;
  std::filesystem::path dir_;
  bool ok_ = false;
  bool running_ = false;
};

class PostgresStore : public ::testing::Test {
 protected:
  void SetUp() override {
#if !PQCD_WITH_POSTGRES
    GTEST_SKIP() << "built without PostgreSQL support (PQCD_WITH_POSTGRES=OFF)";
#endif
    pg_ = std::make_unique<PgCluster>();
    ASSERT_TRUE(pg_->ok());
    kek_ = pg_->Kek();
  }

  std::vector<std::string> ReplicaArgs(std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"--key-store",
                                  pg_->Dsn(),
                                  "--kek-file",
                                  kek_,
                                  "--allow-insecure-tcp",
                                  "--workers",
                                  "1",
                                  "--key-store-reconcile-interval",
                                  std::to_string(kReconcileS)};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  std::unique_ptr<PgCluster> pg_;
  std::string kek_;
};

grpc::Status KeyGenHeld(const Daemon& d, const std::string& id, Algorithm alg,
                        KeyGenResponse* out = nullptr) {
  KeyGenRequest kg;
  kg.set_algorithm(alg);
  kg.set_hold(true);
  kg.set_key_id(id);
  KeyGenResponse r;
  auto st = d.Crypto()->KeyGen(Ctx().get(), kg, &r);
  if (out != nullptr) *out = r;
  return st;
}

grpc::Status SignWith(const Daemon& d, const std::string& id, uint32_t version,
                      SignResponse* out = nullptr) {
  SignRequest sr;
  sr.mutable_key_ref()->set_key_id(id);
  sr.mutable_key_ref()->set_version(version);
  sr.set_message("message for " + id);
  SignResponse r;
  auto st = d.Crypto()->Sign(Ctx().get(), sr, &r);
  if (out != nullptr) *out = r;
  return st;
}

bool VerifyWith(const Daemon& d, const std::string& id, uint32_t version, const std::string& sig) {
  VerifyRequest vr;
  vr.mutable_key_ref()->set_key_id(id);
  vr.mutable_key_ref()->set_version(version);
  vr.set_message("message for " + id);
  vr.set_signature(sig);
  VerifyResponse r;
  return d.Crypto()->Verify(Ctx().get(), vr, &r).ok() && r.valid();
}

grpc::Status GetKey(const Daemon& d, const std::string& id, uint32_t version, KeyInfo* out) {
  GetPublicKeyRequest g;
  g.set_key_id(id);
  g.set_version(version);
  return d.Keys()->GetPublicKey(Ctx().get(), g, out);
}

// grpc.health.v1 Check of one service name: "SERVING", "NOT_SERVING", or an error text.
std::string DaemonHealth(const Daemon& d, const std::string& service) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  // HealthCheckRequest{service = 1}: tag 0x0a, length, bytes (names here are < 128 bytes).
  std::vector<char> req;
  if (!service.empty()) {
    req = {'\x0a', static_cast<char>(service.size())};
    req.insert(req.end(), service.begin(), service.end());
  }
  grpc::Slice slice(req.data(), req.size());
  grpc::ByteBuffer request(&slice, 1), response;
  grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check",
                                   grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      d.Channel().get(), method, &ctx, request, &response);
  if (!s.ok()) return "error " + std::to_string(s.error_code()) + ": " + s.error_message();
  std::vector<grpc::Slice> slices;
  (void)response.Dump(&slices);
  std::string bytes;
  for (const auto& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  // HealthCheckResponse{status = 1}: 08 01 SERVING, 08 02 NOT_SERVING.
  if (bytes.size() == 2 && bytes[0] == 0x08) {
    if (bytes[1] == 1) return "SERVING";
    if (bytes[1] == 2) return "NOT_SERVING";
  }
  return "unexpected health answer";
}

double Metric(const Daemon& d, const std::string& name) {
  return MetricValue(HttpGet(d.metrics_port(), "/metrics"), name);
}

TEST_F(PostgresStore, ReplicasShareCreateRotateDeleteWithinTheBound) {
  Daemon a, b;
  ASSERT_TRUE(a.Start(ReplicaArgs()));
  ASSERT_TRUE(b.Start(ReplicaArgs()));

  // Create on A, use on B.
  KeyGenResponse created;
  ASSERT_TRUE(KeyGenHeld(a, "shared", ML_DSA_44, &created).ok());
  auto t = TimeUntil([&] { return SignWith(b, "shared", 0).ok(); }, kBound);
  ASSERT_GE(t.count(), 0) << "B did not see the key created on A within the bound\n" << b.log();
  SignResponse sig;
  ASSERT_TRUE(SignWith(b, "shared", 0, &sig).ok());
  EXPECT_EQ(sig.key_version(), 1u);
  EXPECT_TRUE(VerifyWith(a, "shared", 1, sig.signature()));
  // An SLH-DSA key travels the same way (each replica makes its own prepared form).
  ASSERT_TRUE(KeyGenHeld(a, "shared-slh", SLH_DSA_SHAKE_128F).ok());
  t = TimeUntil([&] { return SignWith(b, "shared-slh", 0).ok(); }, kBound);
  ASSERT_GE(t.count(), 0) << "B did not see the SLH-DSA key created on A\n" << b.log();
  SignResponse slh;
  ASSERT_TRUE(SignWith(b, "shared-slh", 0, &slh).ok());
  EXPECT_EQ(slh.signature().size(), 17088u);
  EXPECT_TRUE(VerifyWith(a, "shared-slh", 1, slh.signature()));

  // Rotate on A: B signs with version 2 within the bound; version 1 stays usable.
  RotateKeyRequest rr;
  rr.set_key_id("shared");
  KeyInfo v2;
  ASSERT_TRUE(a.Keys()->Rotate(Ctx().get(), rr, &v2).ok());
  ASSERT_EQ(v2.version(), 2u);
  t = TimeUntil(
      [&] {
        SignResponse s;
        return SignWith(b, "shared", 0, &s).ok() && s.key_version() == 2;
      },
      kBound);
  EXPECT_GE(t.count(), 0) << "B did not move to version 2 within the bound";
  ASSERT_TRUE(SignWith(b, "shared", 0, &sig).ok());
  EXPECT_TRUE(VerifyWith(a, "shared", 2, sig.signature()));
  KeyInfo info;
  ASSERT_TRUE(GetKey(b, "shared", 2, &info).ok());
  EXPECT_EQ(info.public_key(), v2.public_key());

  // Delete on A: B refuses within the bound.
  DeleteKeyRequest del;
  del.set_key_id("shared");
  DeleteKeyResponse deleted;
  ASSERT_TRUE(a.Keys()->Delete(Ctx().get(), del, &deleted).ok());
  EXPECT_EQ(deleted.deleted_versions(), 2u);
  t = TimeUntil([&] { return SignWith(b, "shared", 0).error_code() == grpc::NOT_FOUND; }, kBound);
  EXPECT_GE(t.count(), 0) << "B still used the deleted key after the bound";
  EXPECT_EQ(SignWith(b, "shared", 1).error_code(), grpc::NOT_FOUND);
  EXPECT_GE(Metric(b, "pqcd_key_store_syncs_total"), 3);
  EXPECT_EQ(Metric(b, "pqcd_key_store_up"), 1);

  // Concurrent creation of one id on both replicas: exactly one wins, and both then agree.
  for (int i = 0; i < 8; ++i) {
    const std::string id = "race-" + std::to_string(i);
    grpc::Status sa, sb;
    KeyGenResponse ra, rb;
    std::thread ta([&] { sa = KeyGenHeld(a, id, ML_DSA_44, &ra); });
    std::thread tb([&] { sb = KeyGenHeld(b, id, ML_DSA_44, &rb); });
    ta.join();
    tb.join();
    ASSERT_NE(sa.ok(), sb.ok()) << id << ": A " << sa.error_message() << ", B "
                                << sb.error_message();
    const grpc::Status& loser = sa.ok() ? sb : sa;
    EXPECT_EQ(loser.error_code(), grpc::ALREADY_EXISTS) << loser.error_message();
    const std::string winner_pk = sa.ok() ? ra.public_key() : rb.public_key();
    KeyInfo ka, kb;
    ASSERT_TRUE(GetKey(a, id, 0, &ka).ok());
    ASSERT_GE(TimeUntil([&] { return GetKey(b, id, 0, &kb).ok(); }, kBound).count(), 0);
    EXPECT_EQ(ka.public_key(), winner_pk);
    EXPECT_EQ(kb.public_key(), winner_pk);
  }
  EXPECT_EQ(pg_->Psql("SELECT count(*) FROM pqcd_records WHERE key_id LIKE $$race-%$$"), "8");
}

TEST_F(PostgresStore, RowsMovedOrPutBackInTheDatabaseAreNotLoaded) {
  Daemon a;
  ASSERT_TRUE(a.Start(ReplicaArgs()));
  ASSERT_TRUE(KeyGenHeld(a, "s1", ML_DSA_44).ok());
  ASSERT_TRUE(KeyGenHeld(a, "s2", ML_DSA_44).ok());
  ASSERT_TRUE(KeyGenHeld(a, "gone", ML_DSA_44).ok());
  ASSERT_TRUE(KeyGenHeld(a, "kept", ML_DSA_44).ok());
  // A backup of the row of "gone", then "gone" is deleted and its row put back.
  pg_->Psql("CREATE TABLE backup AS SELECT * FROM pqcd_records WHERE key_id = $$gone$$");
  DeleteKeyRequest del;
  del.set_key_id("gone");
  DeleteKeyResponse deleted;
  ASSERT_TRUE(a.Keys()->Delete(Ctx().get(), del, &deleted).ok());
  pg_->Psql("INSERT INTO pqcd_records SELECT * FROM backup");
  // Someone swaps the sealed records of s1 and s2.
  pg_->Psql(
      "UPDATE pqcd_records r SET sealed = o.sealed, uid = o.uid FROM pqcd_records o "
      "WHERE r.key_id IN ($$s1$$, $$s2$$) AND o.key_id IN ($$s1$$, $$s2$$) "
      "AND r.key_id <> o.key_id");
  ASSERT_EQ(a.Terminate(), 0);

  Daemon c;  // a replica that loads everything afresh
  ASSERT_TRUE(c.Start(ReplicaArgs()));
  EXPECT_TRUE(SignWith(c, "kept", 0).ok());
  EXPECT_EQ(SignWith(c, "gone", 0).error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(SignWith(c, "s1", 0).error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(SignWith(c, "s2", 0).error_code(), grpc::NOT_FOUND);
  EXPECT_NE(c.log().find("missing or could not be loaded"), std::string::npos) << c.log();
}

// A database written by a pqcd of schema 1 (one manifest row for every owner), made by
// pg/fixtures/make-schema1.sh with the release before per-owner manifests, is migrated by the
// first replica to start: each owner gets its row, every key serves as before, deleted keys stay
// deleted, and version numbers go on where they were. A replica started later loads it as is.
TEST_F(PostgresStore, SchemaOneDatabaseIsSplitByOwnerAtStart) {
  pg_->PsqlFile(PQCD_PG_SCHEMA1_FIXTURE);
  ASSERT_EQ(pg_->Psql("SELECT max(version) FROM pqcd_schema_migrations"), "1");
  Daemon a;
  ASSERT_TRUE(a.Start(ReplicaArgs()));
  EXPECT_NE(a.log().find("split into 2 owner row(s)"), std::string::npos) << a.log();
  EXPECT_EQ(pg_->Psql("SELECT max(version) FROM pqcd_schema_migrations"), "2");
  EXPECT_EQ(pg_->Psql("SELECT count(*) FROM pqcd_manifest_owners"), "2");
  for (uint32_t v : {1u, 2u}) {
    SignResponse s;
    ASSERT_TRUE(SignWith(a, "sig", v, &s).ok()) << "sig v" << v << "\n" << a.log();
    EXPECT_TRUE(VerifyWith(a, "sig", v, s.signature()));
  }
  KeyInfo kem;
  EXPECT_TRUE(GetKey(a, "kem", 0, &kem).ok());
  EXPECT_EQ(SignWith(a, "gone", 0).error_code(), grpc::NOT_FOUND);
  RotateKeyRequest rot;
  rot.set_key_id("sig");
  KeyInfo rotated;
  ASSERT_TRUE(a.Keys()->Rotate(Ctx().get(), rot, &rotated).ok());
  EXPECT_EQ(rotated.version(), 3u);
  Daemon b;
  ASSERT_TRUE(b.Start(ReplicaArgs()));
  EXPECT_EQ(b.log().find("split into"), std::string::npos) << b.log();
  EXPECT_TRUE(SignWith(b, "sig", 3).ok()) << b.log();
  EXPECT_TRUE(SignWith(b, "sig", 1).ok()) << b.log();
}

// One owner's manifest row put back from a backup does not match what the root lists for it: a
// replica that starts refuses to load the database, naming the row.
TEST_F(PostgresStore, AnOwnersManifestRowPutBackIsRefused) {
  Daemon a;
  ASSERT_TRUE(a.Start(ReplicaArgs()));
  ASSERT_TRUE(KeyGenHeld(a, "first", ML_DSA_44).ok());
  pg_->Psql("CREATE TABLE owners_backup AS SELECT * FROM pqcd_manifest_owners");
  ASSERT_TRUE(KeyGenHeld(a, "second", ML_DSA_44).ok());
  ASSERT_EQ(a.Terminate(), 0);
  pg_->Psql(
      "UPDATE pqcd_manifest_owners o SET counter = b.counter, sealed = b.sealed "
      "FROM owners_backup b WHERE o.owner = b.owner");
  Daemon c;
  EXPECT_NE(c.RunToExit(ReplicaArgs()), 0);
  EXPECT_NE(c.log().find("is not the one its manifest lists"), std::string::npos) << c.log();
}

TEST_F(PostgresStore, ADatabaseRolledBackIsRefusedByRunningReplicas) {
  Daemon a;
  ASSERT_TRUE(a.Start(ReplicaArgs({"--key-store-max-staleness", "1"})));
  ASSERT_TRUE(KeyGenHeld(a, "old", ML_DSA_44).ok());
  pg_->Psql("CREATE TABLE manifest_backup AS SELECT * FROM pqcd_manifest");
  ASSERT_TRUE(KeyGenHeld(a, "new", ML_DSA_44).ok());
  DeleteKeyRequest del;
  del.set_key_id("old");
  DeleteKeyResponse deleted;
  ASSERT_TRUE(a.Keys()->Delete(Ctx().get(), del, &deleted).ok());
  // The manifest (and the rows) as they were before: "old" would be back, "new" gone.
  pg_->Psql(
      "UPDATE pqcd_manifest m SET counter = b.counter, sealed = b.sealed FROM manifest_backup b;"
      "NOTIFY pqcd_keys");
  // A refuses the older manifest: it never serves "old" again, and once the staleness limit
  // passes without an acceptable synchronization it stops serving held keys at all.
  EXPECT_GE(TimeUntil([&] { return SignWith(a, "new", 0).error_code() == grpc::UNAVAILABLE; },
                      std::chrono::seconds(8))
                .count(),
            0);
  EXPECT_NE(SignWith(a, "old", 0).error_code(), grpc::OK);
  EXPECT_NE(a.log().find("went back"), std::string::npos) << a.log();
  EXPECT_EQ(Metric(a, "pqcd_key_store_up"), 0);
}

TEST_F(PostgresStore, DatabaseRestartUnderLoad) {
  Daemon a, b;
  ASSERT_TRUE(a.Start(ReplicaArgs({"--key-store-max-staleness", "60"})));
  ASSERT_TRUE(b.Start(ReplicaArgs({"--key-store-max-staleness", "60"})));
  ASSERT_TRUE(KeyGenHeld(a, "busy", ML_DSA_44).ok());
  ASSERT_GE(TimeUntil([&] { return SignWith(b, "busy", 0).ok(); }, kBound).count(), 0);

  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::string first_error;
  std::thread load([&] {
    while (!stop.load()) {
      auto st = SignWith(b, "busy", 0);
      if (st.ok()) {
        ok.fetch_add(1);
      } else if (failed.fetch_add(1) == 0) {
        first_error = st.error_message();
      }
    }
  });
  // The load is running (some signatures done) before the database goes.
  // (EXPECT: the load thread must be stopped and joined below whatever happens.)
  EXPECT_GE(TimeUntil([&] { return ok.load() >= 10; }, std::chrono::seconds(30)).count(), 0)
      << "no signature succeeded before the restart";
  pg_->Stop();
  const int before = ok.load();
  // Cached keys go on; changes fail cleanly with UNAVAILABLE; the metrics say the store is down.
  EXPECT_GE(TimeUntil([&] { return Metric(b, "pqcd_key_store_up") == 0; }, std::chrono::seconds(10))
                .count(),
            0);
  EXPECT_EQ(KeyGenHeld(a, "during-outage", ML_DSA_44).error_code(), grpc::UNAVAILABLE);
  RotateKeyRequest rr;
  rr.set_key_id("busy");
  KeyInfo rotated;
  EXPECT_EQ(a.Keys()->Rotate(Ctx().get(), rr, &rotated).error_code(), grpc::UNAVAILABLE);
  EXPECT_GE(TimeUntil([&] { return ok.load() > before; }, std::chrono::seconds(10)).count(), 0)
      << "uses of a cached key stopped while the database was down";
  EXPECT_EQ(DaemonHealth(b, "pqc.v1.Keys"), "SERVING");

  pg_->Start();
  // Reconnection with backoff (at most 5 s between attempts).
  EXPECT_GE(TimeUntil([&] { return Metric(b, "pqcd_key_store_up") == 1; }, std::chrono::seconds(15))
                .count(),
            0)
      << b.log();
  ASSERT_GE(TimeUntil([&] { return KeyGenHeld(a, "after-outage", ML_DSA_44).ok(); },
                      std::chrono::seconds(15))
                .count(),
            0);
  EXPECT_GE(TimeUntil([&] { return SignWith(b, "after-outage", 0).ok(); }, kBound).count(), 0);
  stop.store(true);
  load.join();
  EXPECT_EQ(failed.load(), 0) << first_error;
  EXPECT_GT(ok.load(), 0);
  EXPECT_GE(Metric(a, "pqcd_key_store_reconnects_total"), 1);
  EXPECT_EQ(KeyGenHeld(b, "during-outage", ML_DSA_44).error_code(), grpc::OK);
}

TEST_F(PostgresStore, StalenessLimitStopsUsesAndReadiness) {
  Daemon a;
  ASSERT_TRUE(a.Start(ReplicaArgs({"--key-store-max-staleness", "1"})));
  ASSERT_TRUE(KeyGenHeld(a, "k", ML_DSA_44).ok());
  ASSERT_TRUE(SignWith(a, "k", 0).ok());
  pg_->Stop();
  EXPECT_GE(TimeUntil([&] { return SignWith(a, "k", 0).error_code() == grpc::UNAVAILABLE; },
                      std::chrono::seconds(5))
                .count(),
            0);
  EXPECT_GE(TimeUntil([&] { return DaemonHealth(a, "pqc.v1.Keys") == "NOT_SERVING"; },
                      std::chrono::seconds(8))
                .count(),
            0);
  EXPECT_EQ(DaemonHealth(a, ""), "SERVING");  // the rest of the daemon goes on
  EXPECT_EQ(Metric(a, "pqcd_key_store_serving"), 0);
  pg_->Start();
  EXPECT_GE(TimeUntil([&] { return SignWith(a, "k", 0).ok(); }, std::chrono::seconds(15)).count(),
            0);
  EXPECT_GE(TimeUntil([&] { return DaemonHealth(a, "pqc.v1.Keys") == "SERVING"; },
                      std::chrono::seconds(5))
                .count(),
            0);
}

TEST_F(PostgresStore, KillDuringWritesLeavesNothingHalfWritten) {
  Daemon a, b;
  ASSERT_TRUE(a.Start(ReplicaArgs()));
  ASSERT_TRUE(b.Start(ReplicaArgs()));
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::set<std::string> acknowledged;
  std::vector<std::thread> writers;
  for (int w = 0; w < 3; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; !stop.load(); ++i) {
        const std::string id = absl::StrCat("w", w, "-", i);
        if (KeyGenHeld(a, id, i % 2 == 0 ? ML_DSA_44 : ML_KEM_768).ok()) {
          std::lock_guard lock(mu);
          acknowledged.insert(id);
        } else if (!a.running()) {
          break;
        }
      }
    });
  }
  ASSERT_GE(TimeUntil(
                [&] {
                  std::lock_guard lock(mu);
                  return acknowledged.size() >= 20;
                },
                std::chrono::seconds(30))
                .count(),
            0);
  a.Kill9();
  stop.store(true);
  for (auto& t : writers) t.join();

  // B (synchronized, then restarted afresh as C) sees every acknowledged key, and every key it
  // lists is whole: usable, with its record row present.
  Daemon c;
  ASSERT_TRUE(c.Start(ReplicaArgs()));
  std::set<std::string> listed;
  ListKeysRequest lr;
  lr.set_page_size(1000);
  ListKeysResponse page;
  ASSERT_TRUE(c.Keys()->List(Ctx().get(), lr, &page).ok());
  for (const KeyInfo& k : page.keys()) {
    listed.insert(k.key_id());
    if (k.algorithm() == ML_DSA_44) {
      SignResponse s;
      EXPECT_TRUE(SignWith(c, k.key_id(), 0, &s).ok()) << k.key_id();
      EXPECT_TRUE(VerifyWith(b, k.key_id(), 1, s.signature())) << k.key_id();
    } else {
      EncapsRequest er;
      er.mutable_key_ref()->set_key_id(k.key_id());
      EncapsResponse enc;
      ASSERT_TRUE(c.Crypto()->Encaps(Ctx().get(), er, &enc).ok()) << k.key_id();
      DecapsRequest dr;
      dr.mutable_key_ref()->set_key_id(k.key_id());
      dr.set_ciphertext(enc.ciphertext());
      DecapsResponse dec;
      ASSERT_TRUE(c.Crypto()->Decaps(Ctx().get(), dr, &dec).ok()) << k.key_id();
      EXPECT_EQ(dec.shared_secret(), enc.shared_secret()) << k.key_id();
    }
  }
  for (const std::string& id : acknowledged) EXPECT_TRUE(listed.contains(id)) << id;
  EXPECT_EQ(pg_->Psql("SELECT count(*) FROM pqcd_records"), std::to_string(listed.size()));
  EXPECT_EQ(c.log().find("missing"), std::string::npos) << c.log();
}

TEST_F(PostgresStore, ImportOfAFileStoreWrittenByPqcd) {
  TempDir files;
  const std::string data_dir = files / "data";
  std::vector<std::string> file_args = {"--data-dir",           data_dir,    "--kek-file", kek_,
                                        "--allow-insecure-tcp", "--workers", "1"};
  std::string sig_a1;
  KeyInfo a2_info;
  {
    Daemon f;
    ASSERT_TRUE(f.Start(file_args));
    ASSERT_TRUE(KeyGenHeld(f, "a", ML_DSA_44).ok());
    SignResponse s;
    ASSERT_TRUE(SignWith(f, "a", 0, &s).ok());
    sig_a1 = s.signature();
    RotateKeyRequest rr;
    rr.set_key_id("a");
    ASSERT_TRUE(f.Keys()->Rotate(Ctx().get(), rr, &a2_info).ok());
    ASSERT_TRUE(KeyGenHeld(f, "b", ML_KEM_768).ok());
    rr.set_key_id("b");
    KeyInfo b2;
    ASSERT_TRUE(f.Keys()->Rotate(Ctx().get(), rr, &b2).ok());
    DeleteKeyRequest del;
    del.set_key_id("b");
    del.set_version(1);
    DeleteKeyResponse deleted;
    ASSERT_TRUE(f.Keys()->Delete(Ctx().get(), del, &deleted).ok());
    ASSERT_TRUE(KeyGenHeld(f, "c", ML_DSA_65).ok());
    del.set_key_id("c");
    del.set_version(0);
    ASSERT_TRUE(f.Keys()->Delete(Ctx().get(), del, &deleted).ok());
    ASSERT_EQ(f.Terminate(), 0);
  }
  std::vector<std::string> import_args = {"--import-data-dir", data_dir,     "--key-store",
                                          pg_->Dsn(),          "--kek-file", kek_};
  {
    Daemon imp;
    ASSERT_EQ(imp.RunToExit(import_args), 0) << imp.log();
    EXPECT_NE(imp.log().find("2 key(s) (3 version(s)) copied, 0 already there, 0 conflict(s)"),
              std::string::npos)
        << imp.log();
    EXPECT_EQ(imp.log().find(pg_->Dsn() + "&"), std::string::npos);
  }
  {
    Daemon again;  // rerunning is safe
    ASSERT_EQ(again.RunToExit(import_args), 0) << again.log();
    EXPECT_NE(again.log().find("0 key(s) (0 version(s)) copied, 2 already there"),
              std::string::npos)
        << again.log();
  }
  Daemon r;
  ASSERT_TRUE(r.Start(ReplicaArgs()));
  EXPECT_TRUE(VerifyWith(r, "a", 1, sig_a1));
  SignResponse s2;
  ASSERT_TRUE(SignWith(r, "a", 0, &s2).ok());
  EXPECT_EQ(s2.key_version(), 2u);
  KeyInfo a2;
  ASSERT_TRUE(GetKey(r, "a", 2, &a2).ok());
  EXPECT_EQ(a2.public_key(), a2_info.public_key());
  KeyInfo b;
  ASSERT_TRUE(GetKey(r, "b", 0, &b).ok());
  EXPECT_EQ(b.version(), 2u);
  ASSERT_EQ(b.versions_size(), 1);
  EXPECT_EQ(SignWith(r, "c", 0).error_code(), grpc::NOT_FOUND);
  // Version numbers are not reused: the high-water marks came along.
  RotateKeyRequest rr;
  rr.set_key_id("b");
  KeyInfo b3;
  ASSERT_TRUE(r.Keys()->Rotate(Ctx().get(), rr, &b3).ok());
  EXPECT_EQ(b3.version(), 3u);
}

}  // namespace
}  // namespace pqcd::testing
