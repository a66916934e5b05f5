// Package nfslog reads the kernel's NFS client lines about a server from /dev/kmsg records: the
// RPC layer's "nfs: server X not responding, still trying" (a hard mount, after a major timeout),
// "…, timed out" (a soft one) and "nfs: server X OK" (the first reply after them). It parses bytes;
// reading /dev/kmsg is the caller's.
package nfslog // import "github.com/diskhealth/diskhealth/receiver/diskhealthreceiver/internal/nfslog"

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what a line says of its server.
type Kind uint8

// Kinds.
const (
	// NotResponding: "still trying" (hard mount) or "timed out" (soft mount): a request ran out of
	// its retransmissions.
	NotResponding Kind = iota + 1
	// OK: a request that had run out of them got its reply.
	OK
)

// Line is one NFS server line of the kernel log.
type Line struct {
	Kind Kind
	// Server is the server as the kernel names it: the host name or address the mount was made with
	// (the part of the mount source before ":/").
	Server string
	// Text is the message as the kernel printed it.
	Text string
	// Seq is the record's sequence number, Usec its time since boot (µs, the kernel's clock).
	Seq, Usec uint64
}

// maxServer bounds a server name: the kernel's come from a mount source's host part, a DNS name
// (at most 253 bytes) or an address.
const maxServer = 255

var (
	prefix       = []byte("nfs: server ")
	stillTrying  = []byte(" not responding, still trying")
	timedOut     = []byte(" not responding, timed out")
	okSuffix     = []byte(" OK")
	errNoHeader  = errors.New("no ';' after the record's header")
	errShortHead = errors.New("the record's header has fewer than 4 fields")
)

// Parse calls fn with each NFS server line among the /dev/kmsg records in data, in order. A read of
// /dev/kmsg returns one record; data may hold several (a record is a line "PRIO,SEQ,USEC,FLAGS[,…];
// MESSAGE" and its continuation lines, which begin with a space). Only the kernel's own records
// count (facility 0): a process that writes to /dev/kmsg cannot pass for the NFS client. It returns
// how many records were malformed and the first one's error.
func Parse(data []byte, fn func(Line)) (bad int, err error) {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 || line[0] == ' ' {
			continue // a continuation line (the record's dictionary), or nothing
		}
		l, ok, perr := parseRecord(line)
		if perr != nil {
			if bad == 0 {
				err = perr
			}
			bad++
			continue
		}
		if ok {
			fn(l)
		}
	}
	return bad, err
}

// parseRecord reads one record's first line; ok is false for a record that is not an NFS server line.
func parseRecord(rec []byte) (Line, bool, error) {
	head, msg, found := bytes.Cut(rec, []byte{';'})
	if !found {
		return Line{}, false, fmt.Errorf("%w: %.64q", errNoHeader, rec)
	}
	f := bytes.Split(head, []byte{','})
	if len(f) < 4 {
		return Line{}, false, fmt.Errorf("%w: %.64q", errShortHead, head)
	}
	prio, err := strconv.ParseUint(string(f[0]), 10, 32)
	if err != nil {
		return Line{}, false, fmt.Errorf("the record's priority %.32q: %w", f[0], err)
	}
	seq, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return Line{}, false, fmt.Errorf("the record's sequence number %.32q: %w", f[1], err)
	}
	usec, err := strconv.ParseUint(string(f[2]), 10, 64)
	if err != nil {
		return Line{}, false, fmt.Errorf("the record's time %.32q: %w", f[2], err)
	}
	if prio>>3 != 0 || !bytes.HasPrefix(msg, prefix) {
		return Line{}, false, nil
	}
	rest := msg[len(prefix):]
	l := Line{Seq: seq, Usec: usec}
	var server []byte
	switch {
	case bytes.HasSuffix(rest, stillTrying):
		l.Kind, server = NotResponding, rest[:len(rest)-len(stillTrying)]
	case bytes.HasSuffix(rest, timedOut):
		l.Kind, server = NotResponding, rest[:len(rest)-len(timedOut)]
	case bytes.HasSuffix(rest, okSuffix):
		l.Kind, server = OK, rest[:len(rest)-len(okSuffix)]
	default:
		return Line{}, false, nil
	}
	if len(server) == 0 || len(server) > maxServer || !printable(server) {
		return Line{}, false, fmt.Errorf("the NFS line's server %.64q", server)
	}
	l.Server, l.Text = string(server), string(msg)
	return l, true, nil
}

// printable: the kernel escapes other bytes as \xNN in /dev/kmsg; a server name has no space.
func printable(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// Server is the server part of an NFS mount source as the kernel's lines name it: "host:/export"
// gives host, "[fe80::1]:/export" gives fe80::1 (mount.nfs passes the address without brackets).
func Server(source string) string {
	if len(source) > 0 && source[0] == '[' {
		if i := strings.IndexByte(source, ']'); i > 0 {
			return source[1:i]
		}
	}
	if i := strings.IndexByte(source, ':'); i >= 0 {
		return source[:i]
	}
	return source
}
