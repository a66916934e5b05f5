/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What biolat.bpf.c and cglat.bpf.c share: the histogram slots (slots.h) and how
 * a request's device and direction are read, so that the per-cgroup histograms
 * have the per-device histograms' buckets and grouping.
 * Include after kernel.h and bpf_helpers.h / bpf_core_read.h.
 */
#ifndef BIOLAT_HIST_H
#define BIOLAT_HIST_H

#include "slots.h"

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

/* Set by the loader. */
const volatile __u32 rqf_io_stat = 0;
const volatile __u32 rqf_flush_seq = 0;

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
 * Whether /proc/diskstats accounts the request (blk_account_io_done: IO_STAT and
 * not part of a flush sequence; the flush request itself is accounted in
 * flush_end_io).
 */
static __always_inline int accounted(__u32 op, __u32 flags)
{
	return op == REQ_OP_FLUSH || (flags & (rqf_io_stat | rqf_flush_seq)) == rqf_io_stat;
}

#endif
