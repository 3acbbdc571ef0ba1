// A what-if run the classes-of-work and direct-client tests share: two replicas past their caches at a level
// of 8 agents, so that task admission holds some of the warden's task starts.
#pragma once

#include "engine/presets.hpp"
#include "whatif/driver.hpp"
#include "workload/workload.hpp"

namespace warden::whatif {

inline SimulationConfig crowded() {
  SimulationConfig c;
  c.engine = *engine::find_preset("a4000-qwen3-4b");
  c.engine.num_gpu_blocks = 2100;
  c.replicas = 2;
  c.levels = {8};
  c.duration = 600;
  c.policies = {"affinity"};
  c.workload = *workload::preset("agentic");
  c.workload.agentic.think_time = 5;
  c.workload.agentic.rounds_mean = 4;
  c.workload.agentic.context_window = c.engine.max_model_len;
  return c;
}

}  // namespace warden::whatif
