package cgroupio

import "fmt"

// formatIOStat prints st as a kernel io.stat line.
func formatIOStat(st DeviceStat) string {
	s := fmt.Sprintf("%d:%d rbytes=%d wbytes=%d rios=%d wios=%d", st.Major, st.Minor, st.ReadBytes, st.WriteBytes, st.ReadOps, st.WriteOps)
	if st.HasDiscard {
		s += fmt.Sprintf(" dbytes=%d dios=%d", st.DiscardBytes, st.DiscardOps)
	}
	return s + "\n"
}

// formatBlkio prints stats as the kernel's v1 bytes and operations files.
func formatBlkio(stats []DeviceStat) (bytesFile, opsFile string) {
	var totalB, totalO uint64
	for _, st := range stats {
		dev := fmt.Sprintf("%d:%d", st.Major, st.Minor)
		bytesFile += fmt.Sprintf("%s Read %d\n%s Write %d\n", dev, st.ReadBytes, dev, st.WriteBytes)
		opsFile += fmt.Sprintf("%s Read %d\n%s Write %d\n", dev, st.ReadOps, dev, st.WriteOps)
		if st.HasDiscard {
			bytesFile += fmt.Sprintf("%s Discard %d\n", dev, st.DiscardBytes)
			opsFile += fmt.Sprintf("%s Discard %d\n", dev, st.DiscardOps)
		}
		bytesFile += fmt.Sprintf("%s Total %d\n", dev, st.Bytes())
		opsFile += fmt.Sprintf("%s Total %d\n", dev, st.ReadOps+st.WriteOps+st.DiscardOps)
		totalB += st.Bytes()
		totalO += st.ReadOps + st.WriteOps + st.DiscardOps
	}
	return bytesFile + fmt.Sprintf("Total %d\n", totalB), opsFile + fmt.Sprintf("Total %d\n", totalO)
}
