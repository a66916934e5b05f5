package biolat

// Add and Sub add and subtract histograms of the same scale bucket by bucket (to fold series, or
// take an interval from two cumulative values); Sub's b is an earlier value of h (or a part of it),
// so no count goes below zero. Empty buckets at the ends are trimmed, as the probe's histograms are.
func (h Histogram) Add(b Histogram) Histogram { return combine(h, b, 1) }

// Sub subtracts b, an earlier value of h or a part of it (see Add).
func (h Histogram) Sub(b Histogram) Histogram { return combine(h, b, -1) }

func combine(a, b Histogram, sign int) Histogram {
	out := Histogram{ZeroCount: a.ZeroCount, Sum: a.Sum}
	if sign > 0 {
		out.ZeroCount += b.ZeroCount
		out.Sum += b.Sum
	} else {
		out.ZeroCount -= b.ZeroCount
		out.Sum -= b.Sum
	}
	lo, hi := int32(0), int32(0)
	for i, h := range []Histogram{a, b} {
		if len(h.Buckets) == 0 {
			continue
		}
		if i == 0 || len(a.Buckets) == 0 {
			lo, hi = h.Offset, h.Offset+int32(len(h.Buckets))
			continue
		}
		lo, hi = min(lo, h.Offset), max(hi, h.Offset+int32(len(h.Buckets)))
	}
	buckets := make([]uint64, hi-lo)
	for j, n := range a.Buckets {
		buckets[a.Offset+int32(j)-lo] = n
	}
	for j, n := range b.Buckets {
		if sign > 0 {
			buckets[b.Offset+int32(j)-lo] += n
		} else {
			buckets[b.Offset+int32(j)-lo] -= n
		}
	}
	first, last := -1, -1
	out.Count = out.ZeroCount
	for j, n := range buckets {
		if n != 0 {
			if first < 0 {
				first = j
			}
			last = j
			out.Count += n
		}
	}
	if first >= 0 {
		out.Offset = lo + int32(first)
		out.Buckets = buckets[first : last+1]
	}
	return out
}
