// The machine as the engine sees it: NUMA nodes, their physical cores (SMT siblings grouped) and
// memory, restricted to the CPUs this process may use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pqcd::engine {

struct TopologyOptions {
  // Inject a topology instead of discovering this machine's (tests, what-if runs):
  // an hwloc synthetic description ("pack:2 numa:1 core:2 pu:2") or an hwloc XML file.
  // Injected topologies are not "this system": memory is not node-bound, and workers are pinned
  // only to the CPUs of the injected layout that also exist in this process's affinity mask.
  std::string synthetic;
  std::string xml_path;
  // Restrict the usable CPUs (OS indices) further, as taskset/cgroups would. Default: this
  // process's affinity mask (for the real machine) or every CPU (for an injected topology).
  std::optional<std::vector<int>> allowed_cpus;
  // Skip hwloc (tests of the fallback path).
  bool force_fallback = false;
};

struct CoreInfo {
  int os_index = -1;     // hwloc core OS index (-1 if unknown)
  std::vector<int> pus;  // allowed OS CPU indices of this core (SMT siblings), first = preferred
};

struct NodeInfo {
  int index = 0;      // dense index 0..nodes-1 used by the engine (queues, node_hint)
  int os_index = -1;  // OS NUMA node number (for memory binding); -1 if unknown
  uint64_t memory_bytes = 0;
  std::vector<CoreInfo> cores;
  std::vector<int> cpus;  // every allowed PU of the node, ascending
};

class Topology {
 public:
  // Never fails: without hwloc (or when it cannot load the requested topology) it falls back to
  // one node made of the allowed CPUs (one core per CPU) and logs a warning.
  static Topology Discover(const TopologyOptions& options = {});

  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  int num_cores() const;
  // True when this describes the running machine (binding threads and memory is meaningful).
  bool is_this_system() const { return this_system_; }
  // False for the fallback topology.
  bool from_hwloc() const { return from_hwloc_; }
  // Dense node index of an OS CPU, or -1.
  int NodeOfCpu(int cpu) const {
    return cpu >= 0 && cpu < static_cast<int>(cpu_to_node_.size()) ? cpu_to_node_[cpu] : -1;
  }
  // One line for logs: "2 nodes: node0 [0-1] 2 cores, node1 ...".
  std::string Describe() const;

 private:
  friend class TopologyBuilder;
  void FillCpuMap();
  std::vector<NodeInfo> nodes_;
  std::vector<int> cpu_to_node_;
  bool this_system_ = false;
  bool from_hwloc_ = false;
};

// The CPUs (OS indices) in the calling thread's affinity mask; empty if it cannot be read.
std::vector<int> CurrentAffinity();

}  // namespace pqcd::engine
