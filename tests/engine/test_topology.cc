// Topology and placement with injected hwloc synthetic topologies (2 and 4 NUMA nodes on any
// machine). Each worker's intended CPU comes from the engine's record; where that CPU exists on
// this machine the binding is real and is read back with sched_getaffinity from inside a
// completion (which runs on the worker thread).
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "pqcd/engine/engine.h"

namespace pqcd::engine {
namespace {

using namespace std::chrono_literals;

bool CpuExistsHere(int cpu) {
  const std::vector<int> aff = CurrentAffinity();
  return std::find(aff.begin(), aff.end(), cpu) != aff.end();
}

std::unique_ptr<Engine> MakeEngine(EngineOptions o) {
  auto e = Engine::Create(std::move(o));
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

TEST(Topology, DiscoversThisMachine) {
  const Topology t = Topology::Discover();
  ASSERT_GE(t.num_nodes(), 1);
  EXPECT_TRUE(t.is_this_system());
  EXPECT_GE(t.num_cores(), 1);
  for (int cpu : CurrentAffinity()) EXPECT_GE(t.NodeOfCpu(cpu), 0) << "cpu " << cpu;
  std::printf("[topology] %s\n", t.Describe().c_str());
}

TEST(Topology, SyntheticTwoAndFourNodes) {
  TopologyOptions o;
  o.synthetic = "pack:2 numa:1 core:1 pu:1";
  Topology t2 = Topology::Discover(o);
  ASSERT_TRUE(t2.from_hwloc());
  EXPECT_FALSE(t2.is_this_system());
  ASSERT_EQ(t2.num_nodes(), 2);
  EXPECT_EQ(t2.nodes()[0].cpus, std::vector<int>{0});
  EXPECT_EQ(t2.nodes()[1].cpus, std::vector<int>{1});

  o.synthetic = "pack:4 numa:1 core:1 pu:1";
  Topology t4 = Topology::Discover(o);
  ASSERT_EQ(t4.num_nodes(), 4);
  for (int n = 0; n < 4; ++n) {
    EXPECT_EQ(t4.nodes()[n].cpus, std::vector<int>{n});
    EXPECT_EQ(t4.NodeOfCpu(n), n);
  }
}

TEST(Topology, SmtSiblingsAreOneCoreAndAllowedSetIsRespected) {
  TopologyOptions o;
  o.synthetic = "pack:2 numa:1 core:2 pu:2";  // node0 cores {0,1} {2,3}; node1 {4,5} {6,7}
  Topology t = Topology::Discover(o);
  ASSERT_EQ(t.num_nodes(), 2);
  ASSERT_EQ(t.nodes()[0].cores.size(), 2u);
  EXPECT_EQ(t.nodes()[0].cores[1].pus, (std::vector<int>{2, 3}));
  EXPECT_EQ(t.num_cores(), 4);

  o.allowed_cpus = std::vector<int>{1, 4, 5};  // as a taskset/cgroup would restrict it
  Topology r = Topology::Discover(o);
  ASSERT_EQ(r.num_nodes(), 2);
  ASSERT_EQ(r.nodes()[0].cores.size(), 1u);
  EXPECT_EQ(r.nodes()[0].cores[0].pus, std::vector<int>{1});
  ASSERT_EQ(r.nodes()[1].cores.size(), 1u);
  EXPECT_EQ(r.nodes()[1].cores[0].pus, (std::vector<int>{4, 5}));
  EXPECT_EQ(r.NodeOfCpu(0), -1);

  o.allowed_cpus = std::vector<int>{0, 1, 2, 3};  // node 1 has no allowed CPU: dropped
  EXPECT_EQ(Topology::Discover(o).num_nodes(), 1);
}

TEST(Topology, FallbackIsOneNode) {
  TopologyOptions o;
  o.force_fallback = true;
  Topology t = Topology::Discover(o);
  EXPECT_FALSE(t.from_hwloc());
  ASSERT_EQ(t.num_nodes(), 1);
  EXPECT_EQ(t.nodes()[0].cpus, CurrentAffinity());

  o.force_fallback = false;
  o.synthetic = "this is not a topology";
  EXPECT_FALSE(Topology::Discover(o).from_hwloc());

  EngineOptions eo;
  eo.topology.force_fallback = true;
  auto engine = MakeEngine(eo);
  for (const WorkerInfo& w : engine->workers()) EXPECT_FALSE(w.pinned);
}

TEST(Topology, WorkerPlanOnePerPhysicalCoreAndIoReservation) {
  EngineOptions o;
  o.topology.synthetic = "pack:2 numa:1 core:2 pu:2";
  o.io_reserved_cores = 1;
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);
  std::vector<int> cpus;
  for (const WorkerInfo& w : engine->workers()) {
    cpus.push_back(w.cpu);
    EXPECT_EQ(w.node, w.cpu / 4);
  }
  std::sort(cpus.begin(), cpus.end());
  EXPECT_EQ(cpus, (std::vector<int>{0, 2, 4}));  // no SMT siblings; last core of node1 reserved
  EXPECT_EQ(engine->io_cpus(), (std::vector<int>{6, 7}));

  EngineOptions e;
  e.topology.synthetic = "pack:2 numa:1 core:2 pu:2";
  e.workers = 2;
  auto two = MakeEngine(e);
  ASSERT_EQ(two->workers().size(), 2u);
  EXPECT_EQ(two->workers()[0].node, 0);  // spread over the nodes
  EXPECT_EQ(two->workers()[1].node, 1);

  EngineOptions x;
  x.topology.synthetic = "pack:2 numa:1 core:2 pu:2";
  x.cpus = {1, 6};
  auto expl = MakeEngine(x);
  ASSERT_EQ(expl->workers().size(), 2u);
  EXPECT_EQ(expl->workers()[0].cpu, 1);
  EXPECT_EQ(expl->workers()[1].node, 1);
}

struct Where {
  int node = -1;
  int worker = -1;
  std::vector<int> affinity;
  std::atomic<bool> done{false};
};

// Runs `per_node` null jobs with node_hint = n on every node and records where each ran.
void CheckPlacement(const std::string& synthetic, int nodes) {
  EngineOptions o;
  o.topology.synthetic = synthetic;
  o.work_stealing = false;
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);
  ASSERT_EQ(engine->num_nodes(), nodes);
  const std::vector<WorkerInfo> workers = engine->workers();
  ASSERT_EQ(static_cast<int>(workers.size()), nodes);
  for (const WorkerInfo& w : workers) {
    EXPECT_EQ(w.cpu, w.node);  // one core per node in these layouts
    EXPECT_EQ(w.pinned, CpuExistsHere(w.cpu)) << "worker " << w.id << " cpu " << w.cpu;
  }
  const int per_node = 50;
  std::vector<std::unique_ptr<Where>> where;
  std::vector<std::unique_ptr<Job>> jobs;
  for (int n = 0; n < nodes; ++n) {
    for (int i = 0; i < per_node; ++i) {
      auto w = std::make_unique<Where>();
      auto j = std::make_unique<Job>();
      j->node_hint = n;
      Where* wp = w.get();
      j->on_complete = [wp](Job&, absl::Status s) {
        EXPECT_TRUE(s.ok());
        const WorkerInfo* me = CurrentWorker();
        if (me != nullptr) {
          wp->node = me->node;
          wp->worker = me->id;
        }
        wp->affinity = CurrentAffinity();
        wp->done.store(true, std::memory_order_release);
      };
      where.push_back(std::move(w));
      jobs.push_back(std::move(j));
    }
  }
  for (auto& j : jobs) engine->Submit(j.get());
  for (auto& w : where) {
    while (!w->done.load(std::memory_order_acquire)) std::this_thread::sleep_for(100us);
  }
  for (size_t k = 0; k < where.size(); ++k) {
    const int want = static_cast<int>(k) / per_node;
    ASSERT_EQ(where[k]->node, want) << "job for node " << want << " ran elsewhere";
    const WorkerInfo& w = workers[static_cast<size_t>(where[k]->worker)];
    if (w.pinned) {
      EXPECT_EQ(where[k]->affinity, std::vector<int>{w.cpu});  // the real binding, read back
    }
  }
  engine->Shutdown();
  const EngineStats st = engine->GetStats();
  for (const WorkerStats& ws : st.workers) EXPECT_EQ(ws.stolen_jobs, 0u);
}

TEST(Topology, SyntheticTwoNodesWorkersBoundAndJobsStayOnNode) {
  CheckPlacement("pack:2 numa:1 core:1 pu:1", 2);
}
TEST(Topology, SyntheticFourNodesWorkersBoundAndJobsStayOnNode) {
  CheckPlacement("pack:4 numa:1 core:1 pu:1", 4);
}

TEST(Topology, IdleNodeStealsFromBackloggedNode) {
  EngineOptions o;
  o.topology.synthetic = "pack:2 numa:1 core:1 pu:1";
  o.work_stealing = true;
  o.steal_min_backlog = 4;
  o.max_batch = 4;
  o.queue_capacity = 256;
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);

  // Hold node 0's worker inside a completion so that node 0's queue backs up.
  std::atomic<bool> held{false}, release{false};
  Job blocker;
  blocker.node_hint = 0;
  blocker.on_complete = [&](Job&, absl::Status) {
    held.store(true);
    while (!release.load()) std::this_thread::sleep_for(100us);
  };
  engine->Submit(&blocker);
  while (!held.load()) std::this_thread::sleep_for(100us);

  const int kJobs = 200;
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<std::atomic<int>> ran_on(kJobs);
  std::atomic<int> done{0};
  for (int i = 0; i < kJobs; ++i) {
    auto j = std::make_unique<Job>();
    j->node_hint = 0;
    std::atomic<int>* slot = &ran_on[i];
    j->on_complete = [slot, &done](Job&, absl::Status s) {
      EXPECT_TRUE(s.ok());
      slot->store(CurrentWorker() ? CurrentWorker()->node : -1);
      done.fetch_add(1);
    };
    jobs.push_back(std::move(j));
  }
  for (auto& j : jobs) engine->Submit(j.get());
  // Node 1's worker drains node 0's backlog while node 0's worker is held.
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (done.load() < kJobs - static_cast<int>(o.steal_min_backlog) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_GE(done.load(), kJobs - static_cast<int>(o.steal_min_backlog));
  release.store(true);
  while (done.load() < kJobs) std::this_thread::sleep_for(1ms);
  int stolen = 0;
  for (auto& r : ran_on) stolen += r.load() == 1;
  EXPECT_GT(stolen, 0);
  engine->Shutdown();
  const EngineStats st = engine->GetStats();
  EXPECT_EQ(st.workers[1].stolen_jobs, static_cast<uint64_t>(stolen));
  EXPECT_EQ(st.workers[1].node, 1);
}

TEST(Topology, CallerCpuPlacementOnThisMachine) {
  // On the real machine a job without a hint goes to the node of the submitting CPU.
  EngineOptions o;
  auto engine = MakeEngine(o);
  ASSERT_NE(engine, nullptr);
  std::atomic<int> node{-2};
  Job j;
  j.on_complete = [&](Job&, absl::Status) { node.store(CurrentWorker()->node); };
  engine->Submit(&j);
  while (node.load() == -2) std::this_thread::sleep_for(100us);
  EXPECT_GE(node.load(), 0);
  EXPECT_LT(node.load(), engine->num_nodes());
}

}  // namespace
}  // namespace pqcd::engine
