/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The histogram slots and their exact scale-3 index, shared by every latency
 * program of the receiver (biolat's per-device and per-cgroup programs, filelat's
 * per-mount program), so that all their histograms have the same buckets and the
 * Go side decodes them with one function (biolat.DecodeHist).
 */
#ifndef BIOLAT_SLOTS_H
#define BIOLAT_SLOTS_H

#define NR_SLOTS 240   /* bucket indexes [-160, 80) at scale 3: 2^-20 s .. 2^10 s */
#define SLOT_BIAS 160  /* slot = index + SLOT_BIAS */
#define SUBBUCKETS 8   /* 2^scale */

/* Set by the loader (see thresholds in buckets.go for the math). */
const volatile __u64 thresholds[SUBBUCKETS] = {};
const volatile __s32 index_base = 0;

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

#endif
