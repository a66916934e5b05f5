/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The few kernel types biolat.bpf.c and cglat.bpf.c read, instead of a multi-megabyte vmlinux.h.
 * preserve_access_index makes every field access a CO-RE relocation: the loader
 * resolves the real offsets from the running kernel's BTF, so only the names and
 * types here matter, not the layout or the members left out.
 */
#ifndef BIOLAT_KERNEL_H
#define BIOLAT_KERNEL_H

#include "types.h"
#include "cgroup.h"

struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk; /* newer kernels (5.15+) */
} __attribute__((preserve_access_index));

/* The owner of a bio, for cglat.bpf.c: bio->bi_blkg->blkcg->css.cgroup->kn->id (cgroup.h). */
struct blkcg {
	struct cgroup_subsys_state css;
} __attribute__((preserve_access_index));

struct blkcg_gq {
	struct blkcg *blkcg;
} __attribute__((preserve_access_index));

struct bio {
	struct blkcg_gq *bi_blkg;
} __attribute__((preserve_access_index));

/* The current task's cgroups, for cglat.bpf.c's task attribution (cgroup.h). */
struct task_struct {
	struct css_set *cgroups;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	struct bio *bio;
	struct gendisk *rq_disk; /* older kernels: read when it exists */
	unsigned int cmd_flags;
	unsigned int rq_flags;
	unsigned int __data_len;
	__u64 start_time_ns;
} __attribute__((preserve_access_index));

#endif
