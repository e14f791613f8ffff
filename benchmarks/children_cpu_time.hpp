#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace edri::bench {

// CPU time used so far by the direct children of one process, as the kernel
// accounts it in /proc/<pid>/stat (utime + stime, all threads included).
struct ChildrenCpuTime {
  double seconds = 0;
  std::vector<pid_t> pids;  // the children summed, ascending: two samples
                            // are comparable only when these are equal
};

// Scans /proc/*/stat for processes whose parent is `parent`. nullopt when
// /proc cannot be listed. The kernel counts in clock ticks (usually 10 ms),
// so a difference of two samples is exact only to about a tick per child.
std::optional<ChildrenCpuTime> children_cpu_time(pid_t parent);

// The length of that tick, in seconds.
double cpu_tick_seconds();

// The CPU edri used per request (µs) over one measured window, from samples
// of its children taken as the window opened and closed (the supervisor
// only watches them). nullopt with `why_not` set when the samples do not
// allow it.
std::optional<double> cpu_us_per_request(const std::optional<ChildrenCpuTime>& at_start,
                                         const std::optional<ChildrenCpuTime>& at_end, std::uint64_t requests,
                                         std::string& why_not);

// Resident memory of `pid` (VmRSS, kB: private and the shared pages it
// touched), or nullopt when it is gone.
std::optional<long> resident_kb(pid_t pid);
// pid -> resident kB for `supervisor` and each of its children.
std::map<pid_t, long> resident_by_process(pid_t supervisor);
// The name the process gives itself on its command line (argv[0]).
std::string process_title(pid_t pid);

}  // namespace edri::bench
