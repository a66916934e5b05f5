package nvme

// WriteAmplification is the write amplification between two reads: the
// bytes the drive wrote to its media (OCP C0h physical media units
// written) per byte the host wrote (SMART data units written, 512 000
// bytes each). ok is false when the host wrote nothing in between or a
// counter went backwards (a reset or another drive).
func WriteAmplification(prevMedia, curMedia, prevHostUnits, curHostUnits Uint128) (waf float64, ok bool) {
	if curMedia.Cmp(prevMedia) < 0 || curHostUnits.Cmp(prevHostUnits) <= 0 {
		return 0, false
	}
	media := curMedia.Sub(prevMedia)
	host := curHostUnits.Sub(prevHostUnits).MulUint64(dataUnitBytes)
	return media.Float64() / host.Float64(), true
}
