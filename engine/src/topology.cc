// Topology discovery with hwloc, and the fallback without it.
#include "pqcd/engine/topology.h"

#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "spdlog/spdlog.h"

namespace pqcd::engine {

std::vector<int> CurrentAffinity() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

int Topology::num_cores() const {
  int n = 0;
  for (const NodeInfo& node : nodes_) n += static_cast<int>(node.cores.size());
  return n;
}

std::string Topology::Describe() const {
  std::string out =
      absl::StrCat(nodes_.size(), nodes_.size() == 1 ? " node" : " nodes",
                   from_hwloc_ ? "" : " (fallback)", this_system_ ? "" : " (injected)", ":");
  for (const NodeInfo& n : nodes_) {
    absl::StrAppend(&out, n.index == 0 ? " node" : ", node", n.index, "(os ", n.os_index,
                    ") cpus [", absl::StrJoin(n.cpus, ","), "] ", n.cores.size(), " cores");
  }
  return out;
}

class TopologyBuilder {
 public:
  static Topology Fallback(const TopologyOptions& options, const std::string& why) {
    spdlog::warn("pqcd engine: {}; using one node of the allowed CPUs, workers unpinned", why);
    Topology t;
    std::vector<int> cpus = options.allowed_cpus ? *options.allowed_cpus : CurrentAffinity();
    if (cpus.empty()) {
      const int n = std::max(1u, std::thread::hardware_concurrency());
      for (int c = 0; c < n; ++c) cpus.push_back(c);
    }
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    NodeInfo node;
    node.index = 0;
    node.os_index = -1;
    for (int c : cpus) {
      node.cores.push_back(CoreInfo{-1, {c}});
      node.cpus.push_back(c);
    }
    t.nodes_.push_back(std::move(node));
    t.this_system_ = options.synthetic.empty() && options.xml_path.empty();
    t.from_hwloc_ = false;
    t.FillCpuMap();
    return t;
  }

  static Topology FromHwloc(const TopologyOptions& options) {
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0) return Fallback(options, "hwloc_topology_init failed");
    struct Guard {
      hwloc_topology_t t;
      ~Guard() { hwloc_topology_destroy(t); }
    } guard{topo};

    if (!options.synthetic.empty() &&
        hwloc_topology_set_synthetic(topo, options.synthetic.c_str()) != 0) {
      return Fallback(options,
                      absl::StrCat("bad hwloc synthetic topology '", options.synthetic, "'"));
    }
    if (options.synthetic.empty() && !options.xml_path.empty() &&
        hwloc_topology_set_xml(topo, options.xml_path.c_str()) != 0) {
      return Fallback(options, absl::StrCat("cannot read hwloc XML '", options.xml_path, "'"));
    }
    if (hwloc_topology_load(topo) != 0) return Fallback(options, "hwloc_topology_load failed");

    Topology t;
    t.from_hwloc_ = true;
    t.this_system_ = hwloc_topology_is_thissystem(topo) != 0;

    // The usable CPUs: hwloc's allowed set (cgroup cpuset), restricted by the process affinity
    // (taskset) on the real machine, or by the explicit override.
    hwloc_bitmap_t allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(topo));
    struct BitmapGuard {
      hwloc_bitmap_t b;
      ~BitmapGuard() { hwloc_bitmap_free(b); }
    } allowed_guard{allowed};
    std::optional<std::vector<int>> restrict_to = options.allowed_cpus;
    if (!restrict_to && t.this_system_) {
      std::vector<int> aff = CurrentAffinity();
      if (!aff.empty()) restrict_to = std::move(aff);
    }
    if (restrict_to) {
      hwloc_bitmap_t r = hwloc_bitmap_alloc();
      for (int c : *restrict_to) hwloc_bitmap_set(r, static_cast<unsigned>(c));
      hwloc_bitmap_and(allowed, allowed, r);
      hwloc_bitmap_free(r);
    }

    std::set<int> claimed;  // a PU belongs to the first node that lists it
    const int nnodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < nnodes; ++i) {
      hwloc_obj_t numa = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
      if (numa == nullptr || numa->cpuset == nullptr) continue;
      NodeInfo node;
      node.os_index = static_cast<int>(numa->os_index);
      node.memory_bytes = numa->attr != nullptr ? numa->attr->numanode.local_memory : 0;
      auto add_core = [&](hwloc_const_cpuset_t set, int core_os) {
        CoreInfo core;
        core.os_index = core_os;
        int pu = -1;
        hwloc_bitmap_foreach_begin(pu, set) {
          if (hwloc_bitmap_isset(allowed, static_cast<unsigned>(pu)) && !claimed.count(pu) &&
              hwloc_bitmap_isset(numa->cpuset, static_cast<unsigned>(pu))) {
            core.pus.push_back(pu);
          }
        }
        hwloc_bitmap_foreach_end();
        if (core.pus.empty()) return;
        for (int p : core.pus) {
          claimed.insert(p);
          node.cpus.push_back(p);
        }
        node.cores.push_back(std::move(core));
      };
      const int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, numa->cpuset, HWLOC_OBJ_CORE);
      if (ncores > 0) {
        for (int c = 0; c < ncores; ++c) {
          hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, numa->cpuset, HWLOC_OBJ_CORE,
                                                                 static_cast<unsigned>(c));
          if (core != nullptr) add_core(core->cpuset, static_cast<int>(core->os_index));
        }
      } else {  // no core information: every PU is its own core
        const int npus = hwloc_get_nbobjs_inside_cpuset_by_type(topo, numa->cpuset, HWLOC_OBJ_PU);
        for (int p = 0; p < npus; ++p) {
          hwloc_obj_t pu = hwloc_get_obj_inside_cpuset_by_type(topo, numa->cpuset, HWLOC_OBJ_PU,
                                                               static_cast<unsigned>(p));
          if (pu != nullptr) add_core(pu->cpuset, -1);
        }
      }
      if (node.cores.empty()) continue;  // memory-only node, or no allowed CPU on it
      std::sort(node.cpus.begin(), node.cpus.end());
      node.index = static_cast<int>(t.nodes_.size());
      t.nodes_.push_back(std::move(node));
    }
    if (t.nodes_.empty()) return Fallback(options, "hwloc found no NUMA node with allowed CPUs");
    t.FillCpuMap();
    return t;
  }

 private:
  friend class Topology;
};

void FillCpuMapImpl(std::vector<NodeInfo>& nodes, std::vector<int>& map) {
  int max_cpu = -1;
  for (const NodeInfo& n : nodes) {
    for (int c : n.cpus) max_cpu = std::max(max_cpu, c);
  }
  map.assign(static_cast<size_t>(max_cpu + 1), -1);
  for (const NodeInfo& n : nodes) {
    for (int c : n.cpus) map[static_cast<size_t>(c)] = n.index;
  }
}

void Topology::FillCpuMap() {
  FillCpuMapImpl(nodes_, cpu_to_node_);
}

Topology Topology::Discover(const TopologyOptions& options) {
  if (options.force_fallback) return TopologyBuilder::Fallback(options, "hwloc disabled");
  Topology t = TopologyBuilder::FromHwloc(options);
  spdlog::debug("pqcd engine topology: {}", t.Describe());
  return t;
}

}  // namespace pqcd::engine
