/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The integer types and the stable BPF ABI constants every program of the receiver
 * (biolat's, cglat's, filelat's) needs before bpf_helpers.h, instead of vmlinux.h.
 */
#ifndef BIOLAT_TYPES_H
#define BIOLAT_TYPES_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;

/* From include/uapi/linux/bpf.h, as far as the programs use them. */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};
enum {
	BPF_F_NO_PREALLOC = 1,
};
enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

#endif
