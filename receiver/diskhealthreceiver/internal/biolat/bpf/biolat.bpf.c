// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Block request latency as exponential histograms (scale 3) per
 * {device, direction, kind}, and failed completions per {device, direction, status}.
 *
 * total:  now - rq->start_time_ns at the completion the kernel accounts in
 *         /proc/diskstats (tp_btf/block_io_done on 6.5+, the final
 *         tp_btf/block_rq_complete before), the per-request term of iostat's await.
 * device: now - the last tp_btf/block_rq_issue of the request (opt-in).
 *
 * The loader sets every "const volatile" below before load, from the kernel's
 * BTF; the verifier then drops the branches that do not apply.
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "hist.h"

enum kind { KIND_TOTAL, KIND_DEVICE };
enum drop {
	DROP_NO_START,  /* start_time_ns is 0: the queue has iostats off */
	DROP_HIST_FULL, /* no room for a new {dev, dir, kind} */
	DROP_ERR_FULL,  /* no room for a new {dev, dir, status} */
	DROP_NO_ISSUE,  /* device time: issued before attach, or evicted */
	NR_DROPS,
};

struct hist_key {
	__u32 dev; /* the kernel's dev_t of the whole disk: major << 20 | minor */
	__u8 dir;
	__u8 kind;
	__u16 pad;
};

struct hist_val {
	__u64 slots[NR_SLOTS];
	__u64 zero;   /* at or below 2^-20 s */
	__u64 sum_ns;
};

struct err_key {
	__u32 dev;
	__u8 dir;
	__u8 status; /* blk_status_t, or the positive errno where the tracepoint passes one */
	__u16 pad;
};

const volatile __u32 rqf_quiet = 0;
const volatile __u8 latency_at_complete = 0; /* no block_io_done: measure at block_rq_complete */
const volatile __u8 device_time = 0;
const volatile __u8 issue_two_args = 0; /* block_rq_issue(q, rq) before 5.11 */
const volatile __u8 status_is_errno = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct hist_key);
	__type(value, struct hist_val);
} hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, struct err_key);
	__type(value, __u64);
} errors SEC(".maps");

/* Issue time per in-flight request; LRU so that lost completions age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1); /* sized by the loader */
	__type(key, __u64);
	__type(value, __u64);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NR_DROPS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* The value a new histogram starts from; too large for the BPF stack. */
static const struct hist_val zero_hist;

static __always_inline void drop(__u32 reason)
{
	__u64 *n = bpf_map_lookup_elem(&drops, &reason);

	if (n)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void record(__u32 dev, __u8 dir, __u8 kind, __u64 ns)
{
	struct hist_key key = { .dev = dev, .dir = dir, .kind = kind };
	struct hist_val *v;
	__s32 slot;

	v = bpf_map_lookup_elem(&hists, &key);
	if (!v) {
		/* A racing insert from another CPU is fine: look up again. */
		bpf_map_update_elem(&hists, &key, &zero_hist, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&hists, &key);
		if (!v) {
			drop(DROP_HIST_FULL);
			return;
		}
	}
	slot = slot_of(ns);
	if (slot < 0)
		__sync_fetch_and_add(&v->zero, 1);
	else if (slot < NR_SLOTS) /* always; the verifier wants the bound here */
		__sync_fetch_and_add(&v->slots[slot], 1);
	__sync_fetch_and_add(&v->sum_ns, ns);
}

/* A request done: record it if the kernel accounts it in /proc/diskstats. */
static __always_inline void done(struct request *rq, __u64 now)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK;
	__u32 flags = rq->rq_flags;
	__u64 start = rq->start_time_ns;
	__u64 issued = 0;
	__u32 dev;
	__u8 dir;

	if (device_time) {
		__u64 key = (__u64)rq;
		__u64 *ts = bpf_map_lookup_elem(&inflight, &key);

		if (ts) {
			issued = *ts;
			bpf_map_delete_elem(&inflight, &key);
		}
	}
	if (is_passthrough(op))
		return;
	if (!accounted(op, flags))
		return;
	if (!start) {
		drop(DROP_NO_START);
		return;
	}
	dev = rq_dev(rq);
	dir = op_dir(op);
	record(dev, dir, KIND_TOTAL, now > start ? now - start : 0);
	if (!device_time)
		return;
	if (!issued) {
		drop(DROP_NO_ISSUE);
		return;
	}
	record(dev, dir, KIND_DEVICE, now > issued ? now - issued : 0);
}

SEC("tp_btf/block_io_done")
int on_io_done(__u64 *ctx)
{
	done((struct request *)ctx[0], bpf_ktime_get_ns());
	return 0;
}

static __always_inline void count_error(__u32 dev, __u8 dir, __u8 status)
{
	struct err_key key = { .dev = dev, .dir = dir, .status = status };
	__u64 zero = 0, *n;

	n = bpf_map_lookup_elem(&errors, &key);
	if (!n) {
		bpf_map_update_elem(&errors, &key, &zero, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&errors, &key);
	}
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		drop(DROP_ERR_FULL);
}

/*
 * Every partial completion; the last one has nr_bytes >= __data_len. Counts a
 * failed request once, when the kernel would also log it (blk_update_request:
 * not passthrough, not RQF_QUIET).
 */
SEC("tp_btf/block_rq_complete")
int on_rq_complete(__u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	__s32 error = (__s32)ctx[1];
	__u32 nr_bytes = (__u32)ctx[2];
	__u32 op;

	if (nr_bytes < rq->__data_len)
		return 0;
	op = rq->cmd_flags & REQ_OP_MASK;
	if (error && !is_passthrough(op) && !(rq->rq_flags & rqf_quiet))
		count_error(rq_dev(rq), op_dir(op), status_is_errno ? (__u8)-error : (__u8)error);
	if (latency_at_complete)
		done(rq, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/block_rq_issue")
int on_rq_issue(__u64 *ctx)
{
	struct request *rq = issue_two_args ? (struct request *)ctx[1] : (struct request *)ctx[0];
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();

	bpf_map_update_elem(&inflight, &key, &now, BPF_ANY);
	return 0;
}

/* Test hook: whether the error count skips requests of operation ctx->op, for the Go tests. */
struct op_probe {
	__u32 op;
};

SEC("syscall")
int probe_passthrough(struct op_probe *ctx)
{
	return is_passthrough(ctx->op);
}

/* Test hook: the slot of ctx->ns, plus one (0 = zero bucket), for the Go tests. */
struct slot_probe {
	__u64 ns;
};

SEC("syscall")
int probe_slot(struct slot_probe *ctx)
{
	return slot_of(ctx->ns) + 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
