#pragma once
// Internal: the pieces of CPU detection that read the test switches and
// sysfs (cpu.cpp), declared for the unit tests.
#include <cstddef>
#include <string>

#include "locus/cpu.hpp"

namespace locus::cpu::detail {

// Parses a LOCUS_CPU_HIDE value into f (hides what it names); throws
// locus::Error naming the unknown word.
void apply_hide(Features& f, const std::string& spec);
// Parses a LOCUS_CPU_CACHE value ("l2:1m,l3:32m"); throws on a bad one.
void apply_cache_override(Features& f, const std::string& spec);
// A sysfs size string ("48K", "2048K", "32M") in bytes; 0 when unreadable.
std::size_t parse_cache_size(const std::string& s);

}  // namespace locus::cpu::detail
