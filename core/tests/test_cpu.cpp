// CPU features and cache sizes (locus/cpu.hpp): the parsing of sysfs sizes
// and of the two test switches, hiding a feature, the CPU as it is (for
// OpenBLAS's kernels), and the cache blocking rule that heat3d's sweep
// takes from L2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "base/cpu_parse.hpp"
#include "locus/cpu.hpp"
#include "locus/error.hpp"

namespace cpu = locus::cpu;

namespace {

TEST(Cpu, ParsesSysfsCacheSizes) {
  EXPECT_EQ(cpu::detail::parse_cache_size("48K"), 48u * 1024);
  EXPECT_EQ(cpu::detail::parse_cache_size("2048K"), 2048u * 1024);
  EXPECT_EQ(cpu::detail::parse_cache_size("32M"), 32u << 20);
  EXPECT_EQ(cpu::detail::parse_cache_size("1m"), 1u << 20);
  EXPECT_EQ(cpu::detail::parse_cache_size("65536"), 65536u);
  EXPECT_EQ(cpu::detail::parse_cache_size(""), 0u);
  EXPECT_EQ(cpu::detail::parse_cache_size("K"), 0u);
  EXPECT_EQ(cpu::detail::parse_cache_size("12Q"), 0u);
}

TEST(Cpu, HidingClearsExactlyWhatIsNamed) {
  cpu::Features f;
  f.rtm = f.avx2 = f.avx512f = f.streaming_stores = true;
  cpu::detail::apply_hide(f, "rtm");
  EXPECT_FALSE(f.rtm);
  EXPECT_TRUE(f.avx2 && f.avx512f && f.streaming_stores);
  EXPECT_EQ(f.hidden, "rtm");

  f.rtm = f.avx2 = f.avx512f = f.streaming_stores = true;
  cpu::detail::apply_hide(f, " avx512 ");
  EXPECT_FALSE(f.avx512f);
  EXPECT_TRUE(f.rtm && f.avx2 && f.streaming_stores);

  f.rtm = f.avx2 = f.avx512f = f.streaming_stores = true;
  cpu::detail::apply_hide(f, "stream");
  EXPECT_FALSE(f.streaming_stores);
  EXPECT_TRUE(f.rtm && f.avx2 && f.avx512f);

  // without AVX2 there is neither AVX-512 nor the 256-bit streaming stores
  f.rtm = f.avx2 = f.avx512f = f.streaming_stores = true;
  cpu::detail::apply_hide(f, "AVX2");
  EXPECT_FALSE(f.avx2 || f.avx512f || f.streaming_stores);
  EXPECT_TRUE(f.rtm);

  f.rtm = f.avx2 = f.avx512f = f.streaming_stores = true;
  cpu::detail::apply_hide(f, "all");
  EXPECT_FALSE(f.rtm || f.avx2 || f.avx512f || f.streaming_stores);
  EXPECT_EQ(f.hidden, "rtm,avx512,avx2,stream");
}

TEST(Cpu, UnknownFeatureIsAnErrorNamingIt) {
  cpu::Features f;
  try {
    cpu::detail::apply_hide(f, "rtm,sse9");
    FAIL() << "no error";
  } catch (const locus::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sse9'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("LOCUS_CPU_HIDE"), std::string::npos) << e.what();
  }
}

TEST(Cpu, CacheOverride) {
  cpu::Features f;
  f.l2 = 2u << 20;
  cpu::detail::apply_cache_override(f, "l2:1m, l3:32M");
  EXPECT_EQ(f.l2, 1u << 20);
  EXPECT_EQ(f.l3, 32u << 20);
  EXPECT_EQ(f.caches_from, "LOCUS_CPU_CACHE");
  EXPECT_THROW(cpu::detail::apply_cache_override(f, "l4:1m"), locus::Error);
  EXPECT_THROW(cpu::detail::apply_cache_override(f, "l2"), locus::Error);
  EXPECT_THROW(cpu::detail::apply_cache_override(f, "l2:lots"), locus::Error);
}

// The process's own reading: the variables are applied, and what is read
// is self-consistent on any CPU.
TEST(Cpu, ProcessReadingHonoursTheSwitches) {
  setenv("LOCUS_CPU_HIDE", "all", 1);
  setenv("LOCUS_CPU_CACHE", "l2:1m", 1);
  cpu::reset_for_tests();
  const cpu::Features& f = cpu::features();
  EXPECT_FALSE(f.rtm || f.avx2 || f.avx512f || f.streaming_stores);
  EXPECT_EQ(f.l2, 1u << 20);
  EXPECT_NE(cpu::feature_list().find("hidden by LOCUS_CPU_HIDE"), std::string::npos);
  EXPECT_NE(cpu::cache_list().find("l2 1 MiB"), std::string::npos) << cpu::cache_list();
  EXPECT_TRUE(f.error.empty());
  setenv("LOCUS_CPU_HIDE", "avx3", 1);  // an error to report, not an exception here
  cpu::reset_for_tests();
  EXPECT_NE(cpu::features().error.find("'avx3'"), std::string::npos) << cpu::features().error;
  unsetenv("LOCUS_CPU_HIDE");
  unsetenv("LOCUS_CPU_CACHE");
  cpu::reset_for_tests();
  const cpu::Features& g = cpu::features();
  EXPECT_GT(g.l2, 0u);
  EXPECT_TRUE(g.hidden.empty());
  if (g.avx512f) {
    EXPECT_TRUE(g.avx2) << "AVX-512F without AVX2";
  }
  std::printf("this CPU: vendor %s; %s; %s\n", g.vendor.c_str(), cpu::feature_list().c_str(),
              cpu::cache_list().c_str());
}

// The CPU as it is (for a library's kernels): the flags the kernel reports
// in /proc/cpuinfo, whatever LOCUS_CPU_HIDE hides from locus's own paths.
TEST(Cpu, HardwareIsaMatchesProcCpuinfoAndIgnoresHiding) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo (not x86 Linux)";
  auto has = [&](const char* f) {
    std::string word(" ");
    word.append(f).push_back(' ');
    return flags.find(word) != std::string::npos;
  };
  setenv("LOCUS_CPU_HIDE", "all", 1);
  cpu::reset_for_tests();
  const cpu::HardwareIsa h = cpu::hardware_isa();
  unsetenv("LOCUS_CPU_HIDE");
  cpu::reset_for_tests();
  EXPECT_EQ(h.avx2_fma, has("avx2") && has("fma"));
  EXPECT_EQ(h.avx512_skx, has("avx512f") && has("avx512bw") && has("avx512dq") && has("avx512vl"));
}

// heat3d's blocking: a quarter of L2 over three planes' rows, clamped.
TEST(Cpu, StencilBlockRowsFollowL2) {
  setenv("LOCUS_CPU_CACHE", "l2:2m", 1);
  cpu::reset_for_tests();
  const std::size_t row = 258 * sizeof(double);                                     // nx = 256 and two ghosts
  EXPECT_EQ(cpu::stencil_block_rows(row, 1000), long((2u << 20) / 4 / (3 * row)));  // 84
  setenv("LOCUS_CPU_CACHE", "l2:1m", 1);
  cpu::reset_for_tests();
  EXPECT_EQ(cpu::stencil_block_rows(row, 1000), long((1u << 20) / 4 / (3 * row)));  // 42
  EXPECT_EQ(cpu::stencil_block_rows(row, 10), 10);                                  // never past the rows
  EXPECT_EQ(cpu::stencil_block_rows(1u << 20, 1000), 4);                            // never below 4
  unsetenv("LOCUS_CPU_CACHE");
  cpu::reset_for_tests();
}

}  // namespace
