// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * File operation latency as exponential histograms (scale 3, biolat's slots) per
 * {mount, operation}, as the process sees it: from a read, write or fsync
 * system call's entry to its return, on regular files only, so that the page
 * cache, NFS and FUSE are in it and the block layer's view is not needed.
 *
 * Why system calls: this kernel refuses fentry/fexit (BPF trampolines) on
 * vfs_read and friends with EPERM even as root, and has no kprobes; the raw
 * syscall tracepoints are BTF tracepoints (tp_btf), which it accepts with
 * CAP_BPF + CAP_PERFMON. What is not a read/write/fsync system call (mmap
 * faults, io_uring, splice) is not measured.
 *
 * Page cache: a read's pages are its bytes in pages; its misses are the pages
 * it inserted into its own file's page cache while it ran (readahead included,
 * as the reader waits for them or will read them next), seen at
 * tp_btf/mm_filemap_add_to_page_cache in the reading task.
 *
 * Per cgroup (per_cgroup set by the loader): the same numbers again per
 * {cgroup, mount, operation} in cgfiles, charged to the calling task's cgroup
 * in the io/blkio hierarchy (cgroup.h: the blkio controller's on a v1 or
 * hybrid host, the unified hierarchy's on v2), the cgroup ids cglat's task
 * attribution reads, so that one resolution (cgroupio.IDs) serves both.
 * bpf_get_current_cgroup_id() is not used: it returns the cgroup of the v2
 * (unified) hierarchy, which on a v1 host is not where containers are.
 */
#include "vfs.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "../../biolat/bpf/slots.h"

#define NR_SYSCALLS 1024
#define S_IFMT 00170000
#define S_IFREG 0100000

/* 0 in the syscall table means "not a file operation we measure". */
enum op { OP_NONE, OP_READ, OP_WRITE, OP_FSYNC };
enum drop {
	DROP_FULL, /* no room for a new {mount, op} */
	DROP_CGROUPS_FULL, /* no room for a new {cgroup, mount, op} (the mount's series has the call) */
	NR_DROPS,
};

struct file_key {
	__u32 mnt_id;
	__u8 op;
	__u8 pad[3];
};

struct cg_file_key {
	__u64 cgid;
	__u32 mnt_id;
	__u8 op;
	__u8 pad[3];
};

struct file_val {
	__u64 slots[NR_SLOTS];
	__u64 zero;   /* at or below 2^-20 s */
	__u64 sum_ns;
	__u64 bytes;  /* returned by the calls */
	__u64 pages;  /* reads: the bytes returned, in pages, rounded up per call */
	__u64 added;  /* reads: pages they inserted into their file's page cache */
};

/* The call a task is in, from its sys_enter to its sys_exit. */
struct call {
	__u64 start;
	__u64 cgid;
	__u64 mapping;
	__u64 added;
	__u32 mnt_id;
	__u8 op;
};

const volatile __u32 page_shift = 12;
const volatile __u32 per_cgroup = 0; /* also fill cgfiles */
const volatile __u32 compat_status = 0; /* x86-64: TS_COMPAT, a 32-bit task's syscall numbers differ */

/* Syscall number to enum op, filled by the loader for this architecture. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NR_SYSCALLS);
	__type(key, __u32);
	__type(value, __u8);
} syscall_ops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct file_key);
	__type(value, struct file_val);
} files SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct cg_file_key);
	__type(value, struct file_val);
} cgfiles SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct call);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_DROPS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static __always_inline void drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);

	if (n)
		*n += 1;
}

static __always_inline unsigned long first_arg(struct pt_regs *regs)
{
	if (bpf_core_field_exists(((struct pt_regs___x86 *)regs)->di))
		return ((struct pt_regs___x86 *)regs)->di;
	return ((struct pt_regs___arm64 *)regs)->regs[0];
}

SEC("tp_btf/sys_enter")
int on_enter(__u64 *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)ctx[0];
	__u32 id = (__u32)ctx[1];
	struct task_struct *task;
	struct fdtable *fdt;
	struct file *file = 0;
	struct mount *mnt;
	struct call *c;
	__u8 *op;
	__u32 fd;

	op = bpf_map_lookup_elem(&syscall_ops, &id);
	if (!op || !*op)
		return 0;
	task = bpf_get_current_task_btf();
	if (compat_status && bpf_core_field_exists(task->thread_info.status) &&
	    (task->thread_info.status & compat_status))
		return 0;
	fd = (__u32)first_arg(regs);
	fdt = task->files->fdt;
	if (fd >= fdt->max_fds)
		return 0;
	bpf_probe_read_kernel(&file, sizeof(file), &fdt->fd[fd]);
	if (!file || (BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) != S_IFREG)
		return 0;
	c = bpf_task_storage_get(&calls, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c)
		return 0;
	mnt = (void *)BPF_CORE_READ(file, f_path.mnt) - bpf_core_field_offset(struct mount, mnt);
	c->mnt_id = BPF_CORE_READ(mnt, mnt_id);
	c->mapping = (__u64)BPF_CORE_READ(file, f_mapping);
	c->added = 0;
	c->cgid = 0;
	if (per_cgroup && bpf_core_enum_value_exists(enum cgroup_subsys_id, io_cgrp_id))
		c->cgid = task->cgroups->subsys[bpf_core_enum_value(enum cgroup_subsys_id, io_cgrp_id)]->cgroup->kn->id;
	c->op = *op;
	c->start = bpf_ktime_get_ns();
	return 0;
}

/* The entry of key in map, created as zero when new; 0 when the map is full. */
static __always_inline struct file_val *entry(void *map, void *key)
{
	static const struct file_val zero;
	struct file_val *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

static __always_inline void record(struct file_val *v, __s32 slot, __u64 ns, long ret, __u8 op, __u64 added)
{
	if (slot < 0)
		__sync_fetch_and_add(&v->zero, 1);
	else if (slot < NR_SLOTS)
		__sync_fetch_and_add(&v->slots[slot], 1);
	__sync_fetch_and_add(&v->sum_ns, ns);
	if (ret > 0) {
		__sync_fetch_and_add(&v->bytes, ret);
		if (op == OP_READ) {
			__sync_fetch_and_add(&v->pages, ((__u64)ret + (1ULL << page_shift) - 1) >> page_shift);
			__sync_fetch_and_add(&v->added, added);
		}
	}
}

SEC("tp_btf/sys_exit")
int on_exit(__u64 *ctx)
{
	long ret = (long)ctx[1];
	struct file_key key = {};
	struct file_val *v;
	struct call *c;
	__u64 ns;
	__s32 slot;

	c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!c || !c->op)
		return 0;
	ns = bpf_ktime_get_ns() - c->start;
	key.mnt_id = c->mnt_id;
	key.op = c->op;
	c->op = OP_NONE;
	slot = slot_of(ns);
	v = entry(&files, &key);
	if (v)
		record(v, slot, ns, ret, key.op, c->added);
	else
		drop(DROP_FULL);
	if (per_cgroup) {
		struct cg_file_key ck = { .cgid = c->cgid, .mnt_id = key.mnt_id, .op = key.op };

		v = entry(&cgfiles, &ck);
		if (v)
			record(v, slot, ns, ret, key.op, c->added);
		else
			drop(DROP_CGROUPS_FULL);
	}
	return 0;
}

static __always_inline __u64 folio_pages(struct folio *folio)
{
	unsigned long flags;

	if (bpf_core_field_exists(((struct folio___ulong_flags *)folio)->flags))
		flags = ((struct folio___ulong_flags *)folio)->flags;
	else
		flags = folio->flags.f;
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1;
	if (bpf_core_field_exists(((struct folio___order_byte *)folio)->_folio_order))
		return 1ULL << (((struct folio___order_byte *)folio)->_folio_order & 0x3f);
	return 1ULL << (folio->_flags_1 & 0xff);
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int on_add_to_page_cache(__u64 *ctx)
{
	struct folio *folio = (struct folio *)ctx[0];
	struct call *c;

	c = bpf_task_storage_get(&calls, bpf_get_current_task_btf(), 0, 0);
	if (!c || c->op != OP_READ || (__u64)folio->mapping != c->mapping)
		return 0;
	c->added += folio_pages(folio);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
