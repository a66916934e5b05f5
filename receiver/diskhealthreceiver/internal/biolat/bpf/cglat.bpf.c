// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Block request latency per owning cgroup: exponential histograms (scale 3, the
 * buckets of biolat.bpf.c) per {cgroup, device, direction}, each with the sum of
 * its requests' time in flight (its share of the device's queue occupancy) and
 * their bytes. A program apart from biolat.bpf.c, so that the per-device path and
 * its cost stay the same when this one is off.
 *
 * Owner. At request start (tp_btf/block_io_start, blk_account_io_start, on 6.5+;
 * tp_btf/block_rq_issue before) the owner is the blkcg of the request's first bio,
 * rq->bio->bi_blkg->blkcg->css.cgroup->kn->id: the cgroup io.stat and blkio.*
 * charge, the inode number of its directory in the hierarchy that has the
 * io/blkio controller (64-bit kernels). Writeback bios carry the page owner's
 * blkg (wbc_init_bio), so buffered writes land on the writer's cgroup, not the
 * flusher's. {cgid, bytes} is stored per request struct (LRU: an entry whose
 * completion never comes ages out; the struct's next request overwrites it) and
 * marked used by its completion. A completion that finds it used never started
 * where the owner is read (before 6.5, the data-less PREFLUSH write a flush
 * sequence completes unissued): its owner is read at completion.
 *
 * Merges. blk-mq merges a bio into a request (plug, scheduler, and
 * request-to-request merges) only when blk_cgroup_mergeable() holds: the same
 * bi_blkg (and the same ioprio). So every bio of a request has the owner read
 * from the first. Bytes are rq->__data_len when the owner is read; on 6.5+ that
 * is before later merges grow the request, so bytes read low for merged
 * sequential streams (counts and time are exact).
 *
 * Remaps. A bio-based dm or md device completes no request of its own; its
 * clones (bio_alloc_clone, bio_clone_blkg_association) and split bios keep the
 * original bio's blkg, so a member device's requests are charged to the cgroup
 * that wrote to the dm/md device. dm-crypt's and loop's workers submit on behalf
 * of the original blkg too.
 *
 * Completion: the hook and accounting filter of biolat.bpf.c (block_io_done on
 * 6.5+, the final block_rq_complete before; IO_STAT and not FLUSH_SEQ, flushes
 * accounted), now - rq->start_time_ns. A request without an owner (no bio, such
 * as the flush request a flush sequence sends; no blkg; or started before the
 * program attached) and any key beyond the preallocated table are recorded per
 * {device, direction} in "others", with a counter saying why.
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "hist.h"

enum cg_count {
	CG_NO_START,     /* start_time_ns is 0: the queue has iostats off */
	CG_UNATTRIBUTED, /* completed with no bio or no blkg at start (flush requests) */
	CG_NO_OWNER,     /* completed with no start seen: before attach, or evicted */
	CG_TABLE_FULL,   /* no room for a new {cgroup, device, direction}: in others */
	CG_OTHERS_FULL,  /* no room in others either: lost */
	NR_CG_COUNTS,
};

struct cg_key {
	__u64 cgid; /* 0 in others */
	__u32 dev;  /* the kernel's dev_t of the whole disk: major << 20 | minor */
	__u8 dir;
	__u8 pad[3];
};

struct cg_val {
	__u64 slots[NR_SLOTS];
	__u64 zero;   /* at or below 2^-20 s */
	__u64 sum_ns; /* time in flight of the requests counted: the occupancy */
	__u64 bytes;
};

struct owner {
	__u64 cgid; /* 0: no bio or no blkg */
	__u64 bytes;
	__u64 used; /* a completion took it: the struct's next request has not started */
};

const volatile __u8 latency_at_complete = 0; /* no block_io_done: measure at block_rq_complete */
const volatile __u8 issue_two_args = 0;      /* block_rq_issue(q, rq) before 5.11 */
/*
 * Attribute to the task that starts the request (its io/blkio cgroup) instead of
 * the bio's owner: what PID- and current-based tools do, for the tests to show
 * where the two differ (a kernel thread submitting on a cgroup's behalf).
 */
const volatile __u8 owner_is_task = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader: max cgroups */
	__type(key, struct cg_key);
	__type(value, struct cg_val);
} cghists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader: max devices */
	__type(key, struct cg_key);
	__type(value, struct cg_val);
} others SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u64);
	__type(value, struct owner);
} owners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_CG_COUNTS);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static const struct cg_val zero_val;

static __always_inline void count(__u32 what)
{
	__u64 *n = bpf_map_lookup_elem(&counts, &what);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline struct cg_val *entry(void *map, struct cg_key *key)
{
	struct cg_val *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	/* A racing insert from another CPU is fine: look up again. */
	bpf_map_update_elem(map, key, &zero_val, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* The owner of rq's first bio (0: none). */
static __always_inline __u64 bio_owner(struct request *rq)
{
	struct bio *bio = rq->bio;
	struct blkcg_gq *blkg = 0;

	if (bio && bpf_core_field_exists(bio->bi_blkg))
		blkg = bio->bi_blkg;
	return blkg ? blkg->blkcg->css.cgroup->kn->id : 0;
}

static __always_inline void start(struct request *rq)
{
	struct owner o = { .cgid = bio_owner(rq), .bytes = rq->__data_len }, *cur;
	__u64 key = (__u64)rq;

	if (owner_is_task) {
		struct task_struct *task = bpf_get_current_task_btf();

		o.cgid = task->cgroups->subsys[bpf_core_enum_value(enum cgroup_subsys_id, io_cgrp_id)]->cgroup->kn->id;
	}
	/*
	 * Request structs are preallocated per tag and reused, and entries are not
	 * deleted at completion: after warm-up the entry exists and is overwritten in
	 * place (a lookup), not replaced (an LRU update, 4 times the cost). Only this
	 * request's start writes it.
	 */
	cur = bpf_map_lookup_elem(&owners, &key);
	if (cur)
		*cur = o;
	else
		bpf_map_update_elem(&owners, &key, &o, BPF_ANY);
}

SEC("tp_btf/block_io_start")
int on_io_start(__u64 *ctx)
{
	start((struct request *)ctx[0]);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int on_rq_issue(__u64 *ctx)
{
	start(issue_two_args ? (struct request *)ctx[1] : (struct request *)ctx[0]);
	return 0;
}

static __always_inline void done(struct request *rq, __u64 now)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK;
	__u64 start_ns = rq->start_time_ns, ns, key = (__u64)rq;
	struct cg_key k = {};
	struct owner *o;
	struct cg_val *v = 0;
	__u64 cgid = 0, bytes = 0;
	__s32 slot;

	if (is_passthrough(op) || !accounted(op, rq->rq_flags))
		return;
	if (!start_ns) {
		count(CG_NO_START);
		return;
	}
	ns = now > start_ns ? now - start_ns : 0;
	k.dev = rq_dev(rq);
	k.dir = op_dir(op);
	/*
	 * Not deleted: a request struct is reused for the next request, whose start
	 * overwrites the entry; a delete per I/O would cost as much again.
	 */
	o = bpf_map_lookup_elem(&owners, &key);
	if (o && !o->used) {
		cgid = o->cgid;
		bytes = o->bytes;
		o->used = 1;
	} else if (o && !owner_is_task) {
		/*
		 * An earlier request's entry: this one completes without having started
		 * where the owner is read. Before 6.5 that is the data-less PREFLUSH write
		 * a flush sequence completes without issuing it (the flush request goes in
		 * its place). Its bio is still attached at block_rq_complete: the owner is
		 * read now. (On 6.5+ every request passes block_io_start.)
		 */
		cgid = bio_owner(rq);
		bytes = rq->__data_len;
	}
	if (cgid) {
		k.cgid = cgid;
		v = entry(&cghists, &k);
		if (!v)
			count(CG_TABLE_FULL);
		k.cgid = 0;
	} else if (o || op == REQ_OP_FLUSH) {
		count(CG_UNATTRIBUTED);
	} else {
		count(CG_NO_OWNER);
	}
	if (!v)
		v = entry(&others, &k);
	if (!v) {
		count(CG_OTHERS_FULL);
		return;
	}
	slot = slot_of(ns);
	if (slot < 0)
		__sync_fetch_and_add(&v->zero, 1);
	else if (slot < NR_SLOTS) /* always; the verifier wants the bound here */
		__sync_fetch_and_add(&v->slots[slot], 1);
	__sync_fetch_and_add(&v->sum_ns, ns);
	__sync_fetch_and_add(&v->bytes, bytes);
}

SEC("tp_btf/block_io_done")
int on_io_done(__u64 *ctx)
{
	done((struct request *)ctx[0], bpf_ktime_get_ns());
	return 0;
}

/* Every partial completion; the last one has nr_bytes >= __data_len. */
SEC("tp_btf/block_rq_complete")
int on_rq_complete(__u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	__u32 nr_bytes = (__u32)ctx[2];

	if (nr_bytes >= rq->__data_len)
		done(rq, bpf_ktime_get_ns());
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
