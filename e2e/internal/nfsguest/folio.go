//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"os/exec"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"golang.org/x/sys/unix"

	"github.com/diskhealth/diskhealth/e2e/internal/guestrx"
	"github.com/diskhealth/diskhealth/e2e/internal/vmproto"
	"github.com/diskhealth/diskhealth/internal/testkit/quotakit"
)

// The large-folio part: the filelat probe's page-cache misses on a filesystem whose page cache holds
// large folios. On 6.1 that is XFS (it sets mapping_set_large_folios since 5.18; ext4 and NFS do
// not yet), whose readahead allocates folios of growing order (page_cache_ra_order: two orders more
// at each asynchronous readahead, up to the window's size). The probe counts a folio's pages from its
// order, which on 6.1 is folio->_folio_order: a probe reading it from _flags_1, as since 6.6, counts
// each folio as one page.
const (
	folioDir   = "/srv/folio" // a tmpfs of its own holding the XFS image
	folioPoint = "/mnt/xfs"
	folioImage = 320 << 20 // above mkfs.xfs's 300 MiB floor; sparse on tmpfs
	folioSize  = 64 << 20  // the file read
	folioChunk = 1 << 20   // read(2) size: large reads, so that readahead grows its window and its folios
	// folioInterval is the part's scrape interval: a pass must lie between two consecutive scrapes,
	// since the receiver caps an interval's misses at its pages (readahead across a scrape would move
	// misses into the next interval as hits). The cold pass took 0.44 s under TCG: 3 s leaves room for a
	// slower host and keeps the part's waits for scrapes short.
	folioInterval = 3 * time.Second
)

// largeFolios makes an XFS on a loop device, writes a folioSize file into it and remounts it (a fresh
// mount: none of the file's pages cached, and the written pages, which 6.1 caches as single pages, are
// gone), then reads the file twice with read(2) calls of folioChunk under a receiver running the filelat
// source alone: a cold pass and a warm one, each between two consecutive scrapes. Last, which folios
// hold the file's pages, from /proc/kpageflags.
func largeFolios(b *vmproto.NFSBundle, logf func(string, ...any)) error {
	began := time.Now()
	defer func() { b.Folio.Seconds = time.Since(began).Seconds() }()
	b.Folio.MountPoint, b.Folio.Size = folioPoint, folioSize
	// null_blk would add a disk; the others (loop, XFS and what they need) add none.
	if err := guestrx.LoadExtraModules("null_blk.ko"); err != nil {
		return err
	}
	if err := makeFolioFile(logf); err != nil {
		return err
	}
	ms, next, stop, err := startFilelat(b, folioInterval)
	if err != nil {
		return err
	}
	defer stop()
	// A fresh scrape: the cold pass starts right after it, a whole interval ahead.
	md, next, err := guestrx.WaitExport(ms, next, wait, "a filelat scrape", filelatScrape)
	if err != nil {
		return err
	}
	for _, name := range []string{"cold", "warm"} {
		p := vmproto.FolioPass{Name: name, Before: guestrx.MetricsJSON(md)}
		if p, md, next, err = folioPass(ms, next, p); err != nil {
			return fmt.Errorf("%s pass: %w", name, err)
		}
		b.Folio.Passes = append(b.Folio.Passes, p)
	}
	b.Folio.Orders, err = folioOrders(folioPoint + "/data")
	return err
}

// makeFolioFile makes the XFS at folioPoint with the file "data" of folioSize, and mounts it again.
func makeFolioFile(logf func(string, ...any)) error {
	for _, d := range []string{folioDir, folioPoint} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("tmpfs", folioDir, "tmpfs", 0, "size=400m"); err != nil {
		return fmt.Errorf("mount tmpfs %s: %w", folioDir, err)
	}
	img := folioDir + "/xfs.img"
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		return err
	}
	if err := os.Truncate(img, folioImage); err != nil {
		return err
	}
	loop, _, err := quotakit.AttachLoop(img) // attached until the guest powers off
	if err != nil {
		return err
	}
	// Debian's mkfs.xfs by path: busybox has none, but the PATH is busybox's first.
	if out, err := exec.Command("/usr/sbin/mkfs.xfs", "-q", "-f", loop).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.xfs %s: %w: %s", loop, err, out)
	}
	if err := unix.Mount(loop, folioPoint, "xfs", 0, ""); err != nil {
		return fmt.Errorf("mount -t xfs %s %s: %w", loop, folioPoint, err)
	}
	buf := make([]byte, folioChunk)
	for i := range buf {
		buf[i] = byte(i)
	}
	data := make([]byte, 0, folioSize)
	for len(data) < folioSize {
		data = append(data, buf...)
	}
	if err := writeSync(folioPoint+"/data", data); err != nil {
		return err
	}
	if err := unix.Unmount(folioPoint, 0); err != nil {
		return fmt.Errorf("umount %s: %w", folioPoint, err)
	}
	if err := unix.Mount(loop, folioPoint, "xfs", 0, ""); err != nil {
		return fmt.Errorf("mount -t xfs %s %s again: %w", loop, folioPoint, err)
	}
	logf("large folios: %d MiB file on the XFS at %s (%s), mounted afresh", folioSize>>20, folioPoint, loop)
	return nil
}

// folioPass reads the file once, right after the export p.Before (ms's export before index next), and
// takes the first filelat scrape after it as p.After: the pass must have ended before that scrape. It
// returns that export and the index after it.
func folioPass(ms *consumertest.MetricsSink, next int, p vmproto.FolioPass) (vmproto.FolioPass, pmetric.Metrics, int, error) {
	began := time.Now()
	f, err := os.Open(folioPoint + "/data")
	if err != nil {
		return p, pmetric.Metrics{}, next, err
	}
	defer func() { _ = f.Close() }() // read-only
	buf := make([]byte, folioChunk)
	for {
		n, err := f.Read(buf)
		p.Calls++
		p.Bytes += n
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return p, pmetric.Metrics{}, next, err
		}
	}
	ended := time.Now()
	p.Seconds = ended.Sub(began).Seconds()
	md, n, err := guestrx.WaitExport(ms, next, wait, "a filelat scrape after the reads", filelatScrape)
	if err != nil {
		return p, md, next, err
	}
	if latest(md) < ended.UnixNano() {
		return p, md, n, fmt.Errorf("the pass (%.2f s) did not end before the next scrape: a longer folioInterval", p.Seconds)
	}
	p.After = guestrx.MetricsJSON(md)
	return p, md, n, nil
}

// kpageflags' bits of a compound page (include/uapi/linux/kernel-page-flags.h): a large folio is its
// head page and its tail pages.
const (
	kpfCompoundHead = 15
	kpfCompoundTail = 16
)

// folioOrders maps path with its pages populated (all cached by now: populating inserts none, and it is
// no read(2) for the probe), takes each page's frame from /proc/self/pagemap and its
// flags from /proc/kpageflags, and counts the folios holding the file by order: a head page and the tail
// pages after it are one folio, any other page a folio of order 0.
func folioOrders(path string) (map[int]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	mem, err := unix.Mmap(int(f.Fd()), 0, folioSize, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	defer func() { _ = unix.Munmap(mem) }() // this process's mapping
	page := os.Getpagesize()
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil, err
	}
	defer func() { _ = pm.Close() }() // read-only
	kf, err := os.Open("/proc/kpageflags")
	if err != nil {
		return nil, err
	}
	defer func() { _ = kf.Close() }() // read-only
	n := folioSize / page
	entries := make([]byte, 8*n)
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	if _, err := pm.ReadAt(entries, int64(base/uint64(page)*8)); err != nil {
		return nil, fmt.Errorf("pagemap: %w", err)
	}
	orders := map[int]int{}
	run := 0 // pages of the folio being counted
	flush := func() {
		if run > 0 {
			orders[bits.Len(uint(run))-1]++
		}
		run = 0
	}
	var flags [8]byte
	for i := range n {
		e := binary.LittleEndian.Uint64(entries[8*i:])
		if e>>63 == 0 || e&(1<<55-1) == 0 {
			return nil, fmt.Errorf("page %d of %s: not present in the mapping, or no frame number (pagemap entry %#x)", i, path, e)
		}
		if _, err := kf.ReadAt(flags[:], int64(e&(1<<55-1))*8); err != nil {
			return nil, fmt.Errorf("kpageflags: %w", err)
		}
		fl := binary.LittleEndian.Uint64(flags[:])
		if fl&(1<<kpfCompoundTail) == 0 || run == 0 {
			flush()
		}
		run++
		if fl&(1<<kpfCompoundHead) == 0 && fl&(1<<kpfCompoundTail) == 0 {
			flush()
		}
	}
	flush()
	return orders, nil
}
