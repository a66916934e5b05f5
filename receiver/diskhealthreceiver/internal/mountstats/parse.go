// Package mountstats parses the NFS client's per-mount statistics in /proc/<pid>/mountstats and
// computes what nfsiostat computes from two readings: operations, bytes, and the mean round-trip,
// execute and queue time per operation over an interval, summed over operation classes.
//
// The parser is its own rather than prometheus/procfs's: procfs only parses a file it opens itself
// (not through internal/bounded), fails the whole file on one bad mount, and keeps the kernel's octal
// escapes in mount points. Here a bad block costs only its mount.
package mountstats // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/mountstats"

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/fsusage"
	"github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/parseerr"
)

// Mount is one NFS mount's statistics block.
type Mount struct {
	// Device ("server:/export"), MountPoint and FSType ("nfs", "nfs4") from the block's header,
	// unescaped. MountPoint is as the reading process's mount namespace shows it.
	Device, MountPoint, FSType string
	// Age is the seconds since the mount was made (the "age:" line).
	Age uint64
	// Version is the NFS program's RPC version the mount speaks (3, 4), from the "RPC iostats version:
	// … p/v: 100003/<version> (nfs)" line; 0 where the line is missing or does not say.
	Version uint32
	// Bytes is the "bytes:" line.
	Bytes Bytes
	// Transport sums the "xprt:" lines (one per connection with nconnect); Transports counts them.
	Transport  Transport
	Transports int
	// Ops are the per-operation lines, in the kernel's order.
	Ops []Op
}

// Bytes is the "bytes:" line: what applications read and wrote through the page cache and with
// O_DIRECT, and what went over the wire.
type Bytes struct {
	NormalRead, NormalWrite, DirectRead, DirectWrite, ServerRead, ServerWrite, ReadPages, WritePages uint64
}

// Transport is the RPC transport counters of an "xprt:" line, or their sum over several.
type Transport struct {
	// Connects is the number of connections made (0 for udp).
	Connects uint64
	// Sends and Receives count RPC requests sent (retransmissions included) and replies received.
	Sends, Receives uint64
	// BadXIDs counts replies matching no request.
	BadXIDs uint64
	// Requests sums, over every send, the requests in flight then; Backlog sums the backlog queue's
	// length. Divided by Sends they are nfsiostat's average in-flight requests and backlog.
	Requests, Backlog uint64
	// MaxSlots is the most request slots ever in use (statvers 1.1; the largest over the transports).
	MaxSlots uint64
	// Sending and Pending sum the sending and pending queues' lengths over every send (statvers 1.1).
	Sending, Pending uint64
}

// Op is one per-operation line.
type Op struct {
	Name string
	// Ops counts completed operations; Transmissions their RPC sends (Transmissions - Ops are
	// retransmissions); MajorTimeouts the major timeouts.
	Ops, Transmissions, MajorTimeouts uint64
	// BytesSent and BytesReceived include RPC headers.
	BytesSent, BytesReceived uint64
	// QueueMS, RTTMS and ExecuteMS are cumulative milliseconds: waiting to be sent, from send to
	// reply, and from start to end.
	QueueMS, RTTMS, ExecuteMS uint64
	// Errors counts operations that ended with an error (kernels from 5.x print it; 0 before).
	Errors uint64
}

// File is the name parse errors carry.
const File = "mountstats"

// Limits on what one mount's block may hold: a garbage or hostile file cannot make the parser keep
// more. The kernel has fewer than 80 NFSv4 operations and at most 16 nconnect transports.
const (
	MaxOps        = 128
	MaxTransports = 64
)

var (
	errHeader     = errors.New(`not "device <dev> mounted on <dir> with fstype <type> [statvers=<v>]"`)
	errFields     = errors.New("wrong number of fields")
	errNumber     = errors.New("not a decimal number")
	errProtocol   = errors.New("unknown transport protocol")
	errNoOps      = errors.New(`truncated: no "per-op statistics"`)
	errTooMany    = errors.New("too many lines")
	errDupSection = errors.New("repeated line")
	errOpName     = errors.New("not an operation name (A-Z, 0-9 and _, at most 32)") // no "; ": the reporter splits problems there
)

// Parse reads mountstats bytes and returns the NFS mounts (blocks with statvers=). A block with a bad
// line is left out and its error, naming the mount point, joins the returned *parseerr.Lines; blocks
// of other filesystems, which carry no statistics, are skipped.
func Parse(data []byte) ([]Mount, error) {
	var (
		mounts []Mount
		bad    *parseerr.Lines
		cur    *Mount
		curBad bool
		inOps  bool
		seen   uint8
		lineNo int
	)
	finish := func() {
		if cur != nil && !curBad {
			if !inOps {
				bad = bad.Add(&parseerr.Line{File: File, Line: lineNo, Device: cur.MountPoint, Err: errNoOps})
			} else {
				mounts = append(mounts, *cur)
			}
		}
		cur, curBad, inOps, seen = nil, false, false, 0
	}
	fail := func(field string, value []byte, err error) {
		if !curBad {
			bad = bad.Add(&parseerr.Line{File: File, Line: lineNo, Device: cur.MountPoint, Field: field, Value: parseerr.Clip(value), Err: err})
		}
		curBad = true
	}
	var fields [][]byte
	for raw := range bytes.Lines(data) {
		lineNo++
		line := bytes.TrimSuffix(raw, []byte("\n"))
		fields = appendFields(fields[:0], line)
		if len(fields) == 0 {
			finish()
			continue
		}
		if string(fields[0]) == "device" {
			finish()
			m, nfs, err := parseHeader(fields)
			if err != nil {
				bad = bad.Add(&parseerr.Line{File: File, Line: lineNo, Value: parseerr.Clip(line), Err: err})
				continue
			}
			if nfs {
				cur = &m
			}
			continue
		}
		if cur == nil || curBad {
			continue
		}
		if inOps {
			if len(cur.Ops) >= MaxOps {
				fail("per-op", line, errTooMany)
				continue
			}
			op, field, err := parseOp(fields)
			if err == nil && hasOp(cur.Ops, op.Name) {
				field, err = op.Name, errDupSection
			}
			if err != nil {
				fail(field, line, err)
				continue
			}
			cur.Ops = append(cur.Ops, op)
			continue
		}
		switch string(fields[0]) {
		case "age:":
			if err := once(&seen, 1); err != nil {
				fail("age", line, err)
				continue
			}
			if len(fields) != 2 {
				fail("age", line, errFields)
				continue
			}
			v, ok := atou(fields[1])
			if !ok {
				fail("age", fields[1], errNumber)
				continue
			}
			cur.Age = v
		case "bytes:":
			if err := once(&seen, 2); err != nil {
				fail("bytes", line, err)
				continue
			}
			var v [8]uint64
			if field, err := numbers(fields[1:], v[:], "bytes"); err != nil {
				fail(field, line, err)
				continue
			}
			cur.Bytes = Bytes{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]}
		case "xprt:":
			if cur.Transports >= MaxTransports {
				fail("xprt", line, errTooMany)
				continue
			}
			t, field, err := parseTransport(fields[1:])
			if err != nil {
				fail(field, line, err)
				continue
			}
			cur.Transport.add(t)
			cur.Transports++
		case "RPC":
			cur.Version = programVersion(fields)
		case "per-op":
			inOps = true
		}
	}
	finish()
	return mounts, bad.Err()
}

// programVersion reads the version of "RPC iostats version: 1.1  p/v: 100003/4 (nfs)": the field after
// "p/v:" is program/version. 0 when the line has none; the version only labels the per-procedure
// detail, so a line without it is no error.
func programVersion(fields [][]byte) uint32 {
	for i := 0; i+1 < len(fields); i++ {
		if string(fields[i]) != "p/v:" {
			continue
		}
		_, v, ok := bytes.Cut(fields[i+1], []byte("/"))
		if !ok {
			return 0
		}
		n, ok := atou(v)
		if !ok || n > 1<<31 {
			return 0
		}
		return uint32(n)
	}
	return 0
}

// hasOp reports whether ops has an operation named name: the kernel lists each once, so a second
// is a garbled block.
func hasOp(ops []Op, name string) bool {
	for i := range ops {
		if ops[i].Name == name {
			return true
		}
	}
	return false
}

// once marks the section bit and fails if it was already set: a block with two "bytes:" lines is
// two blocks run together by a truncated read, not one mount.
func once(seen *uint8, bit uint8) error {
	if *seen&bit != 0 {
		return errDupSection
	}
	*seen |= bit
	return nil
}

// parseHeader parses "device <dev> mounted on <dir> with fstype <type> [statvers=<v>]"; nfs is true
// when the block carries statistics.
func parseHeader(f [][]byte) (m Mount, nfs bool, err error) {
	if len(f) < 8 || string(f[2]) != "mounted" || string(f[3]) != "on" || string(f[5]) != "with" || string(f[6]) != "fstype" {
		return Mount{}, false, errHeader
	}
	if len(f) == 8 {
		return Mount{}, false, nil
	}
	if len(f) != 9 || !bytes.HasPrefix(f[8], []byte("statvers=")) {
		return Mount{}, false, errHeader
	}
	return Mount{Device: fsusage.Unescape(f[1]), MountPoint: fsusage.Unescape(f[4]), FSType: string(f[7])}, true, nil
}

// parseOp parses "<NAME>: ops trans timeouts sent recv queue rtt execute [errors]".
func parseOp(f [][]byte) (Op, string, error) {
	if len(f) != 9 && len(f) != 10 {
		return Op{}, "per-op", errFields
	}
	name, ok := bytes.CutSuffix(f[0], []byte(":"))
	if !ok || !opName(name) {
		return Op{}, "per-op", errOpName
	}
	var v [9]uint64
	if field, err := numbers(f[1:], v[:len(f)-1], string(name)); err != nil {
		return Op{}, field, err
	}
	return Op{
		Name: string(name), Ops: v[0], Transmissions: v[1], MajorTimeouts: v[2], BytesSent: v[3],
		BytesReceived: v[4], QueueMS: v[5], RTTMS: v[6], ExecuteMS: v[7], Errors: v[8],
	}, "", nil
}

// Transport layouts after the protocol name (net/sunrpc xprtsock.c and xprtrdma): statvers 1.0
// prints the first fields, 1.1 adds max slots, sending and pending. rdma prints the tcp 1.0 fields
// and then its own; local (AF_LOCAL) is tcp without the port.
const (
	xPort = iota
	xBind
	xConnects
	xConnectTime
	xIdle
	xSends
	xReceives
	xBadXIDs
	xRequests
	xBacklog
	xMaxSlots
	xSending
	xPending
	xFields
)

// udpIndex maps a udp line's fields (no connect count, connect time or idle time) to tcp's.
var udpIndex = []int{xPort, xBind, xSends, xReceives, xBadXIDs, xRequests, xBacklog, xMaxSlots, xSending, xPending}

func parseTransport(f [][]byte) (Transport, string, error) {
	if len(f) == 0 {
		return Transport{}, "xprt", errFields
	}
	var v [xFields]uint64
	rest := f[1:]
	var index []int
	switch string(f[0]) {
	case "tcp":
		if len(rest) != 10 && len(rest) != 13 {
			return Transport{}, "xprt", errFields
		}
	case "udp":
		if len(rest) != 7 && len(rest) != 10 {
			return Transport{}, "xprt", errFields
		}
		index = udpIndex[:len(rest)]
	case "rdma":
		if len(rest) < 10 {
			return Transport{}, "xprt", errFields
		}
		rest = rest[:10]
	case "local":
		if len(rest) != 9 && len(rest) != 12 {
			return Transport{}, "xprt", errFields
		}
		index = make([]int, len(rest))
		for i := range index {
			index[i] = i + 1
		}
	default:
		return Transport{}, "xprt", errProtocol
	}
	for i, b := range rest {
		n, ok := atou(b)
		if !ok {
			return Transport{}, "xprt " + strconv.Itoa(i+1), errNumber
		}
		j := i
		if index != nil {
			j = index[i]
		}
		v[j] = n
	}
	return Transport{
		Connects: v[xConnects], Sends: v[xSends], Receives: v[xReceives], BadXIDs: v[xBadXIDs],
		Requests: v[xRequests], Backlog: v[xBacklog], MaxSlots: v[xMaxSlots], Sending: v[xSending], Pending: v[xPending],
	}, "", nil
}

// add sums another transport's counters into t (nconnect): counters add (saturating), MaxSlots is
// the largest.
func (t *Transport) add(o Transport) {
	t.Connects = sat(t.Connects, o.Connects)
	t.Sends = sat(t.Sends, o.Sends)
	t.Receives = sat(t.Receives, o.Receives)
	t.BadXIDs = sat(t.BadXIDs, o.BadXIDs)
	t.Requests = sat(t.Requests, o.Requests)
	t.Backlog = sat(t.Backlog, o.Backlog)
	t.MaxSlots = max(t.MaxSlots, o.MaxSlots)
	t.Sending = sat(t.Sending, o.Sending)
	t.Pending = sat(t.Pending, o.Pending)
}

// numbers parses exactly len(dst) decimal fields into dst.
func numbers(f [][]byte, dst []uint64, field string) (string, error) {
	if len(f) != len(dst) {
		return field, errFields
	}
	for i, b := range f {
		n, ok := atou(b)
		if !ok {
			return field + " " + strconv.Itoa(i+1), errNumber
		}
		dst[i] = n
	}
	return "", nil
}

// opName reports whether b is an operation name as the kernel writes them: upper-case letters,
// digits and underscores, at most 32 bytes. Names are attribute values; nothing else passes.
func opName(b []byte) bool {
	if len(b) == 0 || len(b) > 32 {
		return false
	}
	for _, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// atou parses an unsigned decimal (no sign, no spaces); overflow is not a number.
func atou(b []byte) (uint64, bool) {
	if len(b) == 0 || b[0] < '0' || b[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	return n, err == nil
}

// appendFields splits a line on spaces and tabs.
func appendFields(dst [][]byte, line []byte) [][]byte {
	for {
		for len(line) > 0 && (line[0] == ' ' || line[0] == '\t' || line[0] == '\r') {
			line = line[1:]
		}
		if len(line) == 0 {
			return dst
		}
		i := bytes.IndexAny(line, " \t\r")
		if i < 0 {
			return append(dst, line)
		}
		dst = append(dst, line[:i])
		line = line[i:]
	}
}
