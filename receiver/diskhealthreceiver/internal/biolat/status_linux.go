//go:build (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64) && linux

package biolat

import "golang.org/x/sys/unix"

// errnoTable names the errnos that block_rq_complete passed before it took a blk_status_t
// (blk_status_to_errno() of blk_errors[]), by the status they stand for. EBUSY is both
// dev_resource and zone_resource there; the first is far more common.
func errnoTable() map[uint8]string {
	return map[uint8]string{
		uint8(unix.EOPNOTSUPP): "notsupp", uint8(unix.ETIMEDOUT): "timeout", uint8(unix.ENOSPC): "nospc",
		uint8(unix.ENOLINK): "transport", uint8(unix.EREMOTEIO): "target", uint8(unix.EBADE): "resv_conflict",
		uint8(unix.ENODATA): "medium", uint8(unix.EILSEQ): "protection", uint8(unix.ENOMEM): "resource",
		uint8(unix.EIO): "ioerr", uint8(unix.EREMCHG): "dm_requeue", uint8(unix.EAGAIN): "again",
		uint8(unix.EBUSY): "dev_resource", uint8(unix.ETOOMANYREFS): "zone_open_resource",
		uint8(unix.EOVERFLOW): "zone_active_resource", uint8(unix.ENODEV): "offline",
		uint8(unix.ETIME): "duration_limit", uint8(unix.EINVAL): "inval",
	}
}
