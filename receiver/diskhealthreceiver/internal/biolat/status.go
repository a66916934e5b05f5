package biolat

import (
	"fmt"
	"strconv"
	"strings"
)

// Names of blk_status_t codes, the status a request completes with (include/linux/blk_types.h;
// block/blk-core.c blk_errors[] has the kernel's descriptions). The numbers moved between kernels:
//
//	code  6.1 (and 5.x)          6.5–6.9               6.10                  6.11–6.18
//	1     notsupp                notsupp               notsupp               notsupp
//	2     timeout                timeout               timeout               timeout
//	3     nospc                  nospc                 nospc                 nospc
//	4     transport              transport             transport             transport
//	5     target                 target                target                target
//	6     NEXUS                  RESV_CONFLICT         RESV_CONFLICT         RESV_CONFLICT
//	7     medium                 medium                medium                medium
//	8     protection             protection            protection            protection
//	9     resource               resource              resource              resource
//	10    ioerr                  ioerr                 ioerr                 ioerr
//	11    dm_requeue             dm_requeue            dm_requeue            dm_requeue
//	12    again                  again                 again                 again
//	13    dev_resource           dev_resource          dev_resource          dev_resource
//	14    zone_resource          zone_resource         zone_open_resource    zone_open_resource
//	15    zone_open_resource     zone_open_resource    zone_active_resource  zone_active_resource
//	16    zone_active_resource   zone_active_resource  offline               offline
//	17    offline                offline               duration_limit        duration_limit
//	18    -                      duration_limit        -                     (inval, see below)
//	19    -                      -                     -                     inval
//
// BLK_STS_NEXUS was renamed BLK_STS_RESV_CONFLICT in 6.5 with the same meaning (a SCSI/NVMe
// reservation conflict); both are "resv_conflict" here so that one name holds across a fleet.
// 6.10 removed BLK_STS_ZONE_RESOURCE and renumbered what followed; 6.11 added BLK_STS_INVAL as 19,
// leaving 18 unused, and a later fix moves it to 18, so 18 is read as inval from 6.11 on.
// A code outside the table is "status_<n>". statusTable returns the table for kernel kv.
func statusTable(kv kernelVersion) map[uint8]string {
	t := map[uint8]string{
		1: "notsupp", 2: "timeout", 3: "nospc", 4: "transport", 5: "target", 6: "resv_conflict",
		7: "medium", 8: "protection", 9: "resource", 10: "ioerr", 11: "dm_requeue", 12: "again",
		13: "dev_resource", 14: "zone_resource", 15: "zone_open_resource",
		16: "zone_active_resource", 17: "offline",
	}
	if kv.atLeast(kernelVersion{6, 5}) {
		t[18] = "duration_limit"
	}
	if kv.atLeast(kernelVersion{6, 10}) {
		t[14], t[15], t[16], t[17] = "zone_open_resource", "zone_active_resource", "offline", "duration_limit"
		delete(t, 18)
	}
	if kv.atLeast(kernelVersion{6, 11}) {
		t[18], t[19] = "inval", "inval"
	}
	return t
}

// statusName names a code from statusTable.
func statusName(t map[uint8]string, code uint8) string {
	if name, ok := t[code]; ok {
		return name
	}
	return "status_" + strconv.Itoa(int(code))
}

// kernelVersion is the major.minor of a kernel release.
type kernelVersion struct{ major, minor int }

func (v kernelVersion) atLeast(o kernelVersion) bool {
	return v.major > o.major || v.major == o.major && v.minor >= o.minor
}

func (v kernelVersion) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

// parseKernelRelease reads the major.minor of a release such as "6.18.44-fc-v669" or "5.10.0-28-amd64".
func parseKernelRelease(s string) (kernelVersion, error) {
	major, rest, _ := strings.Cut(s, ".")
	minor := rest
	if end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); end >= 0 {
		minor = rest[:end]
	}
	ma, errMajor := number(major)
	mi, errMinor := number(minor)
	if errMajor != nil || errMinor != nil {
		return kernelVersion{}, fmt.Errorf("kernel release %q: want major.minor", s)
	}
	return kernelVersion{ma, mi}, nil
}

// number reads a short run of decimal digits.
func number(s string) (int, error) {
	if s == "" || len(s) > 6 || strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, strconv.ErrSyntax
	}
	return strconv.Atoi(s)
}
