/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A cgroup's id as cglat.bpf.c and filelat.bpf.c read it: css->cgroup->kn->id, the inode number of
 * the cgroup's directory (cgroupio.IDs), from a bio's owner or a task's io/blkio css
 * (task->cgroups->subsys[io_cgrp_id]: the v1 blkio hierarchy's cgroup on a v1 or hybrid host, the
 * unified hierarchy's on v2). Each program declares its own struct task_struct with a
 * struct css_set *cgroups member. CO-RE relocated, as kernel.h.
 */
#ifndef BIOLAT_CGROUP_H
#define BIOLAT_CGROUP_H

#include "types.h"

struct kernfs_node {
	__u64 id; /* the inode number of the cgroup's directory on 64-bit (5.5+) */
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
	struct cgroup *cgroup;
} __attribute__((preserve_access_index));

/* A task's css in the io/blkio hierarchy: task->cgroups->subsys[io_cgrp_id]. */
enum cgroup_subsys_id {
	io_cgrp_id = 1, /* relocated: the real value comes from the kernel's BTF */
};

struct css_set {
	struct cgroup_subsys_state *subsys[16];
} __attribute__((preserve_access_index));

#endif
