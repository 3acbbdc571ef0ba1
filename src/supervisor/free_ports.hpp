// Ports for what the engines the warden launches listen on besides HTTP (their KV cache event
// publishers): a run of consecutive TCP ports that nothing is bound to now. Probed, not reserved: the engine
// binds them a moment later, which a busy host may race (the engine then fails to start and is restarted
// with the same ports; docs/engines.md).
#pragma once

#include <cstdint>
#include <optional>

namespace warden::supervisor {

// The first of `count` consecutive ports that could all be bound on every interface just now, from a
// random start in the unprivileged range below the kernel's ephemeral ports; nullopt after many tries.
std::optional<std::uint16_t> free_port_run(int count);

}  // namespace warden::supervisor
