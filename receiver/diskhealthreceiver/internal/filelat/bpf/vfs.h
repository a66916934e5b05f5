/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The few kernel types filelat.bpf.c reads, instead of a multi-megabyte vmlinux.h.
 * preserve_access_index makes every field access a CO-RE relocation resolved from
 * the running kernel's BTF: only names and types matter here, not layouts.
 */
#ifndef FILELAT_VFS_H
#define FILELAT_VFS_H

#include "../../biolat/bpf/types.h"
#include "../../biolat/bpf/cgroup.h"

/* Syscall arguments: x86's pt_regs names them, arm64's numbers them; the loader's BTF decides. */
struct pt_regs___x86 {
	unsigned long di;
} __attribute__((preserve_access_index));

struct pt_regs___arm64 {
	__u64 regs[31];
} __attribute__((preserve_access_index));

struct pt_regs;

/* x86's TS_COMPAT lives in thread_info.status; other architectures have no such field. */
struct thread_info {
	__u32 status;
} __attribute__((preserve_access_index));

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	struct files_struct *files;
	struct css_set *cgroups; /* cgroup.h */
} __attribute__((preserve_access_index));

struct vfsmount {
	void *mnt_root;
} __attribute__((preserve_access_index));

/* fs/mount.h: the vfsmount is embedded in it; mnt_id is /proc/self/mountinfo's first field. */
struct mount {
	struct vfsmount mnt;
	int mnt_id;
} __attribute__((preserve_access_index));

struct path {
	struct vfsmount *mnt;
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode;
} __attribute__((preserve_access_index));

struct address_space;

struct file {
	struct path f_path;
	struct inode *f_inode;
	struct address_space *f_mapping;
} __attribute__((preserve_access_index));

/* The folio's flags became memdesc_flags_t (a struct) in 6.18; before, an unsigned long. */
struct folio {
	struct {
		unsigned long f;
	} flags;
	struct address_space *mapping;
	unsigned long _flags_1;
} __attribute__((preserve_access_index));

struct folio___ulong_flags {
	unsigned long flags;
} __attribute__((preserve_access_index));

/* Until 6.6 a large folio's order was a byte of its own; since, the low byte of _flags_1 (which on the
 * older kernels holds the first tail page's flags instead). */
struct folio___order_byte {
	unsigned char _folio_order;
} __attribute__((preserve_access_index));

enum pageflags {
	PG_head = 6, /* relocated: the real value comes from the kernel's BTF */
};

#endif
