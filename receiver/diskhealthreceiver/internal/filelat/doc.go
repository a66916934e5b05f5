// Package filelat measures file operation latency per mount with eBPF, as the process sees it, and
// how much of what reads return the page cache had: read, write and fsync system calls on regular
// files, from entry to return, so that the page cache, NFS and FUSE are in it (the block layer sees
// none of those). It is a library: no pdata, no configuration.
//
// # Use
//
//	p, err := filelat.Open(filelat.Options{MaxMounts: 256})
//	defer p.Close()
//	s, err := p.Collect()                      // every scrape: cumulative since p.Started()
//	mounts, err := fsusage.ParseMountInfo(...) // /proc/self/mountinfo
//	resolved, gone := filelat.Resolve(s.Series, mounts)
//	for _, x := range resolved { ... }         // {Mount, MountID, Op, Histogram, Bytes, Pages, PagesAdded}
//	p.Forget(gone...)                          // unmounted: a reused mount ID starts from zero
//
// Histograms are biolat's (biolat.Histogram: scale 3, the same buckets and zero threshold, decoded
// by biolat.DecodeHist from the same bpf/slots.h), so file and block latency are comparable bucket
// for bucket. Series are keyed by the kernel's mount ID (file->f_path.mnt), so two bind mounts of one
// filesystem are two series; the table holds Options.MaxMounts × 3 entries, preallocated, and a call
// on a further mount counts in Drops.Full.
//
// Per cgroup (Options.PerCgroup): every call counts a second time in a table keyed by {cgroup, mount,
// operation} (Snapshot.Cgroups), charged to the calling task's cgroup at entry. The cgroup is the
// task's css in the io/blkio hierarchy (task->cgroups->subsys[io_cgrp_id]->cgroup->kn->id), as biolat's
// per-cgroup probe reads it for task attribution, so cgroupio.IDs of that hierarchy names it on a v1,
// hybrid or v2 host alike; bpf_get_current_cgroup_id() would name the unified hierarchy's cgroup, which
// on a v1 or hybrid host is not where containers are. The table holds Options.MaxCgroupSeries entries,
// preallocated; a call with no room counts in Drops.CgroupsFull and is still in its mount's series.
// Off, the program's per-cgroup path is dead code the verifier removes; on, a measured call pays four
// pointer reads at entry and a second hash update at exit (BenchmarkSyscallOverhead, load 7 on 2
// vCPUs: a cached 4 KiB pread 1.83 µs with the probe, 2.10 µs with per-cgroup on, 0.95 µs without).
// ForgetCgroups frees a removed cgroup's entries, Forget a gone mount's in every cgroup.
// TestReadsChargedToTheCallersCgroup: dd in a child blkio cgroup and the test process read one file;
// each one's reads are in its own cgroup's series, and they add up to the mount's.
//
// FUSE: a read on a FUSE mount is timed from entry to return, the daemon's time included
// (TestFUSEReadsTakeTheDaemonsTime: a daemon delaying each read 50 ms gives a p50 bucket of
// [48.19, 52.56) ms; the mean was 50.4 ms on a quiet machine, up to 59.8 ms on a busy one). The block layer sees none of it: a FUSE mount's
// device number is anonymous (major 0), no block device is behind it, so biolat has no series for it.
// A FUSE file opened with direct I/O puts no page in the cache, so its reads' pages count as hits.
//
// Page cache: Series.CachePages splits a read series' pages (its bytes in pages, rounded up per
// call) into hits and misses, a miss being a page the reads inserted into their own file's page cache
// while they ran (tp_btf/mm_filemap_add_to_page_cache in the reading task, readahead included).
//
// # Kernel and privileges
//
// The hooks are BTF tracepoints: raw sys_enter/sys_exit (the file is looked up from the fd at entry,
// regular files only) and mm_filemap_add_to_page_cache. On the 6.18 kernel this was built on,
// fentry/fexit on vfs_read, vfs_write, vfs_open, vfs_fsync_range, filemap_read or a filesystem's
// read_iter is refused with EPERM at program load even as root (the verifier never runs), and there
// are no kprobes, so the syscall tracepoints are the entry and return points there are. Why, checked
// on that kernel (6.18.44-fc, a Firecracker guest): not a missing build option. Its /proc/config.gz
// sets CONFIG_FUNCTION_TRACER, CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS (the ftrace direct calls
// fentry's trampolines attach through) and CONFIG_BPF_LSM, and tracefs' dyn_ftrace_total_info counts
// 48 019 patchable functions; but every ftrace file that names functions (available_filter_functions,
// set_ftrace_filter, enabled_functions) refuses to open with EPERM as root in a fresh tracefs mount,
// while the tracepoint files open. Lockdown is at integrity (CONFIG_LOCK_DOWN_KERNEL_FORCE_INTEGRITY,
// a level that covers neither tracefs nor BPF reads of kernel memory: a tp_btf program calling
// bpf_probe_read_kernel loads), it logged nothing, and no BPF LSM program was loaded; CONFIG_KPROBES
// and CONFIG_FPROBE are not set. So function attachment is refused by a policy of that kernel build,
// not by the mechanism: a kernel with ftrace direct calls and no such policy (the option is on by
// default wherever the architecture has it and dynamic ftrace is built, as in the common
// distributions' x86-64 kernels) attaches fentry/fexit, which would let the probe hook the file
// operations alone and leave every other system call untraced. The probe does not use that yet.
//
// The syscall programs run on every system call of the machine: the entry program returns after one array lookup for a syscall
// that is not a file operation, the exit program after a task-storage lookup. Attaching them at all
// puts every task's system calls on the kernel's traced path: BenchmarkSyscallOverhead measured here
// (2 shared vCPUs, noisy) getppid 390–830 ns without the probe and 0.3–1.7 µs more with it, most of it
// also with two empty programs on the same tracepoints (+0.2–0.75 µs), and a cached 4 KiB pread
// 1.3–2.5 µs without and 1.7–5.2 µs more with it. By the kernel's own BPF statistics
// (BenchmarkBPFRunTimePerOp, BENCHMARKS.md "File latency", on a quiet machine): 453 ns of run time per
// cached 4 KiB pread, 445 ns per pwrite, 150 ns per other syscall; fio's 4 KiB reads from the page cache
// lose 18 % of their IOPS. Most of a file call's is not the program's work but what any latency costs
// there (BenchmarkBPFParts): two clock reads at 92 ns each (kvm-clock with the TSC marked unstable), two
// program runs, and the per-task slot that carries the start from entry to return, looked up twice
// (85 ns each); the six bpf_probe_read_kernel from the fd to the file's fields are ~19 ns each. That is
// why the source built on it must stay opt-in. Not seen: mmap faults,
// io_uring, splice/sendfile, a 32-bit process's calls on x86-64 (their numbers are i386's and are
// skipped; on arm64 AArch32 tasks are not told apart yet), and mounts of other mount namespaces
// resolve only there (Resolve's gone).
//
// It needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN); measured as uid 65534: both load and attach,
// CAP_BPF alone fails at program load, CAP_PERFMON alone or none at map creation.
//
// # Build
//
// bpf/filelat.bpf.c, bpf/vfs.h and biolat's bpf/slots.h are the sources; filelat_bpfel.{o,go} are
// generated by `make bpf` (bpf2go, Debian's clang-14) and committed. TestObjectMatchesSources fails
// when they drift.
package filelat
