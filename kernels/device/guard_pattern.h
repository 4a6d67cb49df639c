// The guard bytes of an arena: byte i of every margin and of unowned storage
// holds sentinel_byte(i), position-dependent so that a shifted copy or a
// stray write changes a byte one can point at. One definition for the host
// arenas (harness/case/arena.h) and the device fills (device_ops.hip).
#pragma once
#include <cstdint>

#include "device/counter_rng.h"  // KVH_HOST_DEVICE

namespace kvh {

/// The sentinel at arena byte `i`. It repeats every 65,536 bytes.
KVH_HOST_DEVICE inline uint8_t sentinel_byte(uint64_t i) { return uint8_t(0xA5u ^ uint8_t(i * 0x3Bu) ^ uint8_t(i >> 8)); }

}  // namespace kvh
