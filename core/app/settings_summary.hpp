#pragma once
// The core's settings as the run summary prints them: each entry of the
// settings table (config/settings_table.hpp) that has a summary path.
#include <yaml-cpp/yaml.h>

#include "locus/settings.hpp"

namespace locus {

// Every setting the table prints in a run with these settings, at its path
// below locus_summary: {node_map: {emulated_node_size: 0}, progress:
// {thread: false}, remote: {mode: auto, ...}, htm: ..., async: {...} when
// comm.async is not off}, sections in table order.
YAML::Node settings_summary(const CommSettings& settings);

}  // namespace locus
