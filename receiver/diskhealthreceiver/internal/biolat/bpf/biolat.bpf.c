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

#define NR_SLOTS 240   /* bucket indexes [-160, 80) at scale 3: 2^-20 s .. 2^10 s */
#define SLOT_BIAS 160  /* slot = index + SLOT_BIAS */
#define SUBBUCKETS 8   /* 2^scale */

#define REQ_OP_MASK 0xff
#define REQ_OP_WRITE 1
#define REQ_OP_FLUSH 2
#define REQ_OP_DISCARD 3
/* Pass-through: SG_IO and the other SCSI ioctls (REQ_OP_SCSI_IN/OUT up to 5.10, REQ_OP_DRV_IN/OUT
 * since 5.11), NVMe admin and I/O passthrough, ATA pass-through from libata (DRV_IN/OUT). 32 and 33
 * have meant nothing else since. */
#define REQ_OP_SCSI_IN 32
#define REQ_OP_SCSI_OUT 33
#define REQ_OP_DRV_IN 34
#define REQ_OP_DRV_OUT 35

enum dir { DIR_READ, DIR_WRITE, DIR_DISCARD, DIR_FLUSH };
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

/* Set by the loader (see thresholds.go for the math). */
const volatile __u64 thresholds[SUBBUCKETS] = {};
const volatile __s32 index_base = 0;
const volatile __u32 rqf_io_stat = 0;
const volatile __u32 rqf_flush_seq = 0;
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

/* Index of the highest set bit of v != 0. */
static __always_inline __u32 msb(__u64 v)
{
	__u32 e = 0;

	if (v >> 32) { v >>= 32; e += 32; }
	if (v >> 16) { v >>= 16; e += 16; }
	if (v >> 8) { v >>= 8; e += 8; }
	if (v >> 4) { v >>= 4; e += 4; }
	if (v >> 2) { v >>= 2; e += 2; }
	if (v >> 1) { e += 1; }
	return e;
}

/*
 * Slot of ns in hist_val.slots, or -1 for the zero bucket. With ns = 2^e * m,
 * m in [1, 2), the scale-3 bucket index of ns/1e9 seconds is
 * 8e + index_base + #{k : m > 2^((k + a)/8)}; thresholds[k] holds those
 * bounds as 63-bit fixed point, so the compares are exact.
 */
static __always_inline __s32 slot_of(__u64 ns)
{
	__u32 e;
	__u64 mant;
	__s32 i;

	if (!ns)
		return -1;
	e = msb(ns);
	mant = ns << (63 - e);
	i = (__s32)(e * SUBBUCKETS) + index_base;
#pragma unroll
	for (int k = 0; k < SUBBUCKETS; k++)
		i += mant > thresholds[k];
	i += SLOT_BIAS;
	if (i < 0)
		return -1;
	if (i >= NR_SLOTS)
		return NR_SLOTS - 1;
	return i;
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

/* The whole disk's dev_t, as /proc/diskstats names it. */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk;

	if (bpf_core_field_exists(rq->rq_disk))
		disk = rq->rq_disk;
	else
		disk = rq->q->disk;
	if (!disk)
		return 0;
	return ((__u32)disk->major << 20) | (__u32)disk->first_minor;
}

/* op_stat_group() plus flush, as /proc/diskstats groups operations. */
static __always_inline __u8 op_dir(__u32 op)
{
	if (op == REQ_OP_FLUSH)
		return DIR_FLUSH;
	if (op == REQ_OP_DISCARD)
		return DIR_DISCARD;
	return (op & REQ_OP_WRITE) ? DIR_WRITE : DIR_READ;
}

/*
 * A pass-through command's status is the device's answer to a tool, not an I/O error: an ATA command
 * sent with CK_COND (SMART RETURN STATUS, CHECK POWER MODE) completes with CHECK CONDITION so that its
 * registers come back, which the block layer sees as BLK_STS_IOERR.
 */
static __always_inline int is_passthrough(__u32 op)
{
	return op >= REQ_OP_SCSI_IN && op <= REQ_OP_DRV_OUT;
}

/*
 * A request done: record it if the kernel accounts it in /proc/diskstats
 * (blk_account_io_done: IO_STAT and not part of a flush sequence; the flush
 * request itself is accounted in flush_end_io).
 */
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
	if (op != REQ_OP_FLUSH && (flags & (rqf_io_stat | rqf_flush_seq)) != rqf_io_stat)
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
